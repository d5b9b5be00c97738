// BesideWaker (runtime/beside_waker.h): a worker stops polling after two
// wakes in a row from its own CPU, polls again after one from another CPU,
// probes with one poll in kProbeEvery periods meanwhile, and periods with
// no known waker change nothing.

#include "runtime/beside_waker.h"

#include "gtest/gtest.h"

namespace haltpool {
namespace {

TEST(BesideWaker, PollsUntilTwoWakesInARowComeFromItsOwnCpu) {
  BesideWaker b;
  EXPECT_TRUE(b.NextMayPoll());
  b.Woken(/*waker_cpu=*/1, /*own_cpu=*/1);
  EXPECT_TRUE(b.NextMayPoll())
      << "one wake beside the waker is not a placement";
  b.Woken(1, 1);
  EXPECT_FALSE(b.NextMayPoll());
  b.Woken(1, 1);
  EXPECT_FALSE(b.NextMayPoll());
}

TEST(BesideWaker, AWakeFromAnotherCpuLetsItPollAgain) {
  BesideWaker b;
  b.Woken(0, 0);
  b.Woken(0, 0);
  ASSERT_FALSE(b.NextMayPoll());
  b.Woken(1, 0);
  EXPECT_TRUE(b.NextMayPoll());
  b.Woken(0, 0);
  EXPECT_TRUE(b.NextMayPoll()) << "the count starts again";
}

TEST(BesideWaker, PeriodsWithoutAKnownWakerChangeNothing) {
  BesideWaker b;
  b.Woken(3, 3);
  b.Woken(-1, 3);  // A deadline ended the period.
  b.Woken(3, -1);  // The worker's CPU unknown.
  EXPECT_TRUE(b.NextMayPoll());
  b.Woken(3, 3);
  EXPECT_FALSE(b.NextMayPoll()) << "the two wakes beside count as in a row";
  b.Woken(-1, 3);
  EXPECT_FALSE(b.NextMayPoll());
}

TEST(BesideWaker, OnePeriodInKProbeEveryPollsToSeeIfThePlacementChanged) {
  BesideWaker b;
  b.Woken(0, 0);
  b.Woken(0, 0);
  int polls = 0;
  for (int i = 0; i < 3 * BesideWaker::kProbeEvery; ++i) {
    if (b.NextMayPoll()) ++polls;
    b.Woken(0, 0);
  }
  EXPECT_EQ(polls, 3);
  b.Woken(1, 0);  // The probe's wake came from elsewhere.
  EXPECT_TRUE(b.NextMayPoll());
  EXPECT_TRUE(b.NextMayPoll());
}

}  // namespace
}  // namespace haltpool
