// IdleWorkers, the pool's half of the wake protocol, on its own: announce
// and re-check, WakeOne taking exactly one announced worker (the last to
// announce when none polls), Retire, and the polling cap and its gate. The
// protocol under contention is tests/torture's.

#include "runtime/idle_workers.h"

#include <vector>

#include "gtest/gtest.h"
#include "idle/parker.h"

namespace haltpool {
namespace {

class IdleWorkersTest : public ::testing::Test {
 protected:
  static constexpr int kWorkers = 3;

  IdleWorkersTest()
      : idle_(std::vector<idle::WakeWord*>{&words_[0], &words_[1], &words_[2]},
              /*max_pollers=*/2) {}

  uint64_t Wakes(int w) const { return words_[w].wake_stats().total(); }

  idle::WakeWord words_[kWorkers];
  IdleWorkers idle_;
};

TEST_F(IdleWorkersTest, WakeOneWithNobodyIdleWakesNobody) {
  EXPECT_FALSE(idle_.WakeOne());
  for (int w = 0; w < kWorkers; ++w) EXPECT_EQ(Wakes(w), 0u);
}

TEST_F(IdleWorkersTest, RecheckRunsAfterTheAnnouncement) {
  int seen_idle = -1;
  EXPECT_TRUE(idle_.AnnounceThenRecheck(1, [&] {
    seen_idle = idle_.num_idle();
    return false;
  }));
  EXPECT_EQ(seen_idle, 1);
  EXPECT_EQ(idle_.num_idle(), 1);
}

TEST_F(IdleWorkersTest, WorkFoundInTheRecheckRetiresAtOnce) {
  EXPECT_FALSE(idle_.AnnounceThenRecheck(0, [] { return true; }));
  EXPECT_EQ(idle_.num_idle(), 0);
  EXPECT_FALSE(idle_.WakeOne());
  EXPECT_EQ(Wakes(0), 0u);
}

TEST_F(IdleWorkersTest, WakeOneTakesTheAnnouncedWorker) {
  ASSERT_TRUE(idle_.AnnounceThenRecheck(2, [] { return false; }));
  EXPECT_TRUE(idle_.WakeOne());
  EXPECT_EQ(Wakes(2), 1u);
  EXPECT_EQ(Wakes(0) + Wakes(1), 0u);
  EXPECT_EQ(idle_.num_idle(), 0);
  // Taken: a second wake finds nobody, and the worker's Retire counts
  // nothing twice.
  EXPECT_FALSE(idle_.WakeOne());
  idle_.Retire(2);
  EXPECT_EQ(idle_.num_idle(), 0);
}

TEST_F(IdleWorkersTest, EachWakeTakesADifferentWorker) {
  for (int w = 0; w < kWorkers; ++w) {
    ASSERT_TRUE(idle_.AnnounceThenRecheck(w, [] { return false; }));
  }
  EXPECT_EQ(idle_.num_idle(), kWorkers);
  for (int i = 0; i < kWorkers; ++i) EXPECT_TRUE(idle_.WakeOne());
  EXPECT_FALSE(idle_.WakeOne());
  for (int w = 0; w < kWorkers; ++w) EXPECT_EQ(Wakes(w), 1u) << "worker " << w;
}

TEST_F(IdleWorkersTest, RetiredWorkerIsNotWoken) {
  ASSERT_TRUE(idle_.AnnounceThenRecheck(0, [] { return false; }));
  idle_.Retire(0);
  EXPECT_EQ(idle_.num_idle(), 0);
  EXPECT_FALSE(idle_.WakeOne());
  EXPECT_EQ(Wakes(0), 0u);
}

TEST_F(IdleWorkersTest, PollingSlotsAreCapped) {
  EXPECT_EQ(idle_.max_pollers(), 2);
  EXPECT_TRUE(idle_.TryStartPolling());
  EXPECT_TRUE(idle_.TryStartPolling());
  EXPECT_FALSE(idle_.TryStartPolling());
  EXPECT_EQ(idle_.num_pollers(), 2);
  idle_.StopPolling();
  EXPECT_EQ(idle_.num_pollers(), 1);
  EXPECT_TRUE(idle_.TryStartPolling());
}

TEST_F(IdleWorkersTest, WithNobodyPollingTheLastToAnnounceIsWoken) {
  // Announced in the order 1, 2, 0: the wakes take 0, then 2, then 1,
  // wherever the rotating scan starts.
  for (int w : {1, 2, 0}) {
    ASSERT_TRUE(idle_.AnnounceThenRecheck(w, [] { return false; }));
  }
  for (int expected : {0, 2, 1}) {
    ASSERT_TRUE(idle_.WakeOne());
    EXPECT_EQ(Wakes(expected), 1u) << "worker " << expected;
  }
  // A worker that announces again is the freshest once more.
  idle_.Retire(1);
  ASSERT_TRUE(idle_.AnnounceThenRecheck(1, [] { return false; }));
  ASSERT_TRUE(idle_.AnnounceThenRecheck(2, [] { return false; }));
  ASSERT_TRUE(idle_.AnnounceThenRecheck(0, [] { return false; }));
  ASSERT_TRUE(idle_.WakeOne());
  EXPECT_EQ(Wakes(0), 2u);
}

TEST_F(IdleWorkersTest, TheGateHoldsASlotOnlyWhileAllowedToPoll) {
  PollSlotGate a(idle_), b(idle_), c(idle_);
  EXPECT_TRUE(a.TryEnter());
  EXPECT_TRUE(b.TryEnter());
  EXPECT_FALSE(c.TryEnter());  // Two slots.
  EXPECT_EQ(idle_.num_pollers(), 2);
  a.Leave();
  EXPECT_EQ(idle_.num_pollers(), 1);
  EXPECT_TRUE(c.TryEnter());
  c.Leave();
  b.Leave();
  EXPECT_EQ(idle_.num_pollers(), 0);
  // TakePolled says whether a poll was allowed since it was last asked.
  EXPECT_TRUE(a.TakePolled());
  EXPECT_FALSE(a.TakePolled());
  EXPECT_TRUE(c.TakePolled());
}

}  // namespace
}  // namespace haltpool
