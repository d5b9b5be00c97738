// ThreadPool: every task runs exactly once, groups, timers, shutdown,
// exceptions, and waiting from inside a worker. No speed is asserted.

#include "runtime/thread_pool.h"

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "arch/cycle_clock.h"
#include "arch/thread_affinity.h"
#include "gtest/gtest.h"
#include "runtime/config.h"

namespace haltpool {
namespace {

// A pool of `workers` under `governor`, or under the profile's if null.
std::unique_ptr<ThreadPool> MakePool(int workers,
                                     const char* governor = nullptr) {
  PoolOptions o;
  o.workers = workers;
  if (governor != nullptr) o.idle.governor = governor;
  absl::StatusOr<std::unique_ptr<ThreadPool>> p = ThreadPool::Create(o);
  EXPECT_TRUE(p.ok()) << p.status();
  return *std::move(p);
}

class PoolPerGovernor : public testing::TestWithParam<const char*> {};

TEST_P(PoolPerGovernor, EveryTaskFromManyThreadsRunsExactlyOnce) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 250000;  // A million in all.
  auto pool = MakePool(3, GetParam());
  std::vector<std::atomic<uint8_t>> ran(kThreads * kPerThread);
  TaskGroup group;
  std::vector<std::thread> submitters;
  for (int t = 0; t < kThreads; ++t) {
    submitters.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::atomic<uint8_t>* slot = &ran[t * kPerThread + i];
        ASSERT_TRUE(
            pool->Submit(
                    group,
                    [slot] { slot->fetch_add(1, std::memory_order_relaxed); })
                .ok());
      }
    });
  }
  for (auto& s : submitters) s.join();
  pool->Wait(group);
  for (size_t i = 0; i < ran.size(); ++i) {
    ASSERT_EQ(ran[i].load(), 1) << "task " << i;
  }
  uint64_t total = 0;
  for (const WorkerStats& w : pool->Stats().workers) total += w.tasks_run;
  EXPECT_EQ(total, ran.size());
}

TEST_P(PoolPerGovernor, SparseSubmissionsAreNeverLost) {
  // Submissions spaced so workers go idle (and, with haltpoll, to sleep)
  // between them: each must still run.
  auto pool = MakePool(2, GetParam());
  for (int i = 0; i < 200; ++i) {
    TaskGroup group;
    std::atomic<int> n{0};
    ASSERT_TRUE(pool->Submit(group, [&] { n++; }).ok());
    pool->Wait(group);
    ASSERT_EQ(n.load(), 1);
    if (i % 20 == 0)
      std::this_thread::sleep_for(std::chrono::microseconds(300));
  }
}

INSTANTIATE_TEST_SUITE_P(Governors, PoolPerGovernor,
                         testing::Values("haltpoll", "predictive", "poll",
                                         "block", "fixed"),
                         [](const auto& info) {
                           return std::string(info.param);
                         });

TEST(ThreadPool, WaitingFromAWorkerRunsOtherTasksInsteadOfDeadlocking) {
  auto pool = MakePool(1);
  TaskGroup outer;
  std::atomic<int> inner_done{0};
  ASSERT_TRUE(
      pool->Submit(outer,
                   [&] {
                     TaskGroup inner;
                     for (int i = 0; i < 10; ++i) {
                       ASSERT_TRUE(
                           pool->Submit(inner, [&] { inner_done++; }).ok());
                     }
                     pool->Wait(inner);  // The only worker waits here.
                     EXPECT_EQ(inner_done.load(), 10);
                   })
          .ok());
  pool->Wait(outer);
  EXPECT_EQ(inner_done.load(), 10);
}

TEST(ThreadPool, ShutdownRunsWhatWasQueuedAndRefusesMore) {
  auto pool = MakePool(2);
  std::atomic<int> n{0};
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(pool->Submit([&] {
                      std::this_thread::sleep_for(
                          std::chrono::microseconds(10));
                      n++;
                    })
                    .ok());
  }
  pool->Shutdown();
  EXPECT_EQ(n.load(), 1000);
  absl::Status s = pool->Submit([] {});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("shut down"), absl::string_view::npos);
  EXPECT_FALSE(pool->SubmitAfter(absl::Milliseconds(1), [] {}).ok());
}

TEST(ThreadPool, ShutdownWhileOtherThreadsSubmitLosesNothing) {
  auto pool = MakePool(2);
  std::atomic<int> accepted{0}, ran{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < 3; ++t) {
    submitters.emplace_back([&] {
      for (;;) {
        if (!pool->Submit([&] { ran++; }).ok()) return;
        accepted++;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  pool->Shutdown();
  for (auto& s : submitters) s.join();
  EXPECT_GT(accepted.load(), 0);
  EXPECT_EQ(ran.load(), accepted.load());
}

TEST(ThreadPool, SubmitAtThePastRunsAndTheInfiniteFutureIsCancelled) {
  auto pool = MakePool(1);
  absl::Notification past_ran;
  std::atomic<bool> future_ran{false};
  ASSERT_TRUE(
      pool->SubmitAt(absl::InfinitePast(), [&] { past_ran.Notify(); }).ok());
  ASSERT_TRUE(
      pool->SubmitAt(absl::InfiniteFuture(), [&] { future_ran = true; }).ok());
  EXPECT_TRUE(past_ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  pool->Shutdown();
  EXPECT_FALSE(future_ran.load());
  EXPECT_EQ(pool->Stats().timers_cancelled, 1u);
}

TEST(ThreadPool, TimersNeverFireEarlyAndFireInDeadlineOrder) {
  auto pool = MakePool(1);
  absl::Mutex mu;
  std::vector<int> order;
  std::vector<int64_t> late_by(8, -1);
  TaskGroup group;
  // 20 ms from now on both clocks; the monotonic one read first, so that
  // SubmitAt's monotonic deadline is never before `due` below.
  const int64_t base = arch::MonotonicNowNs() + 20000000;
  const absl::Time wall_base = absl::Now() + absl::Milliseconds(20);
  // Submitted out of order; due 1 ms apart.
  for (int i : {5, 2, 7, 0, 3, 6, 1, 4}) {
    const int64_t due = base + i * 1000000;
    ASSERT_TRUE(pool->Submit(group, [] {}).ok());
    ASSERT_TRUE(pool->SubmitAt(wall_base + absl::Milliseconds(i),
                               [&, i, due] {
                                 const int64_t now = arch::MonotonicNowNs();
                                 absl::MutexLock lock(&mu);
                                 order.push_back(i);
                                 late_by[i] = now - due;
                               })
                    .ok());
  }
  pool->Wait(group);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  pool->Shutdown();
  absl::MutexLock lock(&mu);
  ASSERT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  for (int i = 0; i < 8; ++i)
    EXPECT_GE(late_by[i], 0) << "timer " << i << " fired early";
  EXPECT_EQ(pool->Stats().timers_cancelled, 0u);
}

TEST(ThreadPool, ATimerFallsDueWhileAnotherTimersTaskRuns) {
  // The first timer's task runs until the second timer's task has run: the
  // worker running it must not keep the second timer from the idle one.
  auto pool = MakePool(2);
  absl::Notification second_ran, first_done;
  // Atomic: the system Abseil's Notification is invisible to ThreadSanitizer.
  std::atomic<bool> first_saw_second{false};
  ASSERT_TRUE(pool->SubmitAfter(absl::Milliseconds(5),
                                [&] {
                                  first_saw_second =
                                      second_ran.WaitForNotificationWithTimeout(
                                          absl::Seconds(10));
                                  first_done.Notify();
                                })
                  .ok());
  ASSERT_TRUE(
      pool->SubmitAfter(absl::Milliseconds(20), [&] { second_ran.Notify(); })
          .ok());
  ASSERT_TRUE(first_done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_TRUE(first_saw_second.load())
      << "the second timer waited for the first timer's task";
}

TEST(ThreadPool, TimersNotDueAtShutdownAreCancelledAndCounted) {
  auto pool = MakePool(2);
  std::atomic<int> ran{0};
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(pool->SubmitAfter(absl::Seconds(30), [&] { ran++; }).ok());
  }
  ASSERT_TRUE(pool->SubmitAfter(absl::ZeroDuration(), [&] { ran++; }).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  pool->Shutdown();
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(pool->Stats().timers_cancelled, 5u);
}

TEST(ThreadPool, AThrowingTaskLeavesItsWorkerAlive) {
  std::atomic<int> handled{0};
  PoolOptions o;
  o.workers = 1;
  o.on_exception = [&](std::exception_ptr) { handled++; };
  auto pool = *ThreadPool::Create(o);
  TaskGroup group;
  std::atomic<int> after{0};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        pool->Submit(group, [] { throw std::runtime_error("boom"); }).ok());
    ASSERT_TRUE(pool->Submit(group, [&] { after++; }).ok());
  }
  pool->Wait(group);
  EXPECT_EQ(after.load(), 3);
  EXPECT_EQ(handled.load(), 3);
  EXPECT_EQ(pool->Stats().workers[0].exceptions, 3u);
}

TEST(ThreadPool, BadOptionsAreRefused) {
  PoolOptions o;
  o.workers = -1;
  EXPECT_EQ(ThreadPool::Create(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.workers = 1;
  o.idle.governor = "nope";
  absl::Status s = ThreadPool::Create(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("nope"), absl::string_view::npos);
}

TEST(ThreadPool, StatsCountElidedWakes) {
  PoolOptions o;
  o.workers = 1;
  o.idle.governor = "poll";
  o.backoff = false;  // A busy machine must not stop the polling counted.
  auto pool = *ThreadPool::Create(o);
  for (int i = 0; i < 100; ++i) {
    TaskGroup g;
    ASSERT_TRUE(pool->Submit(g, [] {}).ok());
    pool->Wait(g);
    // Time for the worker to go idle and poll: a submit that comes while it
    // still runs or retires finds it busy, which is no wake at all.
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const WorkerStats w = pool->Stats().workers[0];
  EXPECT_EQ(w.tasks_run, 100u);
  EXPECT_EQ(w.idle.wakes.syscall, 0u);  // A polling worker needs no syscall.
  EXPECT_GT(w.idle.wakes.polling, 0u);
  // A submit that finds the worker polling hands it the task, so it
  // reaches it with no queue between.
  EXPECT_GT(w.tasks_handed_off, 0u);
  EXPECT_LE(w.tasks_handed_off, w.idle.wakes.polling);
}

}  // namespace
}  // namespace haltpool

namespace haltpool {
namespace {

TEST(PoolStatsFormat, TextAndJsonCarryEveryWorker) {
  PoolOptions o;
  o.workers = 2;
  auto pool = *ThreadPool::Create(o, MapEnvironment());
  TaskGroup g;
  ASSERT_TRUE(pool->Submit(g, [] {}).ok());
  pool->Wait(g);
  const PoolStats stats = pool->Stats();
  const std::string json = FormatPoolStatsJson(stats);
  EXPECT_EQ(json.rfind("{\"timers_cancelled\":0,\"max_pollers\":1,"
                       "\"calibration\":{\"measured\":true,",
                       0),
            0u)
      << json;
  EXPECT_NE(json.find("},\"workers\":["), std::string::npos) << json;
  EXPECT_NE(json.find("{\"index\":0,"), std::string::npos) << json;
  EXPECT_NE(json.find("{\"index\":1,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"idle\":{\"label\":\"worker 1\""), std::string::npos)
      << json;
  EXPECT_EQ(json.back(), '}');
  const std::string text = FormatPoolStatsText(stats);
  EXPECT_NE(text.find("analyzing worker 0:"), std::string::npos) << text;
  EXPECT_NE(text.find("analyzing worker 1:"), std::string::npos) << text;
  EXPECT_NE(text.find("Tasks: "), std::string::npos) << text;
  EXPECT_NE(text.find("Timers cancelled at shutdown: 0"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Calibration: block wake "), std::string::npos) << text;
  // SetIdleOptions changes (tests/pool/set_idle_options_test.cc has more).
  EXPECT_NE(text.find("Idle options: generation 0\nPlacement: "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Idle options: as started\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nOutside waits: "), std::string::npos) << text;
  EXPECT_NE(text.find("Idle beside its waker, no poll: "), std::string::npos)
      << text;
  EXPECT_NE(
      json.find(",\"tasks_handed_off\":0,\"exceptions\":0,"
                "\"idles_beside_waker\":0,\"idle_options_generation\":0,"),
      std::string::npos)
      << json;
  EXPECT_NE(json.find("},\"idle_options\":{\"changes\":0,"
                      "\"last_change_at_unix_ns\":null,\"last_change\":\"\"},"
                      "\"outside_waits\":{\"parks\":"),
            std::string::npos)
      << json;
}

TEST(PoolCalibration, TheMeasuredWakeCostIsTheBlockStatesExitLatency) {
  PoolOptions o;
  o.workers = 1;
  auto pool = *ThreadPool::Create(o, MapEnvironment());
  const PoolStats stats = pool->Stats();
  ASSERT_TRUE(stats.calibration.measured) << stats.calibration.note;
  const idle::IdleState& block =
      stats.workers[0].idle.states[idle::kBlockState];
  EXPECT_EQ(block.exit_latency_ns, stats.calibration.block_wake_ns);
  EXPECT_EQ(block.target_residency_ns, 2 * stats.calibration.block_wake_ns);
}

TEST(PoolOptionsFromCode, AGovernorEqualToTheDefaultSticksOnAProfiledHost) {
  // kvm-shared's profile says predictive; the code says haltpoll, which is
  // also the built-in default. The code's choice is what runs.
  PoolOptions o;
  o.workers = 1;
  o.idle.governor = "haltpoll";
  o.idle.haltpoll.poll_ns = PoolConfig{}.idle.haltpoll.poll_ns;
  using Env = std::map<std::string, std::string>;
  auto pool = *ThreadPool::Create(
      o, MapEnvironment(Env{{"HALTPOOL_HYPERVISOR", "kvm-shared"}}));
  const PoolStats stats = pool->Stats();
  EXPECT_EQ(stats.workers[0].idle.governor, "haltpoll");
  // The environment still has the last word.
  auto overridden = *ThreadPool::Create(
      o, MapEnvironment(Env{{"HALTPOOL_HYPERVISOR", "kvm-shared"},
                            {"HALTPOOL_GOVERNOR", "block"}}));
  EXPECT_EQ(overridden->Stats().workers[0].idle.governor, "block");
}

TEST(PoolOptionsFromCode, APoolFromAResolvedConfigRunsItAsItIs) {
  const std::map<std::string, std::string> env = {
      {"HALTPOOL_HYPERVISOR", "xen"}, {"HALTPOOL_CALIBRATE", "0"}};
  absl::StatusOr<Config> config = ResolveConfig({}, MapEnvironment(env));
  ASSERT_TRUE(config.ok()) << config.status();
  config->pool.workers = 1;
  config->pool.idle.governor = "fixed";
  config->pool.idle.fixed_poll_ns = 3000;
  auto pool = *ThreadPool::Create(*config);
  const PoolStats stats = pool->Stats();
  ASSERT_EQ(stats.workers.size(), 1u);
  EXPECT_EQ(stats.workers[0].idle.governor, "fixed");
  EXPECT_EQ(stats.workers[0].idle.states[idle::kBlockState].exit_latency_ns,
            25000)
      << "Xen's profile, not resolved again";
}

TEST(PoolOptionsFromCode, AResolvedConfigIsCheckedAgain) {
  absl::StatusOr<Config> config = ResolveConfig({}, MapEnvironment());
  ASSERT_TRUE(config.ok()) << config.status();
  Config bad = *config;
  bad.pool.workers = -1;
  absl::StatusOr<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create(bad);
  ASSERT_FALSE(pool.ok());
  EXPECT_NE(pool.status().message().find("HALTPOOL_WORKERS=-1"),
            absl::string_view::npos)
      << pool.status();
  EXPECT_FALSE(ThreadPool::Create(Config{}).ok()) << "never resolved";
}

TEST(PoolCalibration, CostsSetInCodeAreNotCalibratedAway) {
  PoolOptions o;
  o.workers = 1;
  o.idle.block_exit_latency_ns = 7000;
  o.idle.block_target_residency_ns = 9000;
  o.idle.wake_margin_ns = 30000;
  auto pool = *ThreadPool::Create(o, MapEnvironment());
  const PoolStats stats = pool->Stats();
  const idle::IdleState& block =
      stats.workers[0].idle.states[idle::kBlockState];
  EXPECT_EQ(block.exit_latency_ns, 7000);
  EXPECT_EQ(block.target_residency_ns, 9000);
  EXPECT_NE(FormatPoolStatsText(stats).find("Calibration: not needed"),
            std::string::npos);
}

TEST(PoolCalibration, OffKeepsTheProfilesCosts) {
  PoolOptions o;
  o.workers = 1;
  auto pool =
      *ThreadPool::Create(o, MapEnvironment({{"HALTPOOL_CALIBRATE", "0"},
                                             {"HALTPOOL_HYPERVISOR", "xen"}}));
  const PoolStats stats = pool->Stats();
  EXPECT_FALSE(stats.calibration.measured);
  const idle::IdleState& block =
      stats.workers[0].idle.states[idle::kBlockState];
  EXPECT_EQ(block.exit_latency_ns, 25000);  // Xen's profile.
  EXPECT_NE(FormatPoolStatsText(stats).find("Calibration: off"),
            std::string::npos);
}

}  // namespace
}  // namespace haltpool

namespace haltpool {
namespace {

// The pool's back-off on injected contention readings: it backs off while
// they say contended, stops polling, and recovers when they go quiet.
TEST(PoolBackoff, ReactsToInjectedContentionAndRecovers) {
  std::atomic<bool> contended{false};
  PoolOptions o;
  o.workers = 2;
  o.idle.governor = "poll";
  o.contention_probe = [&contended] {
    idle::ContentionSample s;
    s.usable_cpus = 2;
    s.runnable = contended.load() ? 9 : 1;
    return s;
  };
  auto pool = *ThreadPool::Create(o, MapEnvironment());
  // Idle periods drive the sampling: submit small tasks until `want`.
  auto drive_until = [&](auto want) {
    for (int i = 0; i < 2000 && !want(pool->Stats().backoff); ++i) {
      TaskGroup g;
      ASSERT_TRUE(pool->Submit(g, [] {}).ok());
      pool->Wait(g);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  };
  drive_until([](const BackoffStats& b) { return b.samples >= 3; });
  EXPECT_EQ(pool->Stats().backoff.level, 0);
  contended = true;
  drive_until([](const BackoffStats& b) {
    return b.level == idle::PollBackoff::kMaxLevel;
  });
  BackoffStats b = pool->Stats().backoff;
  EXPECT_EQ(b.level, idle::PollBackoff::kMaxLevel);
  EXPECT_GE(b.backed_off, static_cast<uint64_t>(idle::PollBackoff::kMaxLevel));
  EXPECT_NE(
      FormatPoolStatsText(pool->Stats()).find("(poll cap now 0, no polling)"),
      std::string::npos);
  EXPECT_EQ(b.last.runnable, 9);
  // No polling now: a wake must be a FUTEX_WAKE or find the worker running.
  const uint64_t polled_before = pool->Stats().workers[0].idle.wakes.polling +
                                 pool->Stats().workers[1].idle.wakes.polling;
  for (int i = 0; i < 20; ++i) {
    TaskGroup g;
    ASSERT_TRUE(pool->Submit(g, [] {}).ok());
    pool->Wait(g);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const PoolStats after = pool->Stats();
  EXPECT_EQ(
      after.workers[0].idle.wakes.polling + after.workers[1].idle.wakes.polling,
      polled_before);
  contended = false;
  drive_until([](const BackoffStats& b) { return b.level == 0; });
  b = pool->Stats().backoff;
  EXPECT_EQ(b.level, 0);
  EXPECT_EQ(b.recovered, 1u);
  EXPECT_NE(FormatPoolStatsText(pool->Stats()).find("Back-off: level 0 of 4"),
            std::string::npos);
}

TEST(PoolBackoff, OffNeverSamples) {
  PoolOptions o;
  o.workers = 1;
  auto pool = *ThreadPool::Create(
      o, MapEnvironment(
             std::map<std::string, std::string>{{"HALTPOOL_BACKOFF", "0"}}));
  for (int i = 0; i < 20; ++i) {
    TaskGroup g;
    ASSERT_TRUE(pool->Submit(g, [] {}).ok());
    pool->Wait(g);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const BackoffStats b = pool->Stats().backoff;
  EXPECT_FALSE(b.enabled);
  EXPECT_EQ(b.samples, 0u);
  EXPECT_EQ(FormatBackoff(b), "off");
}

// A worker kept on the submitter's CPU (HALTPOOL_CPUS and a pinned
// submitter) is woken from its own CPU every time: after two such wakes it
// idles without polling (runtime/beside_waker.h), and with the back-off off
// it polls as its governor says. `poll` would otherwise poll every period.
WorkerStats BesideItsWaker(const std::string& backoff) {
  const int cpu = arch::ThreadCpus().back();
  const arch::ScopedThreadCpu on(cpu);
  EXPECT_TRUE(on.status().ok()) << on.status();
  PoolOptions o;
  o.workers = 1;
  o.idle.governor = "poll";
  auto pool =
      *ThreadPool::Create(o, MapEnvironment(std::map<std::string, std::string>{
                                 {"HALTPOOL_CPUS", std::to_string(cpu)},
                                 {"HALTPOOL_BACKOFF", backoff}}));
  for (int i = 0; i < 20; ++i) {
    TaskGroup g;
    EXPECT_TRUE(pool->Submit(g, [] {}).ok());
    pool->Wait(g);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const PoolStats stats = pool->Stats();
  EXPECT_NE(FormatPoolStatsText(stats).find("Idle beside its waker, no poll: "),
            std::string::npos);
  return stats.workers[0];
}

TEST(PoolBesideWaker, AWorkerOnItsWakersCpuStopsPolling) {
  const WorkerStats w = BesideItsWaker("1");
  EXPECT_GE(w.idles_beside_waker, 10u);
  // Blocked, so the submitter's wakes found it asleep (the first two
  // periods polled, before two wakes showed the placement).
  EXPECT_GE(w.idle.wakes.syscall, 10u);
}

TEST(PoolBesideWaker, WithTheBackOffOffItPollsAsTheGovernorSays) {
  const WorkerStats w = BesideItsWaker("0");
  EXPECT_EQ(w.idles_beside_waker, 0u);
  // `poll` never blocks: no wake found it asleep.
  EXPECT_EQ(w.idle.wakes.syscall, 0u);
}

}  // namespace
}  // namespace haltpool
