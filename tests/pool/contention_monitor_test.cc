// ContentionMonitor (runtime/contention_monitor.h): it passes the pool's own
// threads to the policy, so a submitter and the sampler on 2 CPUs stay
// quiet; it samples once per interval; it reads steal only every
// kStealEvery-th sample; it counts each outside submitter once per
// interval; it measures a poller's wait for its CPU; and off, it never
// samples.

#include "runtime/contention_monitor.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "arch/contention_signals.h"
#include "arch/cycle_clock.h"
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
    m.MaybeSample(i * kInterval, /*own_awake=*/2, mark);
  }
  BackoffStats b = m.Stats();
  EXPECT_EQ(b.samples, 50u);
  EXPECT_EQ(b.level, 0);
  EXPECT_EQ(b.last.own_awake, 2);
  EXPECT_EQ(m.PollCapNs(), idle::kUnlimitedPollNs);
  // Without the busy worker the other two fill both CPUs.
  m.MaybeSample(50 * kInterval, 1, mark);
  EXPECT_EQ(m.Stats().level, 1);
  EXPECT_EQ(m.PollCapNs(), kCap / 2);
}

// Outside threads that submitted since the last sample are the pool's own
// submitters: each counts once per interval, and only in the interval it
// submitted in.
TEST(ContentionMonitor, CountsEachSubmitterOncePerInterval) {
  // Four runnable on 2 CPUs: the sampler and three others, unless some of
  // those are this pool's submitters.
  ContentionMonitor m(true, 2, kCap, [] {
    idle::ContentionSample s;
    s.usable_cpus = 2;
    s.runnable = 4;
    return s;
  });
  ContentionMark mark;
  m.MaybeSample(0, /*own_awake=*/1, mark);
  EXPECT_EQ(m.Stats().last.submitters, 0);
  EXPECT_EQ(m.Stats().contended_runnable, 1u);
  m.NoteSubmitter();
  m.NoteSubmitter();
  std::thread([&m] { m.NoteSubmitter(); }).join();
  m.MaybeSample(kInterval, 1, mark);
  EXPECT_EQ(m.Stats().last.submitters, 2);
  EXPECT_EQ(m.Stats().contended_runnable, 1u);  // One other: no contention.
  m.MaybeSample(2 * kInterval, 1, mark);
  EXPECT_EQ(m.Stats().last.submitters, 0);  // They did not submit again.
  EXPECT_EQ(m.Stats().contended_runnable, 2u);
}

TEST(ContentionMonitor, SamplesOncePerInterval) {
  int probes = 0;
  ContentionMonitor m(true, 2, kCap, [&probes] {
    ++probes;
    return idle::ContentionSample();
  });
  ContentionMark mark;
  for (int64_t now = 0; now < 10 * kInterval; now += kInterval / 4) {
    m.MaybeSample(now, 1, mark);
  }
  EXPECT_EQ(probes, 10);
  EXPECT_TRUE(mark.measuring);  // Its next poll is measured.
  m.AfterIdle(mark, /*polled=*/false);
  EXPECT_FALSE(mark.measuring);
}

// A worker that polls while another thread keeps wanting its CPU waits for
// it: this thread and a spinning one share CPU 0 for 30 ms between each of
// two samples and the AfterIdle that follows, so both samples carry this
// thread's wait, and the second counts as a poller preempted (the other
// readings are the machine's own, so the level may rise further).
TEST(ContentionMonitor, APollerKeptFromItsCpuWaitsForIt) {
  if (!arch::ProcFile(arch::kProcThreadSchedstat).available()) {
    GTEST_SKIP() << "no " << arch::kProcThreadSchedstat;
  }
  cpu_set_t cpu0;
  CPU_ZERO(&cpu0);
  CPU_SET(0, &cpu0);
  cpu_set_t before;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof before, &before), 0);
  if (!CPU_ISSET(0, &before)) GTEST_SKIP() << "CPU 0 is not usable here";
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof cpu0, &cpu0), 0);
  std::atomic<bool> stop{false};
  std::thread hog([&] {
    pthread_setaffinity_np(pthread_self(), sizeof cpu0, &cpu0);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  ContentionMonitor m(true, 2, kCap, nullptr);
  ContentionMark mark;
  m.AttachWorker(mark);
  for (int i = 0; i < 3; ++i) {
    m.MaybeSample(i * kInterval, /*own_awake=*/1, mark);
    ASSERT_TRUE(mark.measuring);
    const int64_t end = arch::MonotonicNowNs() + 30000000;
    while (arch::MonotonicNowNs() < end) {
    }
    m.AfterIdle(mark, /*polled=*/true);
  }
  stop.store(true);
  hog.join();
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof before, &before), 0);
  // Sharing one CPU for 30 ms, each thread waits for most of a slice at a
  // time: far past the threshold, in both measured samples.
  const BackoffStats b = m.Stats();
  EXPECT_GE(b.last.preempted_ns, idle::PollBackoff::kPreemptedDelayNs);
  EXPECT_EQ(b.contended_preempted, 1u);
  EXPECT_GE(b.level, 1);
}

TEST(ContentionMonitor, ReadsStealEveryTenthSampleOnly) {
  ContentionMonitor m(true, 2, kCap, nullptr);
  ContentionMark mark;
  int64_t now = 0;
  // The first sample reads steal, with nothing to compare it with.
  for (int i = 0; i <= ContentionMonitor::kStealEvery; ++i, now += kInterval) {
    m.MaybeSample(now, 1, mark);
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
  m.MaybeSample(now, 1, mark);
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
  for (int i = 0; i < 5; ++i) m.MaybeSample(i * kInterval, 1, mark);
  EXPECT_EQ(probes, 0);
  EXPECT_FALSE(mark.measuring);
  EXPECT_EQ(m.PollCapNs(), idle::kUnlimitedPollNs);
  EXPECT_EQ(FormatBackoff(m.Stats()), "off");
}

}  // namespace
}  // namespace haltpool
