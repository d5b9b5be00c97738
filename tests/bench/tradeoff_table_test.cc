// bench/tradeoff_table: the CSV round trip (RFC 4180 quoting included), the
// Markdown tables, the dominance rule, and the verdict on the tradeoff
// target, on hand-made curves.

#include "bench/tradeoff_table.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace haltpool::bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

WakePoint Point(int64_t gap_ns, double mean_us, double cpu) {
  WakePoint p;
  p.gap_ns = gap_ns;
  p.samples = 100;
  p.mean_us = mean_us;
  p.p50_us = mean_us * 0.8;
  p.p99_us = mean_us * 3;
  p.cpu = cpu;
  p.submit_late_us = mean_us / 4;
  return p;
}

Curve MakeCurve(std::string name, bool haltpool, bool is_default,
                std::vector<WakePoint> points) {
  Curve c;
  c.mode = "pair";
  c.contender = std::move(name);
  c.haltpool = haltpool;
  c.is_default = is_default;
  c.points = std::move(points);
  return c;
}

// At 1 us the spinner is fastest and the blocker cheapest; the default
// sits between, within both bounds. At 1 ms the default is fastest and
// cheapest; the spinner is near it in latency but burns a CPU.
std::vector<Curve> Balanced() {
  return {
      MakeCurve("haltpool default", true, true,
                {Point(1000, 1.2, 0.30), Point(1000000, 14, 0.01)}),
      MakeCurve("spinner", false, false,
                {Point(1000, 1.0, 1.00), Point(1000000, 15, 1.00)}),
      MakeCurve("blocker", false, false,
                {Point(1000, 20, 0.05), Point(1000000, 20, 0.01)}),
  };
}

TEST(TradeoffTable, CsvRoundTrip) {
  const std::vector<Curve> curves = Balanced();
  const std::string csv = CurvesCsv(curves);
  EXPECT_THAT(csv, HasSubstr("mode,arrivals,contender,gap_us,samples,mean_us,"
                             "p50_us,p99_us,cpu_pct,submit_late_us\n"));
  EXPECT_THAT(csv, HasSubstr("pair,periodic,spinner,1,100,1.000,0.800,3.000,"
                             "100.000,0.250\n"));
  absl::StatusOr<std::vector<Curve>> back = ParseCurvesCsv(csv);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[1].contender, "spinner");
  ASSERT_EQ((*back)[1].points.size(), 2u);
  EXPECT_EQ((*back)[1].points[1].gap_ns, 1000000);
  EXPECT_DOUBLE_EQ((*back)[0].points[0].cpu, 0.30);
  EXPECT_DOUBLE_EQ((*back)[2].points[0].mean_us, 20);
  EXPECT_DOUBLE_EQ((*back)[2].points[0].submit_late_us, 5);
}

TEST(TradeoffTable, CsvFieldsAreQuotedAsRfc4180Says) {
  EXPECT_EQ(CsvField("plain name"), "plain name");
  EXPECT_EQ(CsvField("a, b"), "\"a, b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  absl::StatusOr<std::vector<std::vector<std::string>>> r =
      ParseCsv("a,\"b, \"\"c\"\"\",d\r\n\"x\ny\",,\n\nlast");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_THAT((*r)[0], ElementsAre("a", "b, \"c\"", "d"));
  EXPECT_THAT((*r)[1], ElementsAre("x\ny", "", ""));
  EXPECT_THAT((*r)[2], ElementsAre("last"));
  EXPECT_THAT(ParseCsv("a,\"open\n").status().message(),
              HasSubstr("CSV record 1: a quoted field is not closed"));
  EXPECT_THAT(ParseCsv("ok\na,\"b\"c\n").status().message(),
              HasSubstr("CSV record 2: text after a closing quote"));
}

TEST(TradeoffTable, NamesWithCommasAndQuotesSurviveTheRoundTrip) {
  std::vector<Curve> curves = Balanced();
  curves[1].contender = "haltpool default, back-off off";
  curves[2].contender = "the \"blocker\", quoted";
  curves[2].arrivals = "bursty";
  const std::string csv = CurvesCsv(curves);
  EXPECT_THAT(csv, HasSubstr("pair,periodic,\"haltpool default, back-off "
                             "off\",1,100,"));
  absl::StatusOr<std::vector<Curve>> back = ParseCurvesCsv(csv);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[1].contender, "haltpool default, back-off off");
  EXPECT_EQ((*back)[2].contender, "the \"blocker\", quoted");
  EXPECT_EQ((*back)[2].arrivals, "bursty");
  EXPECT_EQ((*back)[0].arrivals, "periodic");
  EXPECT_DOUBLE_EQ((*back)[1].points[0].mean_us, 1.0);
}

TEST(TradeoffTable, MalformedCsvNamesTheRecord) {
  for (const char* bad :
       {"pair,periodic,x,1,100,1.0,1.0,1.0,1\n",
        "pair,periodic,x,one,100,1,1,1,1,0\n",
        "pair,periodic,x,1,0,1,1,1,1,0\n", "pair,periodic,,1,100,1,1,1,1,0\n",
        "pair,periodic,x,1,100,1,1,1,-5,0\n",
        "pair,periodic,x,1,100,1,1,1,1,-2\n", "pair,periodic,x,1,100,1,1,1,1\n",
        "pair,x,1,100,1,1,1,1,0\n"}) {
    absl::StatusOr<std::vector<Curve>> c = ParseCurvesCsv(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_THAT(c.status().message(), HasSubstr("CSV record 1"));
    EXPECT_THAT(c.status().message(),
                HasSubstr("accepted: mode,arrivals,contender"));
  }
}

TEST(TradeoffTable, MarkdownHasATableOfEachKindPerMode) {
  const std::string md = CurvesMarkdown(Balanced());
  EXPECT_THAT(md, HasSubstr("#### pair: mean wake latency, us (p50 / p99)"));
  EXPECT_THAT(md, HasSubstr("#### pair: CPU the waiting side burns"));
  EXPECT_THAT(md, HasSubstr("| contender | 1 us | 1 ms |"));
  EXPECT_THAT(md, HasSubstr("| spinner | 1.00 (0.80 / 3.0) | 15.00 (12.00 / "
                            "45.0) |"));
  EXPECT_THAT(md, HasSubstr("| blocker | 5.0 | 1.0 |"));
}

TEST(TradeoffTable, MarkdownTablesArePerArrivalProcess) {
  std::vector<Curve> curves = Balanced();
  for (Curve c : Balanced()) {
    c.arrivals = "poisson";
    curves.push_back(c);
  }
  const std::string md = CurvesMarkdown(curves);
  EXPECT_THAT(md, HasSubstr("#### pair: mean wake latency"));
  EXPECT_THAT(md, HasSubstr("#### pair, poisson arrivals: mean wake latency"));
  EXPECT_THAT(md, HasSubstr("#### pair, poisson arrivals: CPU the waiting"));
}

// The rule at its edges: 0.8x the latency exactly and the CPU plus 1 % of
// a CPU exactly still dominate; a hair beyond either does not.
TEST(TradeoffTable, DominanceNeedsBothLowerLatencyAndNoMoreCpu) {
  const WakePoint base = Point(1000, 10, 0.20);
  EXPECT_TRUE(Dominates(Point(1000, 8, 0.21), base));
  EXPECT_TRUE(Dominates(Point(1000, 1, 0.0), base));
  EXPECT_FALSE(Dominates(Point(1000, 8.01, 0.0), base));  // Not fast enough.
  EXPECT_FALSE(Dominates(Point(1000, 1, 0.2101), base));  // Too hungry.
  EXPECT_FALSE(Dominates(base, base));
}

TEST(TradeoffTable, JudgeDominanceNamesTheDominatingContenders) {
  std::vector<Curve> curves = Balanced();
  // At 1 us: 0.9 us at 31 % of a CPU dominates the default's 1.2 us at
  // 30 %; the spinner (1.0 us at 100 %) does not. At 1 ms nobody does.
  curves.push_back(MakeCurve(
      "lean", false, false, {Point(1000, 0.9, 0.31), Point(1000000, 12, 0.5)}));
  // Another arrival process is judged apart: this one's default is alone.
  Curve other = curves[0];
  other.arrivals = "bursty";
  curves.push_back(other);
  const std::vector<DominanceVerdict> v = JudgeDominance(curves);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0].arrivals, "periodic");
  EXPECT_EQ(v[0].gap_ns, 1000);
  EXPECT_THAT(v[0].dominated_by, ElementsAre("lean"));
  EXPECT_EQ(v[0].fastest, "lean");
  EXPECT_DOUBLE_EQ(v[0].default_to_fastest, 1.2 / 0.9);
  EXPECT_THAT(v[1].dominated_by, IsEmpty());
  EXPECT_EQ(v[1].fastest, "lean");
  EXPECT_EQ(v[2].arrivals, "bursty");
  EXPECT_THAT(v[2].dominated_by, IsEmpty());
  EXPECT_EQ(v[2].fastest, "haltpool default");
  EXPECT_DOUBLE_EQ(v[2].default_to_fastest, 1.0);
  const std::string md = DominanceMarkdown(v);
  EXPECT_THAT(md, HasSubstr("#### pair: who dominates the default"));
  EXPECT_THAT(md, HasSubstr("| 1 us | 1.20 | 30.0 | lean | 1.33 | dominated "
                            "by: lean |"));
  EXPECT_THAT(md, HasSubstr("| 1 ms | 14.00 | 1.0 | lean | 1.17 | not "
                            "dominated |"));
  EXPECT_THAT(md, HasSubstr("#### pair, bursty arrivals: who dominates"));
}

TEST(TradeoffTable, GapLabels) {
  EXPECT_EQ(GapLabel(0), "0");
  EXPECT_EQ(GapLabel(5000), "5 us");
  EXPECT_EQ(GapLabel(1500), "1.5 us");
  EXPECT_EQ(GapLabel(10000000), "10 ms");
}

TEST(TradeoffTable, DefaultWithinBothBoundsMeetsTheTarget) {
  absl::StatusOr<Verdict> v = JudgeTradeoff(Balanced(), "pair");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->gaps.size(), 2u);
  EXPECT_EQ(v->gaps[0].best, "spinner");
  EXPECT_DOUBLE_EQ(v->gaps[0].latency_ratio, 1.2);
  EXPECT_EQ(v->gaps[0].cheapest, "haltpool default");
  EXPECT_TRUE(v->met_everywhere);
  // The spinner burns a CPU at 1 ms; the blocker is 20x slower at 1 us.
  EXPECT_THAT(v->peers_meeting_everywhere, IsEmpty());
  EXPECT_THAT(VerdictMarkdown(*v), HasSubstr("Target met."));
}

TEST(TradeoffTable, TooSlowOrTooHungryFails) {
  std::vector<Curve> slow = Balanced();
  slow[0].points[0].mean_us = 1.6;  // > 1.5x the spinner's 1.0.
  absl::StatusOr<Verdict> v = JudgeTradeoff(slow, "pair");
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->gaps[0].met);
  EXPECT_FALSE(v->met_everywhere);
  EXPECT_THAT(VerdictMarkdown(*v), HasSubstr("Target not met."));

  std::vector<Curve> hungry = Balanced();
  // A peer as fast as the default that burns less than 1/1.1 of its CPU.
  hungry.push_back(MakeCurve("frugal", false, false,
                             {Point(1000, 1.1, 0.20), Point(1000000, 30, 0)}));
  v = JudgeTradeoff(hungry, "pair");
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->gaps[0].met);
  EXPECT_EQ(v->gaps[0].cheapest, "frugal");
  EXPECT_DOUBLE_EQ(v->gaps[0].cpu_ratio, 1.5);
  EXPECT_TRUE(v->gaps[1].met);
}

TEST(TradeoffTable, CpuWithinTheNoiseFloorCountsAsEqual) {
  std::vector<Curve> curves = Balanced();
  curves.push_back(MakeCurve("cheap", false, false,
                             {Point(1000, 30, 0), Point(1000000, 13, 0.01)}));
  curves[0].points[1].cpu = 0.01 + kCpuFloor / 2;  // > 1.1x, in the floor.
  absl::StatusOr<Verdict> v = JudgeTradeoff(curves, "pair");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->gaps[1].cheapest, "cheap");
  EXPECT_TRUE(v->gaps[1].met);
  curves[0].points[1].cpu = 0.01 + 2 * kCpuFloor;
  v = JudgeTradeoff(curves, "pair");
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->gaps[1].met);
}

TEST(TradeoffTable, APeerThatDoesBothEverywhereIsNamed) {
  std::vector<Curve> curves = Balanced();
  curves.push_back(MakeCurve("ideal", false, false,
                             {Point(1000, 1.0, 0.05), Point(1000000, 1, 0)}));
  absl::StatusOr<Verdict> v = JudgeTradeoff(curves, "pair");
  ASSERT_TRUE(v.ok());
  EXPECT_THAT(v->peers_meeting_everywhere, ElementsAre("ideal"));
  EXPECT_THAT(VerdictMarkdown(*v), HasSubstr("peers meeting it at every gap: "
                                             "ideal. Target not met."));
}

TEST(TradeoffTable, NoDefaultCurveIsNotFound) {
  std::vector<Curve> curves = Balanced();
  curves[0].is_default = false;
  EXPECT_EQ(JudgeTradeoff(curves, "pair").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(JudgeTradeoff(Balanced(), "pool").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(JudgeTradeoff(Balanced(), "pair", "bursty").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace haltpool::bench
