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
//   [--arrivals=periodic,poisson,bursty] [--submitter=sleep|spin] [--seed=N]
//   [--submitter_cpu=N]

#include <omp.h>
#include <stdio.h>

#include <atomic>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/command_line.h"
#include "bench/tradeoff_table.h"
#include "bench/wake_harness.h"

using haltpool::bench::IntIn;
// ABSL_FLAG's type cannot hold a comma: the ranges are named here.
using PointMs = IntIn<1, 60000>;
using Samples = IntIn<1, 1000000>;
using Workers = IntIn<1, 256>;
using SubmitterCpu = IntIn<-1, 8191>;

ABSL_FLAG(PointMs, point_ms, 250, "time per gap, ms");
ABSL_FLAG(Samples, min_samples, 10, "fewest wakes per gap");
ABSL_FLAG(Samples, max_samples, 20000, "most wakes per gap");
ABSL_FLAG(Workers, workers, 2, "pool threads besides the caller");
ABSL_FLAG(std::string, label, "", "the contender's name in the CSV");
ABSL_FLAG(SubmitterCpu, submitter_cpu, -1,
          "pool mode: the CPU the submitting thread runs on; -1: anywhere");
ABSL_FLAG(std::string, modes, "pair,pool",
          "pair, pool or both, comma-separated");
ABSL_FLAG(std::string, arrivals, "periodic",
          "periodic, poisson, bursty, or several, comma-separated");
ABSL_FLAG(std::string, submitter, "sleep", "sleep or spin (wake_harness.h)");
ABSL_FLAG(uint64_t, seed, 1, "the poisson arrivals' generator seed");
ABSL_FLAG(std::string, gaps, haltpool::bench::SweepGapsList(),
          "the gaps to measure, ascending, comma-separated (0 to 10s)");

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
absl::StatusOr<WakePoint> RunPair(int64_t gap_ns, int samples,
                                  const Pacing& pacing) {
  BarrierChannel channel;
  PairRun run(gap_ns, samples, pacing);
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
  ParseCommandLineOrExit(
      argc, argv,
      "usage: tradeoff_gomp|tradeoff_llvm_omp --label=NAME [flags]");
  const std::string label = absl::GetFlag(FLAGS_label);
  if (label.empty()) {
    fprintf(stderr, "tradeoff_omp: --label: accepted: a non-empty name\n");
    return 2;
  }
  std::vector<Arrivals> arrivals;
  for (absl::string_view a :
       absl::StrSplit(absl::GetFlag(FLAGS_arrivals), ',')) {
    Arrivals parsed;
    if (!ParseArrivals(a, &parsed)) {
      absl::FPrintF(stderr,
                    "tradeoff_omp: --arrivals: '%s': accepted: periodic, "
                    "poisson, bursty (comma-separated)\n",
                    a);
      return 2;
    }
    arrivals.push_back(parsed);
  }
  Submitter submitter;
  if (!ParseSubmitter(absl::GetFlag(FLAGS_submitter), &submitter)) {
    absl::FPrintF(stderr,
                  "tradeoff_omp: --submitter: '%s': accepted: sleep, spin\n",
                  absl::GetFlag(FLAGS_submitter));
    return 2;
  }
  std::vector<int64_t> gaps_ns;
  if (std::string error;
      !ParseGaps(absl::GetFlag(FLAGS_gaps), &gaps_ns, &error)) {
    absl::FPrintF(stderr, "tradeoff_omp: --gaps: %s\n", error);
    return 2;
  }
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  const int submitter_cpu =
      static_cast<int>(absl::GetFlag(FLAGS_submitter_cpu).value);
  if (std::string problem = CheckSubmitterCpu(submitter_cpu);
      !problem.empty()) {
    absl::FPrintF(stderr, "tradeoff_omp: --submitter_cpu=%d: %s\n",
                  submitter_cpu, problem);
    return 2;
  }
  const int workers = static_cast<int>(absl::GetFlag(FLAGS_workers).value);
  const int64_t point_ms = absl::GetFlag(FLAGS_point_ms).value;
  const int min_samples =
      static_cast<int>(absl::GetFlag(FLAGS_min_samples).value);
  const int max_samples =
      static_cast<int>(absl::GetFlag(FLAGS_max_samples).value);
  std::vector<Curve> curves;
  for (absl::string_view mode :
       absl::StrSplit(absl::GetFlag(FLAGS_modes), ',')) {
    if (mode != "pair" && mode != "pool") {
      absl::FPrintF(
          stderr, "tradeoff_omp: --modes: '%s': accepted: pair, pool\n", mode);
      return 2;
    }
    for (Arrivals a : arrivals) {
      Curve curve;
      curve.mode = std::string(mode);
      curve.arrivals = ArrivalsName(a);
      curve.contender = label;
      const Pacing pacing{a, submitter, seed, submitter_cpu};
      const SubmitFn submit = [workers](Probe p) { RunRegion(workers, p); };
      // Warm up: threads started, the runtime's first-use costs paid.
      if (mode == "pair") {
        if (absl::StatusOr<WakePoint> p = RunPair(10000, 200, pacing);
            !p.ok()) {
          absl::FPrintF(stderr, "tradeoff_omp: %s\n", p.status().message());
          return 1;
        }
      } else {
        MeasurePool(submit, 10000, 200, pacing);
      }
      for (int64_t gap : gaps_ns) {
        const int n = SamplesFor(MeanSpacingNs(a, gap), point_ms, min_samples,
                                 max_samples);
        if (mode == "pair") {
          absl::StatusOr<WakePoint> p = RunPair(gap, n, pacing);
          if (!p.ok()) {
            absl::FPrintF(stderr, "tradeoff_omp: %s\n", p.status().message());
            return 1;
          }
          curve.points.push_back(*p);
        } else {
          curve.points.push_back(MeasurePool(submit, gap, n, pacing));
        }
      }
      curves.push_back(std::move(curve));
    }
  }
  fputs(CurvesCsv(curves).c_str(), stdout);
  return 0;
}
