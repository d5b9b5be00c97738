// bench/command_line's flag types: a whole number in its range, and the
// governor list, with errors that say what is accepted.

#include "bench/command_line.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "idle/governor_registry.h"

namespace haltpool::bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(IntIn, AcceptsTheRangeInclusive) {
  IntIn<10, 20> v;
  std::string error;
  ASSERT_TRUE(AbslParseFlag("10", &v, &error)) << error;
  EXPECT_EQ(v.value, 10);
  ASSERT_TRUE(AbslParseFlag("20", &v, &error)) << error;
  EXPECT_EQ(v.value, 20);
  EXPECT_EQ(AbslUnparseFlag(v), "20");
}

TEST(IntIn, OutOfRangeOrNotANumberSaysWhatIsAccepted) {
  for (const char* text : {"9", "21", "x", "", "1.5"}) {
    IntIn<10, 20> v(15);
    std::string error;
    EXPECT_FALSE(AbslParseFlag(text, &v, &error)) << text;
    EXPECT_EQ(error, "accepted: a whole number from 10 to 20") << text;
    EXPECT_EQ(v.value, 15) << text;
  }
}

TEST(GovernorList, EmptyIsEveryGovernor) {
  GovernorList list;
  std::string error;
  ASSERT_TRUE(AbslParseFlag("", &list, &error));
  const std::vector<std::string> all =
      absl::StrSplit(idle::GovernorNames(), '|');
  EXPECT_EQ(GovernorsOrAll(list), all);
}

TEST(GovernorList, NamesInOrder) {
  GovernorList list;
  std::string error;
  ASSERT_TRUE(AbslParseFlag("block,poll", &list, &error)) << error;
  EXPECT_THAT(GovernorsOrAll(list), ElementsAre("block", "poll"));
  EXPECT_EQ(AbslUnparseFlag(list), "block,poll");
}

TEST(GovernorList, UnknownNameListsTheRegistry) {
  GovernorList list;
  std::string error;
  EXPECT_FALSE(AbslParseFlag("block,menu", &list, &error));
  EXPECT_THAT(error, HasSubstr("'menu' is not a governor; accepted: "));
  EXPECT_THAT(error, HasSubstr(std::string(idle::GovernorNames())));
}

}  // namespace
}  // namespace haltpool::bench
