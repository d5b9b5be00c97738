// Faults around the pool's workers: signals delivered to them while they
// poll, sleep or run; a task that blocks for seconds; a process whose
// affinity mask is narrower than the machine. No task may be lost and the
// other workers must go on.

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "arch/cycle_clock.h"
#include "gtest/gtest.h"
#include "runtime/thread_pool.h"

namespace haltpool {
namespace {

std::atomic<int> g_signals{0};
void CountSignal(int) { g_signals.fetch_add(1, std::memory_order_relaxed); }

std::unique_ptr<ThreadPool> MakePool(int workers, const char* governor) {
  PoolOptions options;
  options.workers = workers;
  options.idle.governor = governor;
  absl::StatusOr<std::unique_ptr<ThreadPool>> pool =
      ThreadPool::Create(options, MapEnvironment());
  EXPECT_TRUE(pool.ok()) << pool.status();
  return pool.ok() ? *std::move(pool) : nullptr;
}

// Submits one task and waits for it; false if it has not run within 5 s.
bool RunsAlone(ThreadPool& pool) {
  std::atomic<bool> ran{false};
  if (!pool.Submit([&ran] { ran.store(true); }).ok()) return false;
  const int64_t limit = arch::MonotonicNowNs() + 5000000000;
  while (!ran.load()) {
    if (arch::MonotonicNowNs() > limit) return false;
  }
  return true;
}

class WorkerSignals : public ::testing::TestWithParam<const char*> {};

TEST_P(WorkerSignals, SignalsToWorkersLoseNoWakeAndNoTask) {
  // A handler without SA_RESTART: system calls in the workers (FUTEX_WAIT,
  // io_uring_enter) return EINTR.
  struct sigaction sa = {};
  sa.sa_handler = CountSignal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  std::unique_ptr<ThreadPool> pool = MakePool(2, GetParam());
  ASSERT_NE(pool, nullptr);
  // Each worker's thread id, recorded by a task running on it.
  std::vector<pthread_t> threads(2);
  std::vector<std::atomic<bool>> known(2);
  while (!known[0] || !known[1]) {
    TaskGroup g;
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(pool->Submit(g, [&] {
                        const int w = ThreadPool::CurrentWorkerIndex();
                        threads[w] = pthread_self();
                        known[w] = true;
                        std::this_thread::sleep_for(std::chrono::microseconds(200));
                      }).ok());
    }
    pool->Wait(g);
  }
  std::atomic<bool> stop{false};
  g_signals = 0;
  std::thread sender([&] {
    while (!stop) {
      for (pthread_t t : threads) pthread_kill(t, SIGUSR1);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  // At least 2000 lone tasks, and on until the workers have taken 200
  // signals (a fast build gets through 2000 in a few signal periods).
  int lost = 0;
  const int64_t limit = arch::MonotonicNowNs() + 20000000000;  // 20 s
  for (int i = 0; i < 2000 || (g_signals.load() < 200 &&
                               arch::MonotonicNowNs() < limit);
       ++i) {
    lost += !RunsAlone(*pool);
  }
  TaskGroup burst;
  std::atomic<int> ran{0};
  for (int i = 0; i < 20000; ++i) {
    ASSERT_TRUE(pool->Submit(burst, [&ran] { ++ran; }).ok());
  }
  pool->Wait(burst);
  stop = true;
  sender.join();
  pool->Shutdown();
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_EQ(lost, 0) << "lone tasks that never ran";
  EXPECT_EQ(ran.load(), 20000);
  EXPECT_GE(g_signals.load(), 200) << "the workers were hardly signalled";
}

INSTANTIATE_TEST_SUITE_P(EveryGovernor, WorkerSignals,
                         ::testing::Values("haltpoll", "predictive", "poll",
                                           "block", "fixed"));

TEST(WorkerFaults, ATaskBlockingForSecondsDoesNotStopTheOthers) {
  std::unique_ptr<ThreadPool> pool = MakePool(2, "haltpoll");
  ASSERT_NE(pool, nullptr);
  absl::Mutex mu;
  bool release = false;
  std::atomic<bool> blocker_done{false};
  ASSERT_TRUE(pool->Submit([&] {
                    absl::MutexLock lock(&mu);
                    // Blocks until the test says so, at most 30 s.
                    mu.AwaitWithTimeout(absl::Condition(&release),
                                        absl::Seconds(30));
                    blocker_done = true;
                  }).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // One worker is stuck; the other runs all of these, while it stays stuck.
  TaskGroup others;
  std::atomic<int> ran{0};
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE(pool->Submit(others, [&ran] { ++ran; }).ok());
  }
  pool->Wait(others);
  EXPECT_EQ(ran.load(), 5000);
  EXPECT_FALSE(blocker_done.load()) << "the blocking task ended too soon";
  {
    absl::MutexLock lock(&mu);
    release = true;
  }
  pool->Shutdown();
  EXPECT_TRUE(blocker_done.load());
}

TEST(WorkerFaults, NarrowAffinityMaskGivesFewerWorkers) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "needs at least 2 CPUs";
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  int workers = -1;
  int lone_ok = 0;
  // The mask is per thread: narrow it on a thread of its own.
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) return;
    std::unique_ptr<ThreadPool> pool = MakePool(0, "haltpoll");
    if (pool == nullptr) return;
    workers = pool->size();
    for (int i = 0; i < 100; ++i) lone_ok += RunsAlone(*pool);
  });
  t.join();
  EXPECT_EQ(workers, 1) << "one worker per CPU of the mask";
  EXPECT_EQ(lone_ok, 100);
}

}  // namespace
}  // namespace haltpool
