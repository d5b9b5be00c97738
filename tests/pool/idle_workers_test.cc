// IdleWorkers, the pool's half of the wake protocol, on its own: announce
// and re-check, WakeOne taking exactly one announced worker (the last to
// announce when none polls), Retire, the polling cap and its gate, and a
// hand-off to a worker that polls, and which workers are awake. The protocol
// under contention is tests/torture's.

#include "runtime/idle_workers.h"

#include <atomic>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/thread_affinity.h"
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

TEST_F(IdleWorkersTest, AWakeNotesTheWakersCpuAndAnAnnouncementClearsIt) {
  ASSERT_TRUE(idle_.AnnounceThenRecheck(1, [] { return false; }));
  EXPECT_EQ(idle_.WakerCpu(1), -1) << "nobody woke it yet";
  const int cpu = arch::ThreadCpus().back();
  {
    const arch::ScopedThreadCpu on(cpu);
    ASSERT_TRUE(on.status().ok()) << on.status();
    EXPECT_TRUE(idle_.WakeOne());
  }
  EXPECT_EQ(idle_.WakerCpu(1), cpu) << "woken from that CPU";
  idle_.Retire(1);
  ASSERT_TRUE(idle_.AnnounceThenRecheck(1, [] { return false; }));
  EXPECT_EQ(idle_.WakerCpu(1), -1) << "a new idle period, no waker yet";
  idle_.Retire(1);
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

// Worker `w` of `idle` on its own thread: announces itself and parks under
// the poll governor through a gate, `periods` times, then takes and runs
// what was handed to it (only then, so a later hand-off may find the slot
// full).
class PollingWorker {
 public:
  PollingWorker(IdleWorkers& idle, idle::WakeWord& word, int w, int periods)
      : thread_([this, &idle, &word, w, periods] {
          idle::IdleOptions o;
          o.governor = "poll";
          absl::StatusOr<idle::Parker> parker = idle::Parker::Create(word, o);
          ASSERT_TRUE(parker.ok()) << parker.status();
          PollSlotGate gate(idle);
          for (int i = 0; i < periods; ++i) {
            ASSERT_TRUE(idle.AnnounceThenRecheck(w, [] { return false; }));
            parker->Park(arch::kNoDeadline, true, nullptr,
                         idle::kUnlimitedPollNs, &gate);
            idle.Retire(w);
            parked_.fetch_add(1);
          }
          if (std::optional<Job> job = idle.TakeHandedOff(w)) job->task();
        }) {}
  ~PollingWorker() { thread_.join(); }

  int parked() const { return parked_.load(); }

 private:
  std::atomic<int> parked_{0};
  std::thread thread_;
};

void WaitUntil(const std::function<bool()>& done) {
  while (!done()) std::this_thread::yield();
}

TEST_F(IdleWorkersTest, WithNobodyPollingHandOffLeavesTheJobToTheCaller) {
  ASSERT_TRUE(idle_.AnnounceThenRecheck(0, [] { return false; }));
  int ran = 0;
  Job job{[&] { ++ran; }, nullptr};
  bool pushed = false;
  EXPECT_FALSE(idle_.HandOff(job, [&](Job&&) { pushed = true; }));
  EXPECT_FALSE(pushed);
  ASSERT_TRUE(job.task) << "the job is still the caller's";
  job.task();
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(Wakes(0), 0u);
  EXPECT_EQ(idle_.num_idle(), 1);
  EXPECT_FALSE(idle_.TakeHandedOff(0).has_value());
}

TEST_F(IdleWorkersTest, AWorkerThatPollsIsHandedTheTaskBeforeItsWake) {
  std::atomic<int> ran{0};
  {
    PollingWorker worker(idle_, words_[1], 1, /*periods=*/1);
    WaitUntil([&] { return words_[1].polling(); });
    Job job{[&] { ran.fetch_add(1); }, nullptr};
    bool pushed = false;
    EXPECT_TRUE(idle_.HandOff(job, [&](Job&&) { pushed = true; }));
    EXPECT_FALSE(pushed);
    EXPECT_EQ(idle_.num_idle(), 0) << "the hand-off took the worker";
  }
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(words_[1].wake_stats().polling, 1u);
  EXPECT_FALSE(idle_.HasHandedOff(1));
}

TEST_F(IdleWorkersTest, ASlotStillFullSendsTheNextTaskToThePushBeforeTheWake) {
  std::atomic<int> ran{0};
  std::optional<Job> pushed;
  {
    PollingWorker worker(idle_, words_[2], 2, /*periods=*/2);
    WaitUntil([&] { return words_[2].polling(); });
    Job first{[&] { ran.fetch_add(1); }, nullptr};
    ASSERT_TRUE(idle_.HandOff(first, [](Job&&) { FAIL(); }));
    // Woken, the worker polls again without taking the first task.
    WaitUntil([&] { return worker.parked() == 1 && words_[2].polling(); });
    EXPECT_TRUE(idle_.HasHandedOff(2));
    Job second{[&] { ran.fetch_add(10); }, nullptr};
    ASSERT_TRUE(idle_.HandOff(second, [&](Job&& j) {
      EXPECT_EQ(worker.parked(), 1) << "the push comes before the wake";
      pushed.emplace(std::move(j));
    }));
  }
  EXPECT_EQ(ran.load(), 1) << "the worker ran the first task";
  ASSERT_TRUE(pushed.has_value());
  pushed->task();
  EXPECT_EQ(ran.load(), 11);
  EXPECT_FALSE(idle_.HasHandedOff(2));
  EXPECT_EQ(words_[2].wake_stats().polling, 2u);
}

// A worker blocked on its word is the only kind not awake: polling, woken
// or running, its thread is runnable (the back-off counts those as the
// pool's own).
TEST_F(IdleWorkersTest, OnlyAWorkerAsleepOnItsWordIsNotAwake) {
  EXPECT_EQ(idle_.num_awake(), kWorkers);
  {
    PollingWorker poller(idle_, words_[1], 1, /*periods=*/1);
    std::thread sleeper([this] {
      idle::IdleOptions o;
      o.governor = "block";
      absl::StatusOr<idle::Parker> parker = idle::Parker::Create(words_[0], o);
      ASSERT_TRUE(parker.ok()) << parker.status();
      ASSERT_TRUE(idle_.AnnounceThenRecheck(0, [] { return false; }));
      parker->Park();
      idle_.Retire(0);
    });
    WaitUntil([&] { return words_[0].asleep() && words_[1].polling(); });
    EXPECT_EQ(idle_.num_awake(), kWorkers - 1);
    words_[0].Unpark();
    sleeper.join();
    EXPECT_EQ(idle_.num_awake(), kWorkers);
    words_[1].Unpark();
  }
  EXPECT_EQ(idle_.num_awake(), kWorkers);
}

}  // namespace
}  // namespace haltpool
