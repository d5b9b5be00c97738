// bench/tradeoff's OpenMP contenders, built once per OpenMP runtime
// (tradeoff_gomp links GCC's libgomp, tradeoff_llvm_omp LLVM's libomp; the
// two cannot share a process). bench/tradeoff runs each under both wait
// policies and reads the CSV it prints.
//
// pair: two threads of a parallel region meet at `#pragma omp barrier`; the
// waiter arrives first and waits, the waker arrives `gap` after the last
// wake. pool: the calling thread opens a parallel region of --workers + 1
// threads every `gap`; the first worker to start runs the probe. Between
// regions the workers idle the way the runtime's wait policy says.
//
// Usage: tradeoff_gomp --label=NAME [--point_ms=N] [--min_samples=N]
//   [--max_samples=N] [--workers=N] [--modes=pair,pool]

#include <omp.h>
#include <stdio.h>

#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "bench/bench_flags.h"
#include "bench/tradeoff_table.h"
#include "bench/wake_harness.h"

namespace haltpool::bench {
namespace {

class BarrierChannel final : public WakeChannel {
 public:
  void Wait() override {
#pragma omp barrier
  }
  void Signal() override {
#pragma omp barrier
  }
};

// Runs one gap of the pair on the two threads of a parallel region.
absl::StatusOr<WakePoint> RunPair(int64_t gap_ns, int samples) {
  BarrierChannel channel;
  PairRun run(gap_ns, samples);
  int threads = 0;
#pragma omp parallel num_threads(2)
  {
    if (omp_get_thread_num() == 0) {
      threads = omp_get_num_threads();
    }
#pragma omp barrier
    if (threads == 2) {
      if (omp_get_thread_num() == 0) {
        run.WakerSide(channel);
      } else {
        run.WaiterSide(channel);
      }
    }
  }
  if (threads != 2) {
    return absl::ResourceExhaustedError(
        "the OpenMP runtime gave fewer than 2 threads");
  }
  return run.Result();
}

// Opens a region of workers + 1 threads; the first worker runs the probe.
void RunRegion(int workers, Probe probe) {
  std::atomic<bool> taken{false};
#pragma omp parallel num_threads(workers + 1)
  {
    if (omp_get_thread_num() != 0 &&
        !taken.exchange(true, std::memory_order_relaxed)) {
      probe();
    }
  }
  // A runtime that gave the region no worker: the caller runs it, late.
  if (!taken.load(std::memory_order_relaxed)) probe();
}

}  // namespace
}  // namespace haltpool::bench

int main(int argc, char** argv) {
  using namespace haltpool::bench;
  BenchFlags defaults;
  defaults.ints = {
      {"point_ms", {250, 1, 60000, "time per gap"}},
      {"min_samples", {10, 1, 1000000, "fewest wakes per gap"}},
      {"max_samples", {20000, 1, 1000000, "most wakes per gap"}},
      {"workers", {2, 1, 256, "pool threads besides the caller"}},
  };
  defaults.strings = {
      {"label", {"", "the contender's name in the CSV, no commas"}},
      {"modes", {"pair,pool", "pair, pool or both, comma-separated"}},
  };
  const BenchFlags flags =
      ParseBenchFlagsOrExit("tradeoff_omp", defaults, argc - 1, argv + 1);
  const std::string label = flags.strings.at("label").value;
  if (label.empty() || label.find(',') != std::string::npos) {
    fprintf(stderr, "tradeoff_omp: --label: accepted: a name without commas\n");
    return 2;
  }
  auto flag = [&](const char* name) { return flags.ints.at(name).value; };
  const int workers = static_cast<int>(flag("workers"));
  std::vector<Curve> curves;
  for (absl::string_view mode :
       absl::StrSplit(flags.strings.at("modes").value, ',')) {
    if (mode != "pair" && mode != "pool") {
      fprintf(stderr, "tradeoff_omp: --modes: '%s': accepted: pair, pool\n",
              std::string(mode).c_str());
      return 2;
    }
    Curve curve;
    curve.mode = std::string(mode);
    curve.contender = label;
    const SubmitFn submit = [workers](Probe p) { RunRegion(workers, p); };
    // Warm up: threads started, the runtime's first-use costs paid.
    if (mode == "pair") {
      if (absl::StatusOr<WakePoint> p = RunPair(10000, 200); !p.ok()) {
        fprintf(stderr, "tradeoff_omp: %s\n",
                std::string(p.status().message()).c_str());
        return 1;
      }
    } else {
      MeasurePool(submit, 10000, 200);
    }
    for (int64_t gap : kSweepGapsNs) {
      const int n = SamplesFor(gap, flag("point_ms"),
                               static_cast<int>(flag("min_samples")),
                               static_cast<int>(flag("max_samples")));
      if (mode == "pair") {
        absl::StatusOr<WakePoint> p = RunPair(gap, n);
        if (!p.ok()) {
          fprintf(stderr, "tradeoff_omp: %s\n",
                  std::string(p.status().message()).c_str());
          return 1;
        }
        curve.points.push_back(*p);
      } else {
        curve.points.push_back(MeasurePool(submit, gap, n));
      }
    }
    curves.push_back(std::move(curve));
  }
  fputs(CurvesCsv(curves).c_str(), stdout);
  return 0;
}
