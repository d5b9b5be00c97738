// bench/wake_harness: point sizing, the summary of a run, the arrival
// schedules, and real pair and pool runs through the harness, which must
// report every wake and leave the submitter's CPU out of the pool's.

#include "bench/wake_harness.h"

#include <atomic>
#include <cmath>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "arch/cycle_clock.h"
#include "bench/wake_channels.h"
#include "gtest/gtest.h"

namespace haltpool::bench {
namespace {

TEST(WakeHarness, SamplesForStaysInItsBounds) {
  EXPECT_EQ(SamplesFor(0, 1000, 10, 20000), 20000);
  EXPECT_EQ(SamplesFor(10000000, 100, 10, 20000), 10);
  const int n = SamplesFor(975000, 100, 1, 1000);  // 100 ms / ~1 ms.
  EXPECT_GE(n, 90);
  EXPECT_LE(n, 110);
}

TEST(WakeHarness, SummarizeTakesMeanPercentilesAndCpu) {
  std::vector<int64_t> lat;
  for (int i = 100; i >= 1; --i) lat.push_back(i * 1000);  // 1..100 us.
  const WakePoint p = Summarize(5000, lat, {1000, 3000}, 250, 1000);
  EXPECT_EQ(p.gap_ns, 5000);
  EXPECT_EQ(p.samples, 100);
  EXPECT_DOUBLE_EQ(p.mean_us, 50.5);
  EXPECT_DOUBLE_EQ(p.p50_us, 51);
  EXPECT_DOUBLE_EQ(p.p99_us, 100);
  EXPECT_DOUBLE_EQ(p.cpu, 0.25);
  EXPECT_DOUBLE_EQ(p.submit_late_us, 2);
  std::vector<int64_t> none;
  EXPECT_EQ(Summarize(0, none, {}, 0, 0).samples, 0);
}

TEST(WakeHarness, PairRunReportsEveryWake) {
  std::unique_ptr<WakeChannel> channel = MakeSemaphoreChannel();
  const WakePoint p = MeasurePair(*channel, 20000, 50);
  EXPECT_EQ(p.samples, 50);
  EXPECT_GT(p.mean_us, 0);
  EXPECT_LE(p.p50_us, p.p99_us);
  EXPECT_GE(p.cpu, 0);
}

TEST(WakeHarness, PoolRunRunsEveryProbe) {
  std::atomic<int> ran{0};
  std::vector<std::thread> threads;
  // A "pool" of one thread per probe: the probe runs elsewhere.
  const WakePoint p = MeasurePool(
      [&](Probe probe) {
        threads.emplace_back([probe, &ran] {
          ran.fetch_add(1);
          probe();
        });
      },
      1000, 20);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ran.load(), 20 + kWarmupWakes);
  EXPECT_EQ(p.samples, 20);
  EXPECT_GT(p.p50_us, 0);
}

TEST(WakeHarness, ArrivalsAndSubmittersParseTheirNames) {
  for (Arrivals a :
       {Arrivals::kPeriodic, Arrivals::kPoisson, Arrivals::kBursty}) {
    Arrivals back = Arrivals::kPeriodic;
    EXPECT_TRUE(ParseArrivals(ArrivalsName(a), &back));
    EXPECT_EQ(back, a);
  }
  Arrivals a;
  EXPECT_FALSE(ParseArrivals("Poisson", &a));
  EXPECT_FALSE(ParseArrivals("", &a));
  Submitter s = Submitter::kSleep;
  EXPECT_TRUE(ParseSubmitter("spin", &s));
  EXPECT_EQ(s, Submitter::kSpin);
  EXPECT_TRUE(ParseSubmitter("sleep", &s));
  EXPECT_EQ(s, Submitter::kSleep);
  EXPECT_FALSE(ParseSubmitter("busy", &s));
}

TEST(WakeHarness, GapsParseAsDurationsInAscendingOrder) {
  std::vector<int64_t> gaps;
  std::string error;
  ASSERT_TRUE(ParseGaps(SweepGapsList(), &gaps, &error)) << error;
  EXPECT_EQ(gaps, std::vector<int64_t>(std::begin(kSweepGapsNs),
                                       std::end(kSweepGapsNs)));
  ASSERT_TRUE(ParseGaps("0,50us,1ms", &gaps, &error)) << error;
  EXPECT_EQ(gaps, (std::vector<int64_t>{0, 50000, 1000000}));
  EXPECT_FALSE(ParseGaps("1ms,50us", &gaps, &error));
  EXPECT_NE(error.find("'50us'"), std::string::npos) << error;
  EXPECT_NE(error.find("ascending"), std::string::npos) << error;
  for (const char* bad : {"50", "50xs", "-1us", "11s", "", "1ms,,2ms"}) {
    error.clear();
    EXPECT_FALSE(ParseGaps(bad, &gaps, &error)) << bad;
    EXPECT_NE(error.find("accepted"), std::string::npos) << error;
  }
  EXPECT_EQ(gaps, (std::vector<int64_t>{0, 50000, 1000000}))
      << "a failed parse changes nothing";
}

TEST(WakeHarness, PeriodicWaitsTheGapEveryTime) {
  ArrivalSchedule schedule(Arrivals::kPeriodic, 20000, 7);
  for (int i = 0; i < 5; ++i) {
    const ArrivalSchedule::Step step = schedule.Next();
    EXPECT_EQ(step.wait_ns, 20000);
    EXPECT_FALSE(step.in_burst);
  }
}

TEST(WakeHarness, BurstsAreEightWakesFiveMicrosecondsApart) {
  ArrivalSchedule schedule(Arrivals::kBursty, 1000000, 7);
  for (int burst = 0; burst < 3; ++burst) {
    const ArrivalSchedule::Step first = schedule.Next();
    EXPECT_EQ(first.wait_ns, 1000000);
    EXPECT_FALSE(first.in_burst);
    for (int i = 1; i < kBurstSize; ++i) {
      const ArrivalSchedule::Step step = schedule.Next();
      EXPECT_EQ(step.wait_ns, kBurstSpacingNs);
      EXPECT_TRUE(step.in_burst);
    }
  }
  EXPECT_EQ(MeanSpacingNs(Arrivals::kBursty, 8 * 10000 - 7 * 5000), 10000);
  EXPECT_EQ(MeanSpacingNs(Arrivals::kPoisson, 10000), 10000);
}

TEST(WakeHarness, PoissonGapsAreExponentialAndSeeded) {
  constexpr int kN = 20000;
  constexpr int64_t kGap = 50000;
  ArrivalSchedule schedule(Arrivals::kPoisson, kGap, 42);
  ArrivalSchedule same(Arrivals::kPoisson, kGap, 42);
  ArrivalSchedule other(Arrivals::kPoisson, kGap, 43);
  double sum = 0, sum_sq = 0;
  int differs = 0, short_ones = 0;
  for (int i = 0; i < kN; ++i) {
    const ArrivalSchedule::Step step = schedule.Next();
    EXPECT_FALSE(step.in_burst);
    EXPECT_GE(step.wait_ns, 0);
    EXPECT_EQ(same.Next().wait_ns, step.wait_ns);
    if (other.Next().wait_ns != step.wait_ns) ++differs;
    const double w = static_cast<double>(step.wait_ns);
    sum += w;
    sum_sq += w * w;
    if (step.wait_ns < kGap) ++short_ones;
  }
  const double mean = sum / kN;
  const double sd = std::sqrt(sum_sq / kN - mean * mean);
  // An exponential's mean and standard deviation are both the gap (the
  // mean of 20000 is within 2 % of it with odds far past 1e-6), and
  // 1 - 1/e of the draws fall below it.
  EXPECT_NEAR(mean, kGap, 0.03 * kGap);
  EXPECT_NEAR(sd, kGap, 0.05 * kGap);
  EXPECT_NEAR(static_cast<double>(short_ones) / kN, 1 - std::exp(-1.0), 0.02);
  EXPECT_GT(differs, kN * 9 / 10);
}

TEST(WakeHarness, BurstyPoolRunRunsEveryProbe) {
  std::atomic<int> ran{0};
  std::vector<std::thread> threads;
  const WakePoint p = MeasurePool(
      [&](Probe probe) {
        threads.emplace_back([probe, &ran] {
          ran.fetch_add(1);
          probe();
        });
      },
      20000, 3 * kBurstSize, {Arrivals::kBursty, Submitter::kSleep, 1});
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ran.load(), 3 * kBurstSize + kWarmupWakes);
  EXPECT_EQ(p.samples, 3 * kBurstSize);
  EXPECT_GT(p.p50_us, 0);
}

// A "pool" whose Submit() runs the probe and then holds the submitter for
// 20 us: inside a burst each next submission was planned 5 us after the
// last one, so the seven after the first of each burst are about 15 us
// late, and the point says so.
TEST(WakeHarness, ASubmitterHeldPastItsPlanIsLate) {
  const WakePoint p = MeasurePool(
      [](Probe probe) {
        probe();
        const int64_t until = arch::MonotonicNowNs() + 20000;
        while (arch::MonotonicNowNs() < until) {
        }
      },
      100000, 4 * kBurstSize, {Arrivals::kBursty, Submitter::kSleep, 1});
  EXPECT_EQ(p.samples, 4 * kBurstSize);
  EXPECT_GT(p.submit_late_us, 10);
}

TEST(WakeHarness, PairRunUnderEachPacingReportsEveryWake) {
  std::unique_ptr<WakeChannel> channel = MakeSemaphoreChannel();
  for (Arrivals a :
       {Arrivals::kPeriodic, Arrivals::kPoisson, Arrivals::kBursty}) {
    for (Submitter s : {Submitter::kSleep, Submitter::kSpin}) {
      const WakePoint p = MeasurePair(*channel, 100000, 20, {a, s, 3});
      EXPECT_EQ(p.samples, 20) << ArrivalsName(a) << " " << SubmitterName(s);
    }
  }
}

// A "pool" that runs each probe inside Submit(), on the submitting thread:
// all the CPU is the submitter's, spinning through 100 us gaps, so the
// pool's share must come out near zero. Counting the submitter would make
// it near a whole CPU.
TEST(WakeHarness, TheSubmittersCpuIsNotThePools) {
  const WakePoint p = MeasurePool([](Probe probe) { probe(); }, 100000, 500,
                                  {Arrivals::kPeriodic, Submitter::kSpin, 1});
  EXPECT_EQ(p.samples, 500);
  EXPECT_LT(p.cpu, 0.2);
}

}  // namespace
}  // namespace haltpool::bench
