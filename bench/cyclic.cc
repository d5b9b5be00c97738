// bench/cyclic: cyclictest through the pool's timers.
//
// One task is rescheduled every interval with ThreadPool::SubmitAt at the
// absolute times start + k * interval (the next submitted by the running
// task, as cyclictest's thread rearms its timer), and notes its lateness:
// when it started running minus when it was due. For each governor, in one
// run: lateness min / avg / max, p99, and the process's CPU over the run
// as a share of one CPU; --histogram prints cyclictest -h's buckets (1 us
// each, the last counting everything beyond).
//
// Usage: cyclic [--interval_us=1000] [--loops=5000] [--workers=1]
//   [--histogram=0] [--governors=a,b]

#include <stdio.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "arch/cycle_clock.h"
#include "bench/bench_flags.h"
#include "runtime/config.h"
#include "runtime/environment.h"
#include "runtime/thread_pool.h"

namespace haltpool::bench {
namespace {

// Cycles run before measuring: windows and margins learned, caches warm.
constexpr int kWarmupLoops = 200;

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Result {
  std::vector<int64_t> lateness_ns;  // Sorted.
  double cpu_share;                  // Process CPU / wall time.
  bool complete;
};

// Runs `loops` cycles of `interval_ns` on `pool`.
Result Cycle(ThreadPool& pool, int64_t interval_ns, int loops) {
  std::vector<int64_t> late;
  late.reserve(loops);
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  const int total = kWarmupLoops + loops;
  int64_t start = arch::MonotonicNowNs() + interval_ns;
  double cpu0 = 0;
  int64_t wall0 = 0;
  std::function<void(int)> arm = [&](int k) {
    const int64_t due = start + k * interval_ns;
    absl::Status s = pool.SubmitAt(due, [&, k, due] {
      const int64_t now = arch::MonotonicNowNs();
      if (k == kWarmupLoops) {
        cpu0 = ProcessCpuSeconds();
        wall0 = now;
      }
      if (k >= kWarmupLoops) late.push_back(now - due);
      if (k + 1 < total) {
        arm(k + 1);
      } else {
        std::lock_guard<std::mutex> lock(mu);
        done = true;
        cv.notify_one();
      }
    });
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
      cv.notify_one();
    }
  };
  arm(0);
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  }
  const double wall = (arch::MonotonicNowNs() - wall0) / 1e9;
  Result r;
  r.cpu_share = wall > 0 ? (ProcessCpuSeconds() - cpu0) / wall : 0;
  r.complete = late.size() == static_cast<size_t>(loops);
  std::sort(late.begin(), late.end());
  r.lateness_ns = std::move(late);
  return r;
}

int Main(int argc, char** argv) {
  BenchFlags defaults;
  defaults.ints = {
      {"interval_us", {1000, 50, 1000000, "period (cyclictest -i)"}},
      {"loops", {5000, 10, 10000000, "cycles measured (cyclictest -l)"}},
      {"workers", {1, 1, 4096, "pool workers (cyclictest -t1: one thread)"}},
      {"histogram", {0, 0, 100000, "also print N 1-us buckets (cyclictest -h)"}},
  };
  absl::StatusOr<BenchFlags> flags =
      ParseBenchFlags(defaults, argc - 1, argv + 1);
  if (!flags.ok()) {
    fprintf(stderr, "cyclic: %s\n%s",
            std::string(flags.status().message()).c_str(),
            BenchUsage("cyclic", defaults).c_str());
    return 2;
  }
  if (flags->help) {
    fputs(BenchUsage("cyclic", defaults).c_str(), stdout);
    return 0;
  }
  const int64_t interval_ns = flags->ints.at("interval_us").value * 1000;
  const int loops = static_cast<int>(flags->ints.at("loops").value);
  const int buckets = static_cast<int>(flags->ints.at("histogram").value);
  const Config config = ConfigFromEnvironmentOrExit();

  std::vector<std::string> names = {"default"};
  for (const std::string& g : flags->governors) names.push_back(g);
  printf("# cyclic: %lld us interval, %d loops, %lld workers\n\n",
         static_cast<long long>(interval_ns / 1000), loops,
         static_cast<long long>(flags->ints.at("workers").value));
  printf("| governor | min us | avg us | p99 us | max us | CPU %% |\n");
  printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
  int status = 0;
  std::vector<std::pair<std::string, std::vector<int64_t>>> histograms;
  for (const std::string& name : names) {
    PoolOptions o = config.pool;
    o.workers = static_cast<int>(flags->ints.at("workers").value);
    if (name != "default") o.idle.governor = name;
    absl::StatusOr<std::unique_ptr<ThreadPool>> pool =
        ThreadPool::Create(o, MapEnvironment());
    if (!pool.ok()) {
      fprintf(stderr, "cyclic: %s\n",
              std::string(pool.status().message()).c_str());
      return 2;
    }
    const Result r = Cycle(**pool, interval_ns, loops);
    pool->reset();
    const std::string label =
        name == "default"
            ? absl::StrFormat("default (%s)", config.pool.idle.governor)
            : name;
    if (!r.complete || r.lateness_ns.empty()) {
      fprintf(stderr, "cyclic: %s ran %zu of %d cycles\n", name.c_str(),
              r.lateness_ns.size(), loops);
      status = 1;
      continue;
    }
    const std::vector<int64_t>& l = r.lateness_ns;
    double sum = 0;
    for (int64_t v : l) sum += v;
    printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", label.c_str(),
           l.front() / 1e3, sum / l.size() / 1e3, l[l.size() * 99 / 100] / 1e3,
           l.back() / 1e3, 100 * r.cpu_share);
    fflush(stdout);
    histograms.emplace_back(label, l);
  }
  if (buckets > 0) {
    for (const auto& [label, l] : histograms) {
      printf("\n# histogram %s (us: count)\n", label.c_str());
      std::vector<int64_t> counts(buckets + 1);
      for (int64_t v : l) {
        const int64_t us = std::max<int64_t>(0, v / 1000);
        ++counts[std::min<int64_t>(us, buckets)];
      }
      for (int i = 0; i <= buckets; ++i) {
        if (counts[i] == 0) continue;
        printf("%s%d: %lld\n", i == buckets ? ">=" : "", i,
               static_cast<long long>(counts[i]));
      }
    }
  }
  return status;
}

}  // namespace
}  // namespace haltpool::bench

int main(int argc, char** argv) { return haltpool::bench::Main(argc, argv); }
