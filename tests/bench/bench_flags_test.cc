// bench/bench_flags: defaults, values, the governor list, and errors that
// name the flag and what is accepted.

#include "bench/bench_flags.h"

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

BenchFlags Defaults() {
  BenchFlags d;
  d.ints = {{"loops", {100, 1, 1000, "loops"}},
            {"workers", {0, 0, 64, "workers"}}};
  d.strings = {{"csv", {"", "a file path"}}};
  return d;
}

absl::StatusOr<BenchFlags> Parse(std::vector<const char*> argv) {
  return ParseBenchFlags(Defaults(), static_cast<int>(argv.size()),
                         argv.data());
}

TEST(BenchFlags, DefaultsAndEveryGovernor) {
  absl::StatusOr<BenchFlags> f = Parse({});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->ints.at("loops").value, 100);
  EXPECT_FALSE(f->help);
  const std::vector<std::string> all =
      absl::StrSplit(idle::GovernorNames(), '|');
  EXPECT_EQ(f->governors, all);
}

TEST(BenchFlags, ValuesAndGovernorList) {
  absl::StatusOr<BenchFlags> f =
      Parse({"--loops=7", "--workers=0", "--governors=block,poll"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->ints.at("loops").value, 7);
  EXPECT_THAT(f->governors, ElementsAre("block", "poll"));
}

TEST(BenchFlags, Help) {
  absl::StatusOr<BenchFlags> f = Parse({"--help"});
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->help);
  EXPECT_THAT(BenchUsage("x", Defaults()),
              HasSubstr("--loops=N  loops (default 100, 1 to 1000)"));
}

TEST(BenchFlags, OutOfRangeNamesFlagAndRange) {
  absl::StatusOr<BenchFlags> f = Parse({"--loops=0"});
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      f.status().message(),
      HasSubstr("--loops='0': accepted: a whole number from 1 to 1000"));
  f = Parse({"--loops=ten"});
  EXPECT_THAT(f.status().message(), HasSubstr("--loops='ten'"));
}

TEST(BenchFlags, UnknownFlagListsTheKnownOnes) {
  absl::StatusOr<BenchFlags> f = Parse({"--loop=3"});
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(f.status().message(),
              HasSubstr("unknown flag --loop; accepted: --governors, --loops, "
                        "--workers"));
}

TEST(BenchFlags, BadGovernorListsTheRegistry) {
  absl::StatusOr<BenchFlags> f = Parse({"--governors=block,menu"});
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(f.status().message(),
              HasSubstr("--governors: 'menu' is not a governor; accepted: " +
                        std::string(idle::GovernorNames())));
}

TEST(BenchFlags, BareArgumentIsRejected) {
  absl::StatusOr<BenchFlags> f = Parse({"loops=3"});
  EXPECT_THAT(f.status().message(),
              HasSubstr("'loops=3': accepted: --name=value flags"));
}

TEST(BenchFlags, TextFlags) {
  absl::StatusOr<BenchFlags> f = Parse({});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->strings.at("csv").value, "");
  f = Parse({"--csv=/tmp/out.csv"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->strings.at("csv").value, "/tmp/out.csv");
  f = Parse({"--csv="});
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(),
              HasSubstr("--csv='': accepted: a file path"));
  f = Parse({"--cvs=x"});
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), HasSubstr("--csv"));
  EXPECT_THAT(BenchUsage("b", Defaults()),
              HasSubstr("--csv=TEXT  a file path"));
}

}  // namespace
}  // namespace haltpool::bench
