// Calibration (idle/calibration.h) on this machine: it measures both states
// within its bounds and quickly, and the process-wide result is computed
// once. No timing claims: only that the numbers are there and sane.

#include "idle/calibration.h"

#include <sched.h>

#include "gtest/gtest.h"

namespace haltpool::idle {
namespace {

// A machine busy with other work (a build beside the tests) can stall one
// round trip past the limit, which aborts that calibration with a note, as
// designed; a few tries in a row that all stall are a failure.
constexpr int kTries = 3;

TEST(Calibration, MeasuresTheBlockStateInMilliseconds) {
  Calibration c = Calibrate();
  for (int i = 1; i < kTries && !c.measured; ++i) c = Calibrate();
  ASSERT_TRUE(c.measured) << kTries << " tries, the last: " << c.note;
  EXPECT_GT(c.block_wake_ns, 0);
  EXPECT_LT(c.block_wake_ns, kCalibrationStallNs);
  EXPECT_EQ(c.round_trips, kCalibrationBlockRoundTrips);
  // Every timed wait waited its full time, and ended after it: a timer fires
  // at its deadline at the earliest, and the wake and the clock read after
  // it take time.
  EXPECT_GE(c.took_ns, kCalibrationTimedWaits * kCalibrationTimedWaitNs);
  EXPECT_GT(c.timed_wait_late_ns, 0);
  EXPECT_LT(c.timed_wait_late_ns, kCalibrationStallNs);
  // A stalled round trip aborts; the whole run is bounded by the stall
  // limit per round trip, far below a second on any machine that passes.
  EXPECT_LT(c.took_ns, 2000000000);
}

TEST(Calibration, PollsOnlyWithTwoCpus) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const Calibration c = Calibrate();
  if (CPU_COUNT(&set) >= 2) {
    EXPECT_GT(c.poll_wake_ns, 0) << c.note;
    EXPECT_TRUE(c.cross_cpu);
  } else {
    EXPECT_EQ(c.poll_wake_ns, 0);
    EXPECT_EQ(c.note, "poll: not measured with one CPU");
  }
}

TEST(Calibration, OneCpuSkipsThePollState) {
  cpu_set_t old_set;
  ASSERT_EQ(sched_getaffinity(0, sizeof old_set, &old_set), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &old_set)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const Calibration c = Calibrate();
  ASSERT_EQ(sched_setaffinity(0, sizeof old_set, &old_set), 0);
  EXPECT_TRUE(c.measured) << c.note;
  EXPECT_FALSE(c.cross_cpu);
  EXPECT_EQ(c.poll_wake_ns, 0);
  EXPECT_EQ(c.note, "poll: not measured with one CPU");
}

TEST(Calibration, TheProcessResultIsComputedOnce) {
  const Calibration& a = ProcessCalibration();
  const Calibration& b = ProcessCalibration();
  EXPECT_EQ(&a, &b);
  EXPECT_TRUE(a.measured) << a.note;
}

}  // namespace
}  // namespace haltpool::idle
