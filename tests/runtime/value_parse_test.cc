// The strict value parsers behind the HALTPOOL_* variables
// (runtime/value_parse.h): what each accepts, and that every rejection says
// what is wrong and what is accepted.

#include "runtime/value_parse.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace haltpool {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMax = 1000000000;  // 1 s, the windows' limit.
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

std::string Error(const absl::Status& s) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(ParseDuration, UnitsAndBareNanoseconds) {
  struct Case {
    const char* text;
    int64_t ns;
  };
  for (const Case& c :
       {Case{"200us", 200000}, Case{"2ms", 2000000}, Case{"1s", 1000000000},
        Case{"5000", 5000}, Case{"7ns", 7}, Case{"0", 0}, Case{"0us", 0},
        Case{"000200us", 200000}, Case{"1000000000", kMax}}) {
    const absl::StatusOr<int64_t> v = ParseDurationNs(c.text, 0, kMax);
    ASSERT_TRUE(v.ok()) << c.text << ": " << v.status();
    EXPECT_EQ(*v, c.ns) << c.text;
  }
}

TEST(ParseDuration, BoundsAreInclusive) {
  EXPECT_EQ(*ParseDurationNs("10us", 10000, 20000), 10000);
  EXPECT_EQ(*ParseDurationNs("20us", 10000, 20000), 20000);
  EXPECT_FALSE(ParseDurationNs("9999", 10000, 20000).ok());
  EXPECT_FALSE(ParseDurationNs("20001ns", 10000, 20000).ok());
  EXPECT_EQ(*ParseDurationNs("9223372036854775807", 0, kInt64Max), kInt64Max);
}

// Every rejection names the problem and lists what is accepted, with the
// range in the units an operator would type.
void ExpectDurationRejected(const std::string& text,
                            const std::string& problem) {
  SCOPED_TRACE("'" + text + "'");
  const absl::StatusOr<int64_t> v = ParseDurationNs(text, 0, kMax);
  ASSERT_FALSE(v.ok()) << "accepted as " << *v;
  EXPECT_THAT(Error(v.status()),
              AllOf(HasSubstr(problem), HasSubstr("accepted:"),
                    HasSubstr("ns, us, ms or s"), HasSubstr("from 0 to 1s")));
}

TEST(ParseDuration, RejectsEveryBadInputClass) {
  ExpectDurationRejected("", "empty");
  ExpectDurationRejected("abc", "not a duration");
  ExpectDurationRejected("us", "not a duration");  // The number is missing.
  ExpectDurationRejected("-5", "negative");
  ExpectDurationRejected("-5us", "negative");
  ExpectDurationRejected("-0", "negative");
  ExpectDurationRejected("99999999999999999999", "too large");
  ExpectDurationRejected("99999999999999999999us", "too large");
  ExpectDurationRejected("10000000000s",
                         "too large");  // Overflows in the unit.
  ExpectDurationRejected("2s", "out of range");
  ExpectDurationRejected("1000000001", "out of range");
  ExpectDurationRejected("5x", "unknown unit 'x'");
  ExpectDurationRejected("5sec", "unknown unit 'sec'");
  ExpectDurationRejected("5 us", "unknown unit ' us'");
  ExpectDurationRejected("1.5ns", "not a whole number of nanoseconds");
  ExpectDurationRejected("5US", "unknown unit 'US'");
  ExpectDurationRejected("5m", "unknown unit 'm'");
}

TEST(ParseDuration, RejectsSignsAndSpaces) {
  for (const char* text : {"+5", " 5", "5 ", "\t5us", "5us\n", "ms5", "5-"}) {
    EXPECT_FALSE(ParseDurationNs(text, 0, kMax).ok()) << "'" << text << "'";
  }
}

TEST(ParseDuration, TakesFractionsThatAreWholeNanoseconds) {
  EXPECT_EQ(*ParseDurationNs("1.5ms", 0, kMax), 1500000);
  EXPECT_EQ(*ParseDurationNs("0.5us", 0, kMax), 500);
  EXPECT_EQ(*ParseDurationNs(".25s", 0, kMax), 250000000);
  EXPECT_EQ(*ParseDurationNs("0.500000000s", 0, kMax), 500000000);
  EXPECT_EQ(*ParseDurationNs("0000000000000000001ns", 0, kMax), 1);
  EXPECT_FALSE(ParseDurationNs("1.2.3ms", 0, kMax).ok());
}

TEST(ParseDuration, RefusesWhatIsNotWholeNanoseconds) {
  for (const char* text :
       {"1.1ns", "0.2ns", "0.0001us", "1.25ns", "0.0000000001s"}) {
    const absl::StatusOr<int64_t> v = ParseDurationNs(text, 0, kMax);
    ASSERT_FALSE(v.ok()) << text << " gave " << *v;
    EXPECT_THAT(Error(v.status()),
                HasSubstr("not a whole number of nanoseconds"))
        << text;
  }
}

TEST(ParseDuration, TakesOneUnitOnly) {
  for (const char* text : {"1s500ms", "1e3ns", "5m", "1h"}) {
    const absl::StatusOr<int64_t> v = ParseDurationNs(text, 0, kMax);
    ASSERT_FALSE(v.ok()) << text;
    EXPECT_THAT(Error(v.status()), HasSubstr("unknown unit")) << text;
  }
}

TEST(ParseDuration, RangeIsSpelledInTheMessage) {
  const absl::StatusOr<int64_t> v = ParseDurationNs("1us", 2000, 3000000);
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(Error(v.status()), HasSubstr("from 2us to 3ms"));
}

TEST(ParseWholeNumber, AcceptsDigitsWithinRange) {
  EXPECT_EQ(*ParseInteger("2", 1, 1024), 2);
  EXPECT_EQ(*ParseInteger("1", 1, 1024), 1);
  EXPECT_EQ(*ParseInteger("1024", 1, 1024), 1024);
  EXPECT_EQ(*ParseInteger("0", 0, 1024), 0);
  EXPECT_EQ(*ParseInteger("007", 0, 1024), 7);
  EXPECT_EQ(*ParseInteger("9223372036854775807", 0, kInt64Max), kInt64Max);
}

TEST(ParseWholeNumber, RejectsEveryBadInputClass) {
  struct Case {
    const char* text;
    const char* problem;
  };
  for (const Case& c :
       {Case{"", "empty"}, Case{"-1", "negative"}, Case{"abc", "not a number"},
        Case{"2x", "not a number"}, Case{" 2", "not a number"},
        Case{"2.0", "not a number"}, Case{"+2", "not a number"},
        Case{"0", "out of range"}, Case{"1025", "out of range"},
        Case{"99999999999999999999", "too large"},
        Case{"9223372036854775808", "too large"}}) {
    SCOPED_TRACE(std::string("'") + c.text + "'");
    const absl::StatusOr<int64_t> v = ParseInteger(c.text, 1, 1024);
    ASSERT_FALSE(v.ok()) << "accepted as " << *v;
    EXPECT_THAT(Error(v.status()),
                AllOf(HasSubstr(c.problem),
                      HasSubstr("accepted: a whole number from 1 to 1024")));
  }
}

TEST(ParseBoolean, KernelSpellingsInAnyCase) {
  for (const char* t : {"1", "true", "TRUE", "True", "yes", "YES", "y", "Y"}) {
    const absl::StatusOr<bool> b = ParseBool(t);
    ASSERT_TRUE(b.ok()) << t << ": " << b.status();
    EXPECT_TRUE(*b) << t;
  }
  for (const char* t : {"0", "false", "FALSE", "no", "No", "n", "N"}) {
    const absl::StatusOr<bool> b = ParseBool(t);
    ASSERT_TRUE(b.ok()) << t << ": " << b.status();
    EXPECT_FALSE(*b) << t;
  }
}

TEST(ParseBoolean, RejectsEverythingElse) {
  for (const char* t :
       {"", "2", "-1", "on", "off", "truee", " 1", "1 ", "yess", "t"}) {
    SCOPED_TRACE(std::string("'") + t + "'");
    const absl::StatusOr<bool> b = ParseBool(t);
    ASSERT_FALSE(b.ok());
    EXPECT_THAT(Error(b.status()),
                AllOf(HasSubstr(*t ? "not a boolean" : "empty"),
                      HasSubstr("accepted: 1, 0, true, false, yes, no, y, n")));
  }
}

TEST(FormatDuration, ShortestExactSpelling) {
  EXPECT_EQ(FormatDurationNs(0), "0");
  EXPECT_EQ(FormatDurationNs(1), "1ns");
  EXPECT_EQ(FormatDurationNs(1500), "1500ns");
  EXPECT_EQ(FormatDurationNs(2000), "2us");
  EXPECT_EQ(FormatDurationNs(50000), "50us");
  EXPECT_EQ(FormatDurationNs(200000), "200us");
  EXPECT_EQ(FormatDurationNs(1500000), "1500us");
  EXPECT_EQ(FormatDurationNs(2000000), "2ms");
  EXPECT_EQ(FormatDurationNs(1000000000), "1s");
  EXPECT_EQ(FormatDurationNs(int64_t{60} * 1000000000), "60s");
  EXPECT_EQ(FormatDurationNs(kInt64Max), "9223372036854775807ns");
}

TEST(FormatDuration, ParsesBackToTheSameValue) {
  for (int64_t ns : {int64_t{0}, int64_t{1}, int64_t{999}, int64_t{1000},
                     int64_t{1001}, int64_t{123456789}, int64_t{50000},
                     int64_t{200000}, int64_t{999999999}, kMax}) {
    const std::string text = FormatDurationNs(ns);
    const absl::StatusOr<int64_t> back = ParseDurationNs(text, 0, kMax);
    ASSERT_TRUE(back.ok()) << ns << " -> '" << text << "': " << back.status();
    EXPECT_EQ(*back, ns) << "'" << text << "'";
  }
}

TEST(ParseCpuList, CpusAndRangesAscendingWithoutDuplicates) {
  absl::StatusOr<std::vector<int>> v = ParseCpuList("1", 63);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_THAT(*v, ElementsAre(1));
  v = ParseCpuList("6,0-3,2", 63);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_THAT(*v, ElementsAre(0, 1, 2, 3, 6));
  v = ParseCpuList("63-63", 63);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_THAT(*v, ElementsAre(63));
}

TEST(ParseCpuList, RejectionsSayWhatIsWrongAndWhatIsAccepted) {
  const std::string accepted =
      "; accepted: CPU numbers from 0 to 63 and ranges, such as 1 or 0-3,6";
  EXPECT_EQ(Error(ParseCpuList("", 63).status()), "empty" + accepted);
  EXPECT_EQ(Error(ParseCpuList("3-1", 63).status()),
            "'3-1' runs backwards" + accepted);
  EXPECT_EQ(Error(ParseCpuList("0-64", 63).status()),
            "'0-64' is out of range" + accepted);
  EXPECT_EQ(Error(ParseCpuList("1-", 63).status()),
            "'1-' is not a range" + accepted);
  for (const char* bad : {"x", "-1", "1,,2", "1-2-3", " 1", "1.5"}) {
    EXPECT_THAT(
        Error(ParseCpuList(bad, 63).status()),
        AllOf(HasSubstr("is not a CPU or a range"), HasSubstr(accepted)))
        << bad;
  }
}

}  // namespace
}  // namespace haltpool
