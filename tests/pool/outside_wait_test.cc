// ThreadPool::Wait from a thread outside the pool: the thread idles on its
// own wake word under the pool's governor (runtime/outside_waiter.h), so a
// polling waiter is woken without a system call and a blocking one by
// FUTEX_WAKE; no wait is lost across groups, threads, pools and option
// changes. No speed is asserted.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "arch/thread_affinity.h"
#include "gtest/gtest.h"
#include "runtime/beside_waker.h"
#include "runtime/config.h"
#include "runtime/cpu_quota.h"
#include "runtime/environment.h"
#include "runtime/pool_stats.h"
#include "runtime/thread_pool.h"

namespace haltpool {
namespace {

// One worker under `governor`, no back-off (so nothing caps the poll) and
// no calibration; the environment is empty.
std::unique_ptr<ThreadPool> MakePool(const char* governor) {
  PoolOptions o;
  o.workers = 1;
  o.backoff = false;
  o.calibrate = false;
  o.idle.governor = governor;
  absl::StatusOr<std::unique_ptr<ThreadPool>> p =
      ThreadPool::Create(o, MapEnvironment());
  EXPECT_TRUE(p.ok()) << p.status();
  return *std::move(p);
}

// Submits one task that sleeps for `ms` milliseconds and waits for it from
// this thread, which is not one of the pool's workers.
void WaitForSleeper(ThreadPool& pool, int ms) {
  TaskGroup group;
  std::atomic<bool> ran{false};
  ASSERT_TRUE(pool.Submit(group,
                          [&] {
                            std::this_thread::sleep_for(
                                std::chrono::milliseconds(ms));
                            ran.store(true);
                          })
                  .ok());
  pool.Wait(group);
  EXPECT_TRUE(ran.load());
}

// Wakes that found the waiter idle: polling, or asleep. A wake that found
// it still on its way into the park (its thread kept from the CPU for the
// whole task, as under a loaded sanitizer run) says nothing about how it
// idles; the tests count the ones that do.
uint64_t FoundIdle(const OutsideWaitStats& s) {
  return s.wakes.polling + s.wakes.syscall;
}

// A waiter polls only with a second CPU for the task.
bool OneUsableCpu() {
  absl::StatusOr<CpuQuota> quota = ProcessCpuQuota();
  return !quota.ok() || quota->usable_cpus < 2;
}

// Waits for 20 ms tasks until one wake found the waiter idle, at most 5
// times: under `governor` the waiter was then polling or asleep.
OutsideWaitStats WaitUntilOneFoundIdle(ThreadPool& pool) {
  for (int i = 0; i < 5 && FoundIdle(pool.Stats().outside_waits) == 0; ++i) {
    WaitForSleeper(pool, 20);
  }
  return pool.Stats().outside_waits;
}

TEST(OutsideWait, APollingWaiterIsWokenWithoutASyscall) {
  if (OneUsableCpu()) GTEST_SKIP() << "one usable CPU: the waiter blocks";
  auto pool = MakePool("poll");
  const OutsideWaitStats s = WaitUntilOneFoundIdle(*pool);
  // The poll governor has no window to run out of.
  EXPECT_EQ(s.wakes.polling, 1u) << FormatOutsideWaits(s);
  EXPECT_EQ(s.wakes.syscall, 0u) << FormatOutsideWaits(s);
}

TEST(OutsideWait, ABlockingWaiterIsWokenByFutexWake) {
  auto pool = MakePool("block");
  const OutsideWaitStats s = WaitUntilOneFoundIdle(*pool);
  EXPECT_EQ(s.wakes.polling, 0u) << FormatOutsideWaits(s);
  EXPECT_EQ(s.wakes.syscall, 1u) << FormatOutsideWaits(s);
}

TEST(OutsideWait, AWaiterDoesNotPollOnTheProcesssOnlyCpu) {
  // Made and waited for on one CPU: the waiter's poll would hold off the
  // task, so it blocks, whatever the governor says.
  const std::vector<int> cpus = arch::ThreadCpus();
  ASSERT_FALSE(cpus.empty());
  std::thread one_cpu([&] {
    ASSERT_TRUE(arch::SetThreadCpus({cpus.front()}).ok());
    auto pool = MakePool("poll");
    const OutsideWaitStats s = WaitUntilOneFoundIdle(*pool);
    EXPECT_EQ(s.wakes.polling, 0u) << FormatOutsideWaits(s);
    EXPECT_EQ(s.wakes.syscall, 1u) << FormatOutsideWaits(s);
  });
  one_cpu.join();
}

TEST(OutsideWait, WithTheBackoffAWaiterDoesNotPollBesideItsWaker) {
  // The waiter and the pool's worker on one CPU of two: after
  // BesideWaker::kInARow wakes from its own CPU the waiter blocks.
  const std::vector<int> cpus = arch::ThreadCpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs, has " << cpus.size();
  PoolOptions o;
  o.workers = 1;
  o.calibrate = false;
  o.idle.governor = "poll";
  o.cpus = {cpus.front()};
  absl::StatusOr<std::unique_ptr<ThreadPool>> pool =
      ThreadPool::Create(o, MapEnvironment());
  ASSERT_TRUE(pool.ok()) << pool.status();
  std::thread beside([&] {
    ASSERT_TRUE(arch::SetThreadCpus({cpus.front()}).ok());
    for (int i = 0; i < 10; ++i) WaitForSleeper(**pool, 5);
  });
  beside.join();
  const OutsideWaitStats s = (*pool)->Stats().outside_waits;
  if (FoundIdle(s) < 5) {
    GTEST_SKIP() << "too few wakes found the waiter idle to judge: "
                 << FormatOutsideWaits(s);
  }
  // Only waits before the kInARow-th wake from its CPU poll; no probe comes
  // within 10.
  EXPECT_LE(s.wakes.polling, static_cast<uint64_t>(BesideWaker::kInARow))
      << FormatOutsideWaits(s);
}

TEST(OutsideWait, AGroupDoneBeforeTheWaitDoesNotPark) {
  auto pool = MakePool("poll");
  TaskGroup group;
  std::atomic<bool> ran{false};
  ASSERT_TRUE(pool->Submit(group, [&] { ran.store(true); }).ok());
  while (!ran.load()) std::this_thread::yield();
  while (group.pending() != 0) std::this_thread::yield();
  pool->Wait(group);
  EXPECT_EQ(pool->Stats().outside_waits.parks, 0u);
}

TEST(OutsideWait, ChangedOptionsReachTheNextWait) {
  if (OneUsableCpu()) GTEST_SKIP() << "one usable CPU: the waiter blocks";
  auto pool = MakePool("block");
  const OutsideWaitStats blocked = WaitUntilOneFoundIdle(*pool);
  EXPECT_EQ(blocked.wakes.polling, 0u) << FormatOutsideWaits(blocked);
  IdleChoices poll;
  poll.governor = "poll";
  ASSERT_TRUE(pool->SetIdleOptions(poll).ok());
  OutsideWaitStats s = blocked;
  for (int i = 0; i < 5 && FoundIdle(s) == FoundIdle(blocked); ++i) {
    WaitForSleeper(*pool, 20);
    s = pool->Stats().outside_waits;
  }
  EXPECT_EQ(s.wakes.polling, 1u) << FormatOutsideWaits(s);
  EXPECT_EQ(s.wakes.syscall, blocked.wakes.syscall) << FormatOutsideWaits(s);
}

TEST(OutsideWait, OneThreadWaitsOnPoolsInTurn) {
  // The thread's waiter is made for one pool at a time: each switch makes
  // it anew, under that pool's governor.
  if (OneUsableCpu()) GTEST_SKIP() << "one usable CPU: the waiter blocks";
  auto polling = MakePool("poll");
  auto blocking = MakePool("block");
  for (int round = 0; round < 3; ++round) {
    WaitForSleeper(*polling, 20);
    WaitForSleeper(*blocking, 20);
  }
  const OutsideWaitStats p = polling->Stats().outside_waits;
  const OutsideWaitStats b = blocking->Stats().outside_waits;
  EXPECT_GE(p.wakes.polling, 1u) << FormatOutsideWaits(p);
  EXPECT_EQ(p.wakes.syscall, 0u) << FormatOutsideWaits(p);
  EXPECT_GE(b.wakes.syscall, 1u) << FormatOutsideWaits(b);
  EXPECT_EQ(b.wakes.polling, 0u) << FormatOutsideWaits(b);
}

TEST(OutsideWait, ManyThreadsWaitingOnOneGroupAllReturn) {
  for (const char* governor : {"poll", "block", "predictive"}) {
    SCOPED_TRACE(governor);
    auto pool = MakePool(governor);
    for (int round = 0; round < 50; ++round) {
      TaskGroup group;
      std::atomic<int> ran{0};
      for (int i = 0; i < 4; ++i) {
        ASSERT_TRUE(pool->Submit(group, [&] { ran.fetch_add(1); }).ok());
      }
      std::vector<std::thread> waiters;
      std::atomic<int> returned{0};
      for (int t = 0; t < 3; ++t) {
        waiters.emplace_back([&] {
          pool->Wait(group);
          EXPECT_EQ(ran.load(), 4);
          returned.fetch_add(1);
        });
      }
      pool->Wait(group);
      for (std::thread& t : waiters) t.join();
      ASSERT_EQ(returned.load(), 3);
    }
  }
}

TEST(OutsideWait, PingPongFromOutsideLosesNoWake) {
  // Every round trip's wake reaches the waiter, whichever state it is in,
  // under each governor; a lost one hangs here.
  for (const char* governor : {"poll", "block", "haltpoll", "predictive"}) {
    SCOPED_TRACE(governor);
    auto pool = MakePool(governor);
    int64_t n = 0;
    for (int i = 0; i < 20000; ++i) {
      TaskGroup group;
      ASSERT_TRUE(pool->Submit(group, [&n] { ++n; }).ok());
      pool->Wait(group);
    }
    EXPECT_EQ(n, 20000);
    const OutsideWaitStats s = pool->Stats().outside_waits;
    // Each park ends on a wake: one of this pool's, or the one wake an
    // earlier pool may have left pending on this thread's word.
    EXPECT_LE(s.parks, s.wakes.total() + 1) << FormatOutsideWaits(s);
    // One wake per group at most: only its last task wakes the waiter.
    EXPECT_LE(s.wakes.total(), 20000u) << FormatOutsideWaits(s);
  }
}

}  // namespace
}  // namespace haltpool
