// soak: minutes of park/unpark pairs and pool tasks under every governor,
// counting every wake and every task; exits non-zero on any loss, and a
// watchdog reports where it hung instead of hanging.
//
//   ./bazelw run -c opt //tools:soak                 # 10^8 pairs, 10^7 tasks
//   ./bazelw run -c opt //tools:soak -- --quick      # seconds
//   soak [--pairs=N] [--tasks=N] [--stall=20s] [--quick]
//
// Pairs: a producer thread stores 1, 2, ..., n to a counter and calls
// Unpark() after each store; a consumer parks (no deadline) until it has
// seen n. After every other store or so the producer waits until the
// consumer has caught up, so that wake alone must end a park. Every Unpark must
// be counted once in the word's statistics. Tasks: two outside threads submit
// to a pool (two workers) and every thousandth submission waits for its task
// alone, so each of those must wake a worker. Each governor gets an equal
// share.
//
// The watchdog: if no pair or task completes for --stall (default 20s), it
// prints the phase, the governor, the counters and the wake word's
// state, and exits 3. Any lost pair or task: exit 1. Bad options: exit 2.

#include <stdio.h>
#include <stdlib.h>

#include <atomic>
#include <cinttypes>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "arch/cpu_wait.h"
#include "arch/cycle_clock.h"
#include "bench/command_line.h"
#include "idle/governor_registry.h"
#include "idle/parker.h"
#include "runtime/thread_pool.h"

// ABSL_FLAG's type cannot hold a comma: the range is named here.
using Count = haltpool::bench::IntIn<1, int64_t{1} << 62>;

// Unset: the full run's count, or --quick's.
ABSL_FLAG(std::optional<Count>, pairs, std::nullopt,
          "park/unpark pairs, split over the governors (default 100000000; "
          "--quick: 400000)");
ABSL_FLAG(std::optional<Count>, tasks, std::nullopt,
          "pool tasks, split over the governors (default 10000000; --quick: "
          "100000)");
ABSL_FLAG(absl::Duration, stall, absl::Seconds(20),
          "the watchdog exits 3 after this long without progress; above 0");
ABSL_FLAG(bool, quick, false,
          "seconds, not minutes: the --quick counts where --pairs or "
          "--tasks is not given");

namespace haltpool {
namespace {

// What the watchdog looks at.
struct Progress {
  std::atomic<uint64_t> done{0};  // Pairs observed plus tasks run.
  std::atomic<const char*> phase{"start"};
  std::atomic<const char*> governor{""};
  std::atomic<uint64_t> target{0};
  std::atomic<uint64_t> seen{0};
  std::atomic<const idle::WakeWord*> word{nullptr};
};

Progress g_progress;

void Watchdog(absl::Duration stall, const std::atomic<bool>& finished) {
  uint64_t last = g_progress.done.load();
  int64_t last_change = arch::MonotonicNowNs();
  while (!finished.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const uint64_t now_done = g_progress.done.load();
    if (now_done != last) {
      last = now_done;
      last_change = arch::MonotonicNowNs();
      continue;
    }
    if (arch::MonotonicNowNs() - last_change <
        absl::ToInt64Nanoseconds(stall)) {
      continue;
    }
    const idle::WakeWord* w = g_progress.word.load();
    absl::FPrintF(stderr,
                  "soak: HUNG for %s in phase %s, governor %s: %" PRIu64
                  " of %" PRIu64 " done in this run",
                  absl::FormatDuration(stall), g_progress.phase.load(),
                  g_progress.governor.load(), g_progress.seen.load(),
                  g_progress.target.load());
    if (w != nullptr) {
      const idle::WakeStats s = w->wake_stats();
      fprintf(stderr,
              "; wake word: polling=%d, wakes polling %" PRIu64
              ", not idle %" PRIu64 ", syscall %" PRIu64,
              w->polling(), s.polling, s.not_idle, s.syscall);
    }
    fprintf(stderr, "\n");
    fflush(stderr);
    _exit(3);
  }
}

// Producer/consumer pairs under one governor; true if none was lost.
bool RunPairs(const std::string& governor, uint64_t n) {
  g_progress.phase = "pairs";
  g_progress.target = n;
  g_progress.seen = 0;
  idle::WakeWord word;
  idle::IdleOptions options;
  options.governor = governor;
  absl::StatusOr<idle::Parker> parker = idle::Parker::Create(word, options);
  if (!parker.ok()) {
    absl::FPrintF(stderr, "soak: %s\n", parker.status().message());
    return false;
  }
  g_progress.word = &word;
  std::atomic<uint64_t> counter{0};
  std::atomic<uint64_t> seen{0};
  uint64_t parks = 0;  // The consumer's; read after join.
  std::thread consumer([&] {
    uint64_t mine = 0;
    while (mine < n) {
      const uint64_t v = counter.load(std::memory_order_acquire);
      if (v > mine) {
        g_progress.done.fetch_add(v - mine, std::memory_order_relaxed);
        mine = v;
        seen.store(mine, std::memory_order_release);
        g_progress.seen.store(mine, std::memory_order_relaxed);
        continue;
      }
      parker->Park();
      ++parks;
    }
  });
  std::minstd_rand rng(governor.size());
  for (uint64_t i = 1; i <= n; ++i) {
    counter.store(i, std::memory_order_release);
    word.Unpark();
    if ((rng() & 1) == 0) {
      while (seen.load(std::memory_order_acquire) < i) arch::CpuRelax();
    }
  }
  consumer.join();
  g_progress.word = nullptr;
  const idle::WakeStats s = word.wake_stats();
  const bool ok = s.total() == n && seen.load() == n;
  absl::PrintF("pairs  %-9s %11" PRIu64 " unparks, %11" PRIu64
               " observed, %11" PRIu64 " parks; wakes: %" PRIu64
               " polling, %" PRIu64 " running, %" PRIu64 " FUTEX_WAKE%s\n",
               governor, n, seen.load(), parks, s.polling, s.not_idle,
               s.syscall, ok ? "" : "  LOST");
  fflush(stdout);
  return ok;
}

// Pool tasks under one governor; true if every task ran exactly once.
bool RunTasks(const std::string& governor, uint64_t n) {
  g_progress.phase = "tasks";
  g_progress.target = n;
  g_progress.seen = 0;
  PoolOptions options;
  options.workers = 2;
  options.idle.governor = governor;
  absl::StatusOr<std::unique_ptr<ThreadPool>> pool =
      ThreadPool::Create(options, MapEnvironment());
  if (!pool.ok()) {
    absl::FPrintF(stderr, "soak: %s\n", pool.status().message());
    return false;
  }
  std::atomic<uint64_t> ran{0};
  TaskGroup group;
  auto task = [&ran] {
    ran.fetch_add(1, std::memory_order_relaxed);
    g_progress.done.fetch_add(1, std::memory_order_relaxed);
  };
  bool submitted_all = true;
  std::vector<std::thread> submitters;
  for (int t = 0; t < 2; ++t) {
    const uint64_t share = n / 2 + (t == 0 ? n % 2 : 0);
    submitters.emplace_back([&, share] {
      for (uint64_t i = 0; i < share; ++i) {
        if (i % 1000 == 999) {
          // Alone: this one must wake a worker by itself.
          std::atomic<bool> done{false};
          if (!(*pool)
                   ->Submit(group,
                            [&done, &task] {
                              task();
                              done.store(true, std::memory_order_release);
                            })
                   .ok()) {
            submitted_all = false;
          }
          while (!done.load(std::memory_order_acquire)) arch::CpuRelax();
        } else if (!(*pool)->Submit(group, task).ok()) {
          submitted_all = false;
        }
        g_progress.seen.store(ran.load(std::memory_order_relaxed),
                              std::memory_order_relaxed);
      }
    });
  }
  for (std::thread& t : submitters) t.join();
  (*pool)->Wait(group);
  (*pool)->Shutdown();
  uint64_t counted = 0;
  for (const WorkerStats& w : (*pool)->Stats().workers) counted += w.tasks_run;
  const bool ok = submitted_all && ran.load() == n && counted == n;
  absl::PrintF("tasks  %-9s %11" PRIu64 " submitted, %11" PRIu64
               " ran, %11" PRIu64 " counted by the workers%s\n",
               governor, n, ran.load(), counted, ok ? "" : "  LOST");
  fflush(stdout);
  return ok;
}

}  // namespace
}  // namespace haltpool

int main(int argc, char** argv) {
  using namespace haltpool;
  bench::ParseCommandLineOrExit(argc, argv, "usage: soak [flags]");
  const bool quick = absl::GetFlag(FLAGS_quick);
  const std::optional<Count> pairs_flag = absl::GetFlag(FLAGS_pairs);
  const std::optional<Count> tasks_flag = absl::GetFlag(FLAGS_tasks);
  const uint64_t pairs = pairs_flag ? pairs_flag->value
                         : quick    ? 400000
                                    : 100000000;
  const uint64_t tasks = tasks_flag ? tasks_flag->value
                         : quick    ? 100000
                                    : 10000000;
  const absl::Duration stall = absl::GetFlag(FLAGS_stall);
  if (stall <= absl::ZeroDuration()) {
    absl::FPrintF(stderr,
                  "soak: --stall=%s: accepted: above 0\nusage: soak [flags]\n",
                  absl::FormatDuration(stall));
    return 2;
  }
  const std::vector<std::string> governors =
      absl::StrSplit(idle::GovernorNames(), '|');
  std::atomic<bool> finished{false};
  std::thread watchdog(Watchdog, stall, std::cref(finished));
  const int64_t start = arch::MonotonicNowNs();
  bool ok = true;
  for (const std::string& g : governors) {
    g_progress.governor = g.c_str();
    ok &= RunPairs(g, pairs / governors.size());
  }
  for (const std::string& g : governors) {
    g_progress.governor = g.c_str();
    ok &= RunTasks(g, tasks / governors.size());
  }
  finished = true;
  watchdog.join();
  const uint64_t per = governors.size();
  printf("soak: %s: %" PRIu64 " park/unpark pairs and %" PRIu64
         " tasks over %zu governors in %.0f s\n",
         ok ? "OK, nothing lost" : "FAILED, see LOST above", pairs / per * per,
         tasks / per * per, governors.size(),
         (arch::MonotonicNowNs() - start) / 1e9);
  return ok ? 0 : 1;
}
