// Torture of the pool's wake protocol, built with random delays and
// sched_yield() injected at every marked step of the parker and the pool
// (tests/torture/protocol_chaos.cc): for every governor, on more workers than
// CPUs, several outside threads submit tasks (a quarter of which submit a
// child from inside the pool) while timers fall due and I/O round trips run
// on the workers. Every task must run exactly once, every timer exactly once
// and never early, every I/O completion must arrive, and nothing may hang: a
// watchdog fails the test with the counts instead of waiting for Bazel's
// timeout.

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "arch/cycle_clock.h"
#include "arch/thread_affinity.h"
#include "gtest/gtest.h"
#include "runtime/thread_pool.h"
#include "tests/torture/protocol_chaos.h"

namespace haltpool {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kScale = 5;  // Sanitizers run the same test on fewer tasks.
#else
constexpr int kScale = 1;
#endif
constexpr int kSubmitters = 4;
constexpr int kTasksPerSubmitter = 20000 / kScale;
constexpr int kTimers = 400 / kScale;
constexpr int kIoRoundTrips = 2000 / kScale;
constexpr int kWorkers = 3;  // More than the 2 CPUs of the CI machine.
constexpr absl::Duration kHang = absl::Seconds(60);

class PoolTorture : public ::testing::TestWithParam<const char*> {};

// Waits until `done()` or kHang; false on a hang.
template <typename Done>
bool WaitFor(Done done) {
  const absl::Time limit = absl::Now() + kHang;
  while (!done()) {
    if (absl::Now() > limit) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

TEST_P(PoolTorture, EveryTaskTimerAndCompletionExactlyOnce) {
  PoolOptions options;
  options.workers = kWorkers;
  options.idle.governor = GetParam();
  absl::StatusOr<std::unique_ptr<ThreadPool>> created =
      ThreadPool::Create(options, MapEnvironment());
  ASSERT_TRUE(created.ok()) << created.status();
  ThreadPool& pool = **created;
  const uint64_t steps_before = torture::ProtocolSteps();

  // Tasks: ids 0 .. n-1 from outside, n .. 2n-1 for the children.
  const int n = kSubmitters * kTasksPerSubmitter;
  std::vector<std::atomic<int>> runs(2 * n);
  TaskGroup group;
  std::vector<std::thread> submitters;
  for (int s = 0; s < kSubmitters; ++s) {
    submitters.emplace_back([&, s] {
      std::minstd_rand rng(s + 1);
      for (int i = 0; i < kTasksPerSubmitter; ++i) {
        const int id = s * kTasksPerSubmitter + i;
        const bool child = (rng() & 3) == 0;
        if (!child) runs[n + id].store(1);  // No child: counts as run once.
        ASSERT_TRUE(pool.Submit(group,
                                [&, id, child] {
                                  runs[id].fetch_add(1);
                                  if (child) {
                                    ASSERT_TRUE(
                                        pool.Submit(group,
                                                    [&runs, n, id] {
                                                      runs[n + id].fetch_add(1);
                                                    })
                                            .ok());
                                  }
                                })
                        .ok());
        if ((rng() & 63) == 0) std::this_thread::yield();
      }
    });
  }

  // Timers: random delays up to 3 ms, each checks it is not early.
  std::atomic<int> timers_fired{0};
  std::atomic<int> timers_early{0};
  std::minstd_rand rng(99);
  for (int i = 0; i < kTimers; ++i) {
    // The monotonic clock read before the wall clock: SubmitAt's deadline
    // on CLOCK_MONOTONIC is then never before `earliest`.
    const absl::Duration delay = absl::Nanoseconds(rng() % 3000000);
    const int64_t earliest =
        arch::MonotonicNowNs() + absl::ToInt64Nanoseconds(delay);
    ASSERT_TRUE(pool.SubmitAt(absl::Now() + delay,
                              [&, earliest] {
                                if (arch::MonotonicNowNs() < earliest)
                                  ++timers_early;
                                ++timers_fired;
                              })
                    .ok());
  }

  // I/O: round trips over socket pairs, started from tasks on the workers;
  // each sends one byte on one end and receives it on the other.
  constexpr int kPairs = 8;
  int fds[kPairs][2];
  for (auto& p : fds) ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, p), 0);
  std::atomic<int> io_done{0};
  std::atomic<int> io_errors{0};
  for (int i = 0; i < kIoRoundTrips; ++i) {
    const int p = i % kPairs;
    // One pair at a time per chain: each chain's next trip starts from the
    // previous one's completion, so bytes never interleave on a pair.
    if (i >= kPairs) break;
    ASSERT_TRUE(pool.Submit([&, p] {
                      struct Chain {
                        ThreadPool* pool;
                        int a, b, left;
                        char out = 'x', in = 0;
                        std::atomic<int>* done;
                        std::atomic<int>* errors;
                        void Next() {
                          absl::StatusOr<PoolIo> io = pool->Io();
                          if (!io.ok()) {
                            ++*errors;
                            return;
                          }
                          io->Send(a, &out, 1, [this](int r) {
                            if (r != 1) ++*errors;
                            absl::StatusOr<PoolIo> io2 = pool->Io();
                            io2->Recv(b, &in, 1, [this](int r2) {
                              if (r2 != 1 || in != 'x') ++*errors;
                              ++*done;
                              if (--left > 0) {
                                Next();
                              } else {
                                delete this;
                              }
                            });
                          });
                        }
                      };
                      (new Chain{&pool, fds[p][0], fds[p][1],
                                 kIoRoundTrips / kPairs, 'x', 0, &io_done,
                                 &io_errors})
                          ->Next();
                    })
                    .ok());
  }

  for (std::thread& t : submitters) t.join();
  const bool tasks_done = WaitFor([&] { return group.pending() == 0; });
  const bool timers_done = WaitFor([&] { return timers_fired == kTimers; });
  const bool io_finished =
      WaitFor([&] { return io_done == kIoRoundTrips / kPairs * kPairs; });
  const std::string where = absl::StrCat(
      "governor ", GetParam(), ": tasks pending ", group.pending(),
      ", timers fired ", timers_fired.load(), "/", kTimers, ", I/O done ",
      io_done.load(), "/", kIoRoundTrips / kPairs * kPairs);
  ASSERT_TRUE(tasks_done && timers_done && io_finished) << "hung: " << where;
  pool.Wait(group);

  int wrong = 0;
  for (int id = 0; id < 2 * n; ++id) wrong += runs[id].load() != 1;
  EXPECT_EQ(wrong, 0) << "tasks that did not run exactly once; " << where;
  EXPECT_EQ(timers_early.load(), 0) << where;
  EXPECT_EQ(io_errors.load(), 0) << where;
  pool.Shutdown();
  uint64_t run = 0;
  for (const WorkerStats& w : pool.Stats().workers) run += w.tasks_run;
  EXPECT_GE(run, static_cast<uint64_t>(n + kTimers)) << where;
  EXPECT_GT(torture::ProtocolSteps(), steps_before)
      << "the protocol's steps were not hooked: not a torture build";
  EXPECT_GT(torture::ProtocolDelays(), 0u);
  for (auto& p : fds) {
    close(p[0]);
    close(p[1]);
  }
}

// One task at a time: each submission finds every worker idle (polling,
// going to sleep or asleep), so each must wake one or hand its task to one
// that polls; a lost wake leaves the task queued (or in a worker's slot)
// while all workers sleep, and the wait for it times out. Returns the
// workers' statistics.
std::vector<WorkerStats> LoneSubmissions(const PoolOptions& options,
                                         const Environment& env) {
  absl::StatusOr<std::unique_ptr<ThreadPool>> created =
      ThreadPool::Create(options, env);
  EXPECT_TRUE(created.ok()) << created.status();
  if (!created.ok()) return {};
  ThreadPool& pool = **created;
  std::minstd_rand rng(7);
  constexpr int kLone = 20000 / kScale;
  for (int i = 0; i < kLone; ++i) {
    std::atomic<bool> ran{false};
    EXPECT_TRUE(pool.Submit([&ran] { ran.store(true); }).ok());
    // Let the workers get to different points of going idle.
    if ((rng() & 7) == 0) std::this_thread::yield();
    const int64_t limit = arch::MonotonicNowNs() + 5000000000;  // 5 s
    while (!ran.load()) {
      if (arch::MonotonicNowNs() >= limit) {
        ADD_FAILURE() << "governor " << *options.idle.governor
                      << ": submission " << i
                      << " never ran: its wake was lost";
        return {};
      }
      // A worker on this thread's CPU needs it to run the task.
      std::this_thread::yield();
    }
  }
  return pool.Stats().workers;
}

TEST_P(PoolTorture, EveryLoneSubmissionWakesAWorker) {
  PoolOptions options;
  options.workers = 2;
  options.idle.governor = GetParam();
  options.backoff = false;  // Polling governors keep polling: hand-offs.
  const std::vector<WorkerStats> workers =
      LoneSubmissions(options, MapEnvironment());
  // Under `poll` a worker always polls while idle, so submissions hand
  // tasks off: that path was tortured too.
  uint64_t handed_off = 0;
  for (const WorkerStats& w : workers) handed_off += w.tasks_handed_off;
  if (std::string(GetParam()) == "poll") EXPECT_GT(handed_off, 0u);
}

// The same with the worker kept on the submitter's CPU and the back-off on:
// every wake comes from the worker's own CPU, so it idles without polling
// (runtime/beside_waker.h), but for a probing poll in 32 periods; the
// waker's note of its CPU and the switch between a poll cap of 0 and the
// governor's own are tortured with the wakes.
TEST_P(PoolTorture, LoneSubmissionsWakeAWorkerBesideItsWaker) {
  const int cpu = arch::ThreadCpus().back();
  const arch::ScopedThreadCpu on(cpu);
  ASSERT_TRUE(on.status().ok()) << on.status();
  PoolOptions options;
  options.workers = 1;
  options.idle.governor = GetParam();
  const std::vector<WorkerStats> workers = LoneSubmissions(
      options, MapEnvironment(std::map<std::string, std::string>{
                   {"HALTPOOL_CPUS", std::to_string(cpu)}}));
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_GT(workers[0].idles_beside_waker, 0u) << "the path was not taken";
}

INSTANTIATE_TEST_SUITE_P(EveryGovernor, PoolTorture,
                         ::testing::Values("haltpoll", "predictive", "poll",
                                           "block", "fixed"));

}  // namespace
}  // namespace haltpool
