// The strict OpenMetrics parser the pool's metric tests rely on: it takes a
// well-formed exposition apart, and refuses each malformed line it exists
// to catch, naming the rule.

#include "tests/pool/openmetrics_parser.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace haltpool::openmetrics {
namespace {

using ::testing::HasSubstr;

constexpr char kGood[] =
    "# TYPE app_requests counter\n"
    "# HELP app_requests Requests, with \\\"quotes\\\" and \\\\.\n"
    "app_requests_total{path=\"/a\",code=\"200\"} 12\n"
    "app_requests_total{path=\"/b\\\"\\\\\\n\",code=\"200\"} 0\n"
    "app_requests_created{path=\"/a\",code=\"200\"} 1.7e9\n"
    "# TYPE app_latency_seconds gauge\n"
    "# UNIT app_latency_seconds seconds\n"
    "app_latency_seconds 0.000250000\n"
    "app_latency_seconds{worker=\"1\"} +Inf\n"
    "app_latency_seconds{worker=\"2\"} NaN\n"
    "# TYPE app_build info\n"
    "app_build_info{version=\"1.2\"} 1\n"
    "# TYPE app_empty gauge\n"
    "# EOF\n";

TEST(OpenMetricsParserTest, ReadsAWellFormedExposition) {
  absl::StatusOr<OpenMetricsExposition> e = ParseOpenMetrics(kGood);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->families.size(), 4u);
  EXPECT_EQ(e->families[0].type, "counter");
  EXPECT_EQ(e->families[0].help, "Requests, with \"quotes\" and \\.");
  EXPECT_EQ(e->families[1].unit, "seconds");
  EXPECT_EQ(e->families[2].type, "info");
  ASSERT_EQ(e->samples.size(), 7u);
  const OpenMetricsSample* b =
      e->Find("app_requests_total", {{"path", "/b\"\\\n"}, {"code", "200"}});
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->family, "app_requests");
  EXPECT_EQ(
      e->Find("app_requests_total", {{"path", "/a"}, {"code", "200"}})->value,
      12);
  EXPECT_EQ(e->Find("app_latency_seconds")->value, 0.00025);
  EXPECT_EQ(e->All("app_latency_seconds").size(), 3u);
}

TEST(OpenMetricsParserTest, EofMayLackItsNewline) {
  std::string text = kGood;
  text.pop_back();
  EXPECT_TRUE(ParseOpenMetrics(text).ok());
}

// Each case: kGood with one line replaced or added, and the words the error
// must contain.
struct Bad {
  const char* what;
  std::string text;
  const char* error;
};

std::string Replace(std::string text, const std::string& from,
                    const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(OpenMetricsParserTest, RefusesEachMalformedLine) {
  const std::string g = kGood;
  const Bad cases[] = {
      {"no EOF", Replace(g, "# EOF\n", ""), "does not end with \"# EOF\""},
      {"text after EOF", g + "app_x 1\n", "not the last line"},
      {"an empty line after EOF", g + "\n", "not the last line"},
      {"an empty line", Replace(g, "# TYPE app_build", "\n# TYPE app_build"),
       "must start with a metric name"},
      {"a plain comment",
       Replace(g, "# TYPE app_empty", "# hello\n# TYPE app_empty"),
       "unknown metadata"},
      {"no space after #", Replace(g, "# TYPE app_empty", "#TYPE app_empty"),
       "one space after #"},
      {"a sample before TYPE",
       Replace(g, "# TYPE app_requests counter\n", "app_requests_total 1\n"),
       "before its family's # TYPE"},
      {"metadata after samples",
       Replace(g, "# TYPE app_latency_seconds gauge\n",
               "# HELP app_requests late\n# TYPE app_latency_seconds gauge\n"),
       "after its samples"},
      {"a family resumed",
       Replace(g, "# TYPE app_empty gauge\n", "# TYPE app_requests counter\n"),
       "appears again"},
      {"two TYPEs",
       Replace(g, "# UNIT app_latency_seconds",
               "# TYPE app_latency_seconds gauge\n# UNIT app_latency_seconds"),
       "a second TYPE"},
      {"an unknown type", Replace(g, "app_empty gauge", "app_empty gauge2"),
       "unknown type"},
      {"a counter without _total",
       Replace(g, "app_requests_total{path=\"/a\",code=\"200\"} 12",
               "app_requests{path=\"/a\",code=\"200\"} 12"),
       "accepted: app_requests_total"},
      {"an info without _info", Replace(g, "app_build_info{", "app_build{"),
       "accepted: app_build_info"},
      {"a sample of another family",
       Replace(g, "app_latency_seconds 0.000250000", "app_other 1"),
       "in gauge family app_latency_seconds"},
      {"a unit not ending the name",
       Replace(g, "# UNIT app_latency_seconds seconds",
               "# UNIT app_latency_seconds bytes"),
       "does not end with its unit"},
      {"a bad metric name", Replace(g, "# TYPE app_empty", "# TYPE 9app"),
       "no metric family name"},
      {"a bad character in a sample name",
       Replace(g, "app_latency_seconds 0.000", "app_latency_seconds- 0.000"),
       "followed by one space"},
      {"a bad label name",
       Replace(g, "{version=\"1.2\"}", "{1version=\"1.2\"}"),
       "label name must match"},
      {"a colon in a label name",
       Replace(g, "{version=\"1.2\"}", "{ver:sion=\"1.2\"}"),
       "must be followed by =\"value\""},
      {"an unquoted label value",
       Replace(g, "{version=\"1.2\"}", "{version=1.2}"),
       "must be followed by =\"value\""},
      {"an unknown escape",
       Replace(g, "{version=\"1.2\"}", "{version=\"1\\t2\"}"),
       "escape other than"},
      {"a bad escape in help", Replace(g, "Requests, with", "Requests\\t with"),
       "escape other than"},
      {"an unterminated label value",
       Replace(g, "{version=\"1.2\"} 1", "{version=\"1.2} 1"), "no end quote"},
      {"a trailing comma",
       Replace(g, "{version=\"1.2\"}", "{version=\"1.2\",}"),
       "label name must match"},
      {"labels without a separator",
       Replace(g, "{version=\"1.2\"}", "{version=\"1.2\" a=\"b\"}"),
       "separated by ','"},
      {"a repeated label", Replace(g, "{version=\"1.2\"}", "{a=\"1\",a=\"2\"}"),
       "appears twice"},
      {"a duplicate sample",
       Replace(g, "app_latency_seconds{worker=\"2\"} NaN",
               "app_latency_seconds{worker=\"1\"} 3"),
       "the same name and labels"},
      {"a value that is not a number",
       Replace(g, "app_latency_seconds 0.000250000",
               "app_latency_seconds 0x10"),
       "is not a number"},
      {"Inf without a sign",
       Replace(g, "{worker=\"1\"} +Inf", "{worker=\"1\"} Inf"), "not a number"},
      {"an empty exponent",
       Replace(g, "app_latency_seconds 0.000250000", "app_latency_seconds 1e"),
       "not a number"},
      {"no value",
       Replace(g, "app_build_info{version=\"1.2\"} 1",
               "app_build_info{version=\"1.2\"}"),
       "followed by one space"},
      {"a timestamp",
       Replace(g, "app_latency_seconds 0.000250000",
               "app_latency_seconds 1 17"),
       "text after the value"},
      {"two spaces",
       Replace(g, "app_latency_seconds 0.0", "app_latency_seconds  0.0"),
       "text after the value"},
      {"a negative counter", Replace(g, "code=\"200\"} 12", "code=\"200\"} -1"),
       "non-negative"},
      {"a NaN counter", Replace(g, "code=\"200\"} 12", "code=\"200\"} NaN"),
       "non-negative"},
      {"an info that is not 1",
       Replace(g, "{version=\"1.2\"} 1", "{version=\"1.2\"} 2"), "must be 1"},
      {"a carriage return",
       Replace(g, "app_build_info{version=\"1.2\"} 1\n",
               "app_build_info{version=\"1.2\"} 1\r\n"),
       "not a number"},
      {"a histogram", Replace(g, "app_empty gauge", "app_empty histogram"),
       "not supported"},
  };
  for (const Bad& c : cases) {
    absl::StatusOr<OpenMetricsExposition> e = ParseOpenMetrics(c.text);
    EXPECT_FALSE(e.ok()) << c.what << ": accepted\n" << c.text;
    if (!e.ok()) {
      EXPECT_THAT(std::string(e.status().message()), HasSubstr(c.error))
          << c.what;
    }
  }
}

TEST(OpenMetricsParserTest, ErrorsNameTheLine) {
  absl::StatusOr<OpenMetricsExposition> e = ParseOpenMetrics(
      "# TYPE a gauge\n"
      "a 1\n"
      "a{x=\"1\"} one\n"
      "# EOF\n");
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(std::string(e.status().message()),
              HasSubstr("line 3 \"a{x=\"1\"} one\""));
}

}  // namespace
}  // namespace haltpool::openmetrics
