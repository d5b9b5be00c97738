// bench/wake_harness: point sizing, the summary of a run, and a real pair
// and pool run through the harness, which must report every wake.

#include "bench/wake_harness.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

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
  const WakePoint p = Summarize(5000, lat, 250, 1000);
  EXPECT_EQ(p.gap_ns, 5000);
  EXPECT_EQ(p.samples, 100);
  EXPECT_DOUBLE_EQ(p.mean_us, 50.5);
  EXPECT_DOUBLE_EQ(p.p50_us, 51);
  EXPECT_DOUBLE_EQ(p.p99_us, 100);
  EXPECT_DOUBLE_EQ(p.cpu, 0.25);
  std::vector<int64_t> none;
  EXPECT_EQ(Summarize(0, none, 0, 0).samples, 0);
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

}  // namespace
}  // namespace haltpool::bench
