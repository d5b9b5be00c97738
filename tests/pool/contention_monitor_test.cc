// ContentionMonitor (runtime/contention_monitor.h): it passes the pool's own
// threads to the policy, so a submitter and the sampler on 2 CPUs stay
// quiet; it samples once per interval; it reads steal only every
// kStealEvery-th sample; and off, it never samples.

#include "runtime/contention_monitor.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "idle/governor.h"
#include "idle/poll_backoff.h"

namespace haltpool {
namespace {

constexpr int64_t kInterval = ContentionMonitor::kSampleIntervalNs;
constexpr int64_t kCap = 200000;

TEST(ContentionMonitor, ThePoolsOwnRunningWorkersAreNoContention) {
  // Three runnable on 2 CPUs: the sampler, a busy worker of this pool and
  // an outside submitter. Only the submitter is someone else's.
  ContentionMonitor m(true, 2, kCap, [] {
    idle::ContentionSample s;
    s.usable_cpus = 2;
    s.runnable = 3;
    return s;
  });
  ContentionMark mark;
  for (int i = 0; i < 50; ++i) {
    m.MaybeSample(i * kInterval, /*pollers=*/0, /*busy_workers=*/1, mark);
  }
  BackoffStats b = m.Stats();
  EXPECT_EQ(b.samples, 50u);
  EXPECT_EQ(b.level, 0);
  EXPECT_EQ(b.last.busy_workers, 1);
  EXPECT_EQ(m.PollCapNs(), idle::kUnlimitedPollNs);
  // Without the busy worker the other two fill both CPUs.
  m.MaybeSample(50 * kInterval, 0, 0, mark);
  EXPECT_EQ(m.Stats().level, 1);
  EXPECT_EQ(m.PollCapNs(), kCap / 2);
}

TEST(ContentionMonitor, SamplesOncePerInterval) {
  int probes = 0;
  ContentionMonitor m(true, 2, kCap, [&probes] {
    ++probes;
    return idle::ContentionSample();
  });
  ContentionMark mark;
  for (int64_t now = 0; now < 10 * kInterval; now += kInterval / 4) {
    m.MaybeSample(now, 0, 0, mark);
  }
  EXPECT_EQ(probes, 10);
  EXPECT_TRUE(mark.measuring);  // Its next poll is measured.
  m.AfterIdle(mark, /*polled=*/false);
  EXPECT_FALSE(mark.measuring);
}

TEST(ContentionMonitor, ReadsStealEveryTenthSampleOnly) {
  ContentionMonitor m(true, 2, kCap, nullptr);
  ContentionMark mark;
  int64_t now = 0;
  // The first sample reads steal, with nothing to compare it with.
  for (int i = 0; i <= ContentionMonitor::kStealEvery; ++i, now += kInterval) {
    m.MaybeSample(now, 0, 0, mark);
    if (i == 0 && !m.Stats().last.cpu_wait_fraction &&
        !m.Stats().last.runnable) {
      GTEST_SKIP() << "neither /proc/pressure/cpu nor /proc/loadavg here";
    }
    if (i < ContentionMonitor::kStealEvery) {
      EXPECT_FALSE(m.Stats().last.steal_fraction.has_value()) << i;
    }
  }
  // The eleventh compares with the first.
  EXPECT_TRUE(m.Stats().last.steal_fraction.has_value());
  m.MaybeSample(now, 0, 0, mark);
  EXPECT_FALSE(m.Stats().last.steal_fraction.has_value());
  EXPECT_EQ(m.Stats().samples,
            static_cast<uint64_t>(ContentionMonitor::kStealEvery + 2));
}

TEST(ContentionMonitor, OffNeverSamplesNorLimits) {
  int probes = 0;
  ContentionMonitor m(false, 2, kCap, [&probes] {
    ++probes;
    idle::ContentionSample s;
    s.cpu_wait_fraction = 1.0;
    return s;
  });
  ContentionMark mark;
  for (int i = 0; i < 5; ++i) m.MaybeSample(i * kInterval, 0, 0, mark);
  EXPECT_EQ(probes, 0);
  EXPECT_FALSE(mark.measuring);
  EXPECT_EQ(m.PollCapNs(), idle::kUnlimitedPollNs);
  EXPECT_EQ(FormatBackoff(m.Stats()), "off");
}

}  // namespace
}  // namespace haltpool
