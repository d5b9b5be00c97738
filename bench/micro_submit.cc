// bench/micro_submit (Google Benchmark): what ThreadPool::Submit of a small
// task costs, against the mutex + condition-variable pool a server would
// write by hand (bench/condvar_pool.h) and a bare std::mutex + std::deque
// push. Three situations, each row's time is per task:
//   BM_SubmitBatch    an outside thread submits kBatch tasks and waits
//                     until all have run (submit, wake, run and the wait).
//   BM_SubmitToIdle   one Submit to a one-worker pool whose worker is idle
//                     (polling or asleep, by governor); only the call is
//                     timed, with the cycle counter.
//   BM_SubmitToBusy   Submit while the one worker is busy with a long task:
//                     the push alone, nobody to wake.
//
// ./bazelw run -c opt //bench:micro_submit

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/cpu_wait.h"
#include "arch/cycle_clock.h"
#include "bench/condvar_pool.h"
#include "bench/micro_main.h"
#include "benchmark/benchmark.h"
#include "runtime/pool_options.h"
#include "runtime/pool_stats.h"
#include "runtime/task_group.h"
#include "runtime/thread_pool.h"

namespace haltpool::bench {
namespace {

// Tasks per batch in BM_SubmitBatch.
constexpr int kBatch = 1000;
// Submits between two drains in BM_SubmitToBusy: the queue stays small
// enough to sit in the cache, as a busy pool's would.
constexpr int kBusyBatch = 256;
// How long the worker is left alone before a timed submit to an idle pool:
// enough for it to reach its idle state (a FUTEX_WAIT takes a few
// microseconds to enter), short enough for many samples, and clear of
// haltpoll's 50 us grow_start: an idle period of just over 50 us would
// leave its window one step short of every wake (measured: half the runs
// polled, half slept).
constexpr int64_t kSettleNs = 30000;
// Timed submits per BM_SubmitToIdle row: a fixed count, since each costs
// kSettleNs of untimed settling (about 0.04 s a row).
constexpr int kIdleSubmits = 1000;

// A pool of `workers` (0: one per CPU) idling under `governor`, with the
// poll back-off on or off.
std::unique_ptr<ThreadPool> MakePool(int workers, const std::string& governor,
                                     bool backoff = true) {
  PoolOptions options;
  options.workers = workers;
  options.idle.governor = governor;
  options.backoff = backoff;
  absl::StatusOr<std::unique_ptr<ThreadPool>> pool =
      ThreadPool::Create(options);
  if (!pool.ok()) {
    absl::FPrintF(stderr, "micro_submit: %s\n", pool.status().message());
    std::abort();
  }
  return *std::move(pool);
}

// Submit for either pool; the benchmark is meaningless if it fails.
template <typename F>
void SubmitTo(ThreadPool& pool, F&& f) {
  if (!pool.Submit(std::forward<F>(f)).ok()) std::abort();
}
template <typename F>
void SubmitTo(CondvarPool& pool, F&& f) {
  pool.Submit(std::forward<F>(f));
}

// Waits until `counter` reaches `target` (counter.notify_all() at the end).
void WaitFor(std::atomic<int64_t>& counter, int64_t target) {
  for (int64_t v; (v = counter.load(std::memory_order_acquire)) != target;) {
    counter.wait(v, std::memory_order_acquire);
  }
}

// Spins until `ns` have passed.
void SpinFor(int64_t ns) {
  const int64_t until = arch::MonotonicNowNs() + ns;
  while (arch::MonotonicNowNs() < until) arch::CpuRelax();
}

// The wake counters of every worker, as shares of the tasks submitted.
void ReportWakes(benchmark::State& state, const ThreadPool& pool,
                 int64_t submitted) {
  if (submitted == 0) return;
  const PoolStats stats = pool.Stats();
  idle::WakeStats w;
  for (const WorkerStats& ws : stats.workers) {
    w.polling += ws.idle.wakes.polling;
    w.syscall += ws.idle.wakes.syscall;
  }
  state.counters["futex_pct"] = 100.0 * w.syscall / submitted;
  state.counters["polled_pct"] = 100.0 * w.polling / submitted;
  // The poll back-off under contention: 0 polls as the governor says.
  state.counters["backoff_level"] = stats.backoff.level;
}

// What the tasks a benchmark submits signal back. Declared before the pool
// in each benchmark, so the pool's workers are joined before it goes: a
// task may still touch it after the benchmark thread saw its last signal.
struct Signals {
  std::atomic<int64_t> ran{0};       // Tasks run.
  std::atomic<int> ran_on{-1};       // The CPU the last one ran on.
  std::atomic<bool> hold{false};     // The holding task spins while set.
  std::atomic<bool> holding{false};  // The holding task has started.
};

// --- BM_SubmitBatch ---------------------------------------------------------

void HaltpoolBatch(benchmark::State& state, const std::string& governor) {
  Signals signals;
  std::unique_ptr<ThreadPool> pool = MakePool(0, governor);
  std::atomic<int64_t>& ran = signals.ran;
  while (state.KeepRunningBatch(kBatch)) {
    TaskGroup group;
    for (int i = 0; i < kBatch; ++i) {
      if (!pool->Submit(group,
                        [&ran] { ran.fetch_add(1, std::memory_order_relaxed); })
               .ok()) {
        std::abort();
      }
    }
    pool->Wait(group);
  }
  ReportWakes(state, *pool, state.iterations());
  state.SetLabel(absl::StrCat("per task; ", pool->size(), " workers, governor=",
                              governor, "; TaskGroup + Wait"));
}

void BM_SubmitBatchCondvar(benchmark::State& state) {
  const int workers = static_cast<int>(std::thread::hardware_concurrency());
  Signals signals;
  CondvarPool pool(workers);
  std::atomic<int64_t>& ran = signals.ran;
  int64_t target = 0;
  while (state.KeepRunningBatch(kBatch)) {
    target += kBatch;
    for (int i = 0; i < kBatch; ++i) {
      pool.Submit([&ran, target] {
        if (ran.fetch_add(1, std::memory_order_acq_rel) + 1 == target) {
          ran.notify_all();
        }
      });
    }
    WaitFor(ran, target);
  }
  state.SetLabel(absl::StrCat("per task; condvar pool, ", workers,
                              " workers; atomic count + wait"));
}

// --- BM_SubmitToIdle --------------------------------------------------------

// One timed Submit per iteration to `pool`, whose one worker has had
// kSettleNs to go idle after its last task.
template <typename Pool>
void SubmitToIdle(benchmark::State& state, Pool& pool, Signals& signals) {
  const double cycles_per_ns = arch::CyclesPerNs();
  std::atomic<int64_t>& ran = signals.ran;
  std::atomic<int>& ran_on = signals.ran_on;
  int64_t same_cpu = 0;
  std::vector<double> samples_ns;
  samples_ns.reserve(kIdleSubmits);
  for (auto _ : state) {
    SpinFor(kSettleNs);
    const uint64_t t0 = arch::ReadCycles();
    SubmitTo(pool, [&ran, &ran_on] {
      ran_on.store(sched_getcpu(), std::memory_order_relaxed);
      ran.fetch_add(1, std::memory_order_release);
      ran.notify_one();
    });
    const uint64_t t1 = arch::ReadCycles();
    const int submitted_on = sched_getcpu();
    const double ns = static_cast<double>(t1 - t0) / cycles_per_ns;
    state.SetIterationTime(ns * 1e-9);
    samples_ns.push_back(ns);
    WaitFor(ran, static_cast<int64_t>(samples_ns.size()));
    same_cpu += ran_on.load(std::memory_order_relaxed) == submitted_on;
  }
  if (samples_ns.empty()) return;
  // The mean (the Time column) follows the outliers; the median and the
  // 99th percentile say whether there are any.
  std::sort(samples_ns.begin(), samples_ns.end());
  state.counters["p50_ns"] = samples_ns[samples_ns.size() / 2];
  state.counters["p99_ns"] = samples_ns[samples_ns.size() * 99 / 100];
  // How often the woken worker ran on the submitter's own CPU: the
  // scheduler may put a woken thread there, and then the submitter waits
  // until that thread leaves the CPU, which the Submit time includes.
  state.counters["same_cpu_pct"] =
      100.0 * static_cast<double>(same_cpu) / samples_ns.size();
}

// The poll back-off is off: the benchmark thread spins while the worker
// settles, which the back-off reads as contention and answers by not
// polling at all, so the row would not show the governor's state.
void HaltpoolToIdle(benchmark::State& state, const std::string& governor) {
  Signals signals;
  std::unique_ptr<ThreadPool> pool = MakePool(1, governor, /*backoff=*/false);
  SubmitToIdle(state, *pool, signals);
  ReportWakes(state, *pool, state.iterations());
  state.SetLabel(absl::StrCat("one Submit, idle worker; governor=", governor,
                              ", back-off off"));
}

void BM_SubmitToIdleCondvar(benchmark::State& state) {
  Signals signals;
  CondvarPool pool(1);
  SubmitToIdle(state, pool, signals);
  state.SetLabel("one Submit, idle worker; condvar pool (notify_one)");
}

// --- BM_SubmitToBusy --------------------------------------------------------

// Submits kBusyBatch tiny tasks at a time (timed) while the pool's one
// worker runs a task that spins until told to stop; between batches, with
// the timer paused, the worker drains the queue and is occupied again.
template <typename Pool>
void SubmitToBusy(benchmark::State& state, Pool& pool, Signals& signals) {
  std::atomic<int64_t>& ran = signals.ran;
  std::atomic<bool>& hold = signals.hold;
  std::atomic<bool>& holding = signals.holding;
  int64_t submitted = 0;
  auto occupy = [&] {
    hold.store(true, std::memory_order_relaxed);
    holding.store(false, std::memory_order_relaxed);
    SubmitTo(pool, [&hold, &holding] {
      holding.store(true, std::memory_order_release);
      while (hold.load(std::memory_order_acquire)) arch::CpuRelax();
    });
    while (!holding.load(std::memory_order_acquire)) arch::CpuRelax();
  };
  // With one worker, the tasks run only after the holding task returned.
  auto drain = [&] {
    hold.store(false, std::memory_order_release);
    WaitFor(ran, submitted);
  };
  occupy();
  while (state.KeepRunningBatch(kBusyBatch)) {
    for (int i = 0; i < kBusyBatch; ++i) {
      SubmitTo(pool, [&ran] {
        ran.fetch_add(1, std::memory_order_release);
        ran.notify_one();
      });
    }
    submitted += kBusyBatch;
    state.PauseTiming();
    drain();
    occupy();
    state.ResumeTiming();
  }
  // The last holding task ends before the pool's workers are joined.
  hold.store(false, std::memory_order_release);
}

void BM_SubmitToBusyHaltpool(benchmark::State& state) {
  Signals signals;
  std::unique_ptr<ThreadPool> pool = MakePool(1, "haltpoll");
  SubmitToBusy(state, *pool, signals);
  state.SetLabel("one Submit, worker busy; haltpool");
}

void BM_SubmitToBusyCondvar(benchmark::State& state) {
  Signals signals;
  CondvarPool pool(1);
  SubmitToBusy(state, pool, signals);
  state.SetLabel("one Submit, worker busy; condvar pool");
}

// The floor: lock a std::mutex, push a std::function onto a std::deque,
// unlock; one thread, the deque emptied between batches (not timed).
void BM_MutexDequePush(benchmark::State& state) {
  std::mutex mu;
  std::deque<std::function<void()>> queue;
  std::atomic<int64_t> sink{0};
  while (state.KeepRunningBatch(kBusyBatch)) {
    for (int i = 0; i < kBusyBatch; ++i) {
      std::lock_guard<std::mutex> lock(mu);
      queue.push_back(
          [&sink] { sink.fetch_add(1, std::memory_order_relaxed); });
    }
    state.PauseTiming();
    queue.clear();
    state.ResumeTiming();
  }
  state.SetLabel("one push; std::mutex + std::deque<std::function>");
}

void RegisterAll() {
  for (const char* governor : {"haltpoll", "poll", "block"}) {
    benchmark::RegisterBenchmark(
        absl::StrCat("BM_SubmitBatch/haltpool:", governor).c_str(),
        [governor](benchmark::State& state) { HaltpoolBatch(state, governor); })
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("BM_SubmitBatch/condvar", BM_SubmitBatchCondvar)
      ->UseRealTime();

  for (const char* governor : {"haltpoll", "poll", "block"}) {
    benchmark::RegisterBenchmark(
        absl::StrCat("BM_SubmitToIdle/haltpool:", governor).c_str(),
        [governor](benchmark::State& state) {
          HaltpoolToIdle(state, governor);
        })
        ->UseManualTime()
        ->Iterations(kIdleSubmits);
  }
  benchmark::RegisterBenchmark("BM_SubmitToIdle/condvar",
                               BM_SubmitToIdleCondvar)
      ->UseManualTime()
      ->Iterations(kIdleSubmits);

  benchmark::RegisterBenchmark("BM_SubmitToBusy/haltpool",
                               BM_SubmitToBusyHaltpool)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_SubmitToBusy/condvar",
                               BM_SubmitToBusyCondvar)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_SubmitToBusy/mutex_deque", BM_MutexDequePush)
      ->UseRealTime();
}

}  // namespace
}  // namespace haltpool::bench

int main(int argc, char** argv) {
  return haltpool::bench::RunMicrobenchmarks(argc, argv,
                                             haltpool::bench::RegisterAll);
}
