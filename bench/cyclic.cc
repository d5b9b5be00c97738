// bench/cyclic: cyclictest through the pool's timers.
//
// One task is rescheduled every interval with ThreadPool::SubmitAt at the
// absolute times start + k * interval (the next submitted by the running
// task, as cyclictest's thread rearms its timer), and notes its lateness:
// when it started running minus when it was due. For each governor, in one
// run: lateness min / avg / max, p99, and the process's CPU over the run
// as a share of one CPU (nearly all of it is the workers idling: the task
// itself takes a few microseconds a cycle); --histogram=N prints cyclictest
// -h N's buckets (1 us each up to N, then an overflow count).
//
// Usage: cyclic [--interval_us=1000] [--loops=5000] [--workers=1]
//   [--histogram=0] [--governors=a,b]

#include <stdio.h>
#include <sys/resource.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "arch/cycle_clock.h"
#include "bench/command_line.h"
#include "bench/latency_histogram.h"
#include "runtime/config.h"
#include "runtime/environment.h"
#include "runtime/thread_pool.h"

using haltpool::bench::GovernorList;
using haltpool::bench::IntIn;
// ABSL_FLAG's type cannot hold a comma: the ranges are named here.
using IntervalUs = IntIn<50, 1000000>;
using Loops = IntIn<10, 10000000>;
using Workers = IntIn<1, 4096>;
using HistogramUs = IntIn<0, 100000>;

ABSL_FLAG(IntervalUs, interval_us, 1000,
          "period in microseconds (cyclictest -i)");
ABSL_FLAG(Loops, loops, 5000, "cycles measured (cyclictest -l)");
ABSL_FLAG(Workers, workers, 1, "pool workers (cyclictest -t1: one thread)");
ABSL_FLAG(HistogramUs, histogram, 0,
          "also print N 1-us buckets (cyclictest -h N); 0: none");
ABSL_FLAG(GovernorList, governors, {},
          "governors to run, comma-separated; empty: every one");

namespace haltpool::bench {
namespace {

// Cycles run before measuring, so windows and margins are learned and
// caches warm (cyclictest has none; 200 cycles is 0.2 s at its default
// 1 ms interval).
constexpr int kWarmupLoops = 200;

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Result {
  std::vector<int64_t> lateness_ns;  // In cycle order.
  double cpu_share = 0;              // Process CPU / wall time.
  bool complete = false;
};

// kWarmupLoops + `loops` cycles of `interval_ns` on `pool`: cycle k is a
// timer due at start + k * interval_ns, armed by cycle k - 1's task.
class Cycler {
 public:
  Cycler(ThreadPool& pool, int64_t interval_ns, int loops)
      : pool_(pool),
        interval_ns_(interval_ns),
        loops_(loops),
        start_ns_(arch::MonotonicNowNs() + interval_ns) {
    result_.lateness_ns.reserve(loops);
  }

  // Runs every cycle; returns when the last has run or one failed to arm.
  // Not on one of the pool's workers.
  Result Go() {
    Arm(0);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    const double wall = (arch::MonotonicNowNs() - wall0_ns_) / 1e9;
    result_.cpu_share = wall > 0 ? (ProcessCpuSeconds() - cpu0_) / wall : 0;
    result_.complete =
        result_.lateness_ns.size() == static_cast<size_t>(loops_);
    return std::move(result_);
  }

 private:
  void Arm(int k) {
    // Due(k) is on CLOCK_MONOTONIC, SubmitAt's deadline on absl::Now(): hand
    // over what is left. The monotonic clock is read first, so the pool's
    // deadline is never before Due(k) (later by the gap between the reads).
    const int64_t left_ns = Due(k) - arch::MonotonicNowNs();
    const absl::Time deadline = absl::Now() + absl::Nanoseconds(left_ns);
    absl::Status s = pool_.SubmitAt(deadline, [this, k] { Cycle(k); });
    if (!s.ok()) Finish();
  }

  int64_t Due(int k) const { return start_ns_ + k * interval_ns_; }

  void Cycle(int k) {
    const int64_t now = arch::MonotonicNowNs();
    if (k == kWarmupLoops) {
      cpu0_ = ProcessCpuSeconds();
      wall0_ns_ = now;
    }
    if (k >= kWarmupLoops) result_.lateness_ns.push_back(now - Due(k));
    if (k + 1 < kWarmupLoops + loops_) {
      Arm(k + 1);
    } else {
      Finish();
    }
  }

  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_one();
  }

  ThreadPool& pool_;
  const int64_t interval_ns_;
  const int loops_;
  const int64_t start_ns_;
  // Written by the cycles' tasks, one after another; read by Go() after
  // done_ under mu_.
  Result result_;
  double cpu0_ = 0;
  int64_t wall0_ns_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

int Main(int argc, char** argv) {
  ParseCommandLineOrExit(argc, argv, "usage: cyclic [flags]");
  const int64_t interval_ns = absl::GetFlag(FLAGS_interval_us).value * 1000;
  const int loops = static_cast<int>(absl::GetFlag(FLAGS_loops).value);
  const int cap_us = static_cast<int>(absl::GetFlag(FLAGS_histogram).value);
  const int workers = static_cast<int>(absl::GetFlag(FLAGS_workers).value);
  const Config config = ConfigFromEnvironmentOrExit();

  std::vector<std::string> names = {"default"};
  for (const std::string& g : GovernorsOrAll(absl::GetFlag(FLAGS_governors))) {
    names.push_back(g);
  }
  printf(
      "# cyclic: %lld us interval, %d loops after %d warm-up, %d workers\n\n",
      static_cast<long long>(interval_ns / 1000), loops, kWarmupLoops, workers);
  printf("| governor | min us | avg us | p99 us | max us | CPU %% |\n");
  printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
  int status = 0;
  std::vector<std::pair<std::string, LatencyHistogram>> histograms;
  for (const std::string& name : names) {
    PoolOptions o;
    o.workers = workers;
    if (name != "default") o.idle.governor = name;
    Config c = config;
    if (absl::Status s = ApplyCodeOptions(o, c); !s.ok()) {
      absl::FPrintF(stderr, "cyclic: %s\n", s.message());
      return 2;
    }
    absl::StatusOr<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create(c);
    if (!pool.ok()) {
      absl::FPrintF(stderr, "cyclic: %s\n", pool.status().message());
      return 2;
    }
    const Result r = Cycler(**pool, interval_ns, loops).Go();
    pool->reset();
    const std::string label =
        name == "default"
            ? absl::StrFormat("default (%s)", config.pool.idle.governor)
            : name;
    if (!r.complete) {
      absl::FPrintF(stderr, "cyclic: %s ran %zu of %d cycles\n", name,
                    r.lateness_ns.size(), loops);
      status = 1;
      continue;
    }
    const LatencySummary l = Summarize(r.lateness_ns);
    absl::PrintF("| %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", label,
                 l.min_ns / 1e3, l.avg_ns / 1e3, l.p99_ns / 1e3, l.max_ns / 1e3,
                 100 * r.cpu_share);
    fflush(stdout);
    if (cap_us > 0) {
      histograms.emplace_back(label, MakeHistogram(r.lateness_ns, cap_us));
    }
  }
  for (const auto& [label, h] : histograms) {
    absl::PrintF("\n# histogram %s (us count)\n%s", label, FormatHistogram(h));
  }
  return status;
}

}  // namespace
}  // namespace haltpool::bench

int main(int argc, char** argv) { return haltpool::bench::Main(argc, argv); }
