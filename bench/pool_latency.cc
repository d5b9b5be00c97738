// bench/pool_latency: submit-to-run latency on an idle pool, and the CPU the
// pool burns while idle, at several gaps between submissions; haltpool under
// each governor against oneTBB (task_arena::enqueue) and a mutex +
// condition-variable pool, side by side in one run.
//
// One outside thread submits a task `gap` after the previous one ran; the
// task notes how long it waited. bench/wake_harness measures it (the pool
// mode of bench/tradeoff, which runs more gaps and more contenders); pool
// CPU is the process's CPU time minus the submitting thread's.
//
// Usage: pool_latency [--workers=N] [--scale=F] [--csv=PATH] [--without_tbb]
//   (the flags below).

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/command_line.h"
#include "bench/pool_runners.h"
#include "bench/wake_harness.h"
#include "runtime/config.h"

using Workers = haltpool::bench::IntIn<1, 4096>;

ABSL_FLAG(Workers, workers, 2, "pool workers of every contender");
ABSL_FLAG(double, scale, 1.0, "scales every gap's sample count; above 0");
ABSL_FLAG(std::string, csv, "",
          "also write the table as CSV to this file (for "
          "tools/plot-pool-latency)");
ABSL_FLAG(bool, without_tbb, false,
          "leave oneTBB out (its synchronization is invisible to "
          "ThreadSanitizer)");

namespace haltpool::bench {
namespace {

struct Gap {
  int64_t ns;
  int samples;
};
// Each gap runs about a second or less at scale 1.
constexpr Gap kGaps[] = {
    {0, 20000}, {10000, 10000}, {100000, 3000}, {1000000, 500}, {10000000, 80}};

struct Result {
  double p50_us, p99_us, mean_us, idle_cpu;  // idle_cpu: fraction of a CPU.
};

Result Measure(const SubmitFn& submit, const Gap& gap, double scale) {
  const int n = std::max(10, static_cast<int>(gap.samples * scale));
  // The harness's waiting as this benchmark's published numbers had it.
  const WakePoint p =
      MeasurePool(submit, gap.ns, n, {Arrivals::kPeriodic, Submitter::kSpin});
  return {p.p50_us, p.p99_us, p.mean_us, p.cpu};
}

// "0", "10 us": a gap as the tables show it.
std::string GapLabel(int64_t gap_ns) {
  return gap_ns == 0 ? "0" : absl::StrCat(gap_ns / 1000, " us");
}

struct Contender {
  std::string name;
  PoolRunner with_pool;
};

}  // namespace
}  // namespace haltpool::bench

int main(int argc, char** argv) {
  using namespace haltpool;
  using namespace haltpool::bench;
  ParseCommandLineOrExit(argc, argv, "usage: pool_latency [flags]");
  const int workers = static_cast<int>(absl::GetFlag(FLAGS_workers).value);
  const double scale = absl::GetFlag(FLAGS_scale);
  const std::string csv_path = absl::GetFlag(FLAGS_csv);
  const bool with_tbb = !absl::GetFlag(FLAGS_without_tbb);
  if (!(scale > 0)) {
    absl::FPrintF(stderr, "pool_latency: --scale=%g: accepted: above 0\n",
                  scale);
    return 2;
  }
  // The default governor comes from the environment like any haltpool user.
  const Config config = ConfigFromEnvironmentOrExit();
  std::vector<Contender> contenders;
  auto haltpool_with = [&](const std::string& governor) {
    PoolOptions o;
    if (!governor.empty()) o.idle.governor = governor;
    return HaltpoolRunner(WithCodeOptions(config, o, "pool_latency"), workers,
                          "pool_latency");
  };
  contenders.push_back(
      {absl::StrCat("haltpool default (", config.pool.idle.governor, ")"),
       haltpool_with("")});
  for (const char* g : {"haltpoll", "predictive", "poll", "block", "fixed"}) {
    if (g != config.pool.idle.governor) {
      contenders.push_back({absl::StrCat("haltpool ", g), haltpool_with(g)});
    }
  }
  if (with_tbb) {
    contenders.push_back(
        {"oneTBB task_arena::enqueue", TbbArenaRunner(workers)});
  }
  contenders.push_back({"mutex + condvar pool", CondvarPoolRunner(workers)});

  FILE* csv = nullptr;
  if (!csv_path.empty()) {
    csv = fopen(csv_path.c_str(), "w");
    if (csv == nullptr) {
      absl::FPrintF(stderr, "pool_latency: cannot write %s: %s\n", csv_path,
                    strerror(errno));
      return 2;
    }
    fprintf(csv, "contender,gap_us,p50_us,p99_us,mean_us,pool_cpu_pct\n");
  }
  printf(
      "# pool_latency: %d workers, submit-to-run latency (us) and pool CPU "
      "while idle "
      "(%% of one CPU)\n\n",
      workers);
  printf("| contender | gap | p50 us | p99 us | mean us | pool CPU %% |\n");
  printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
  std::vector<std::vector<Result>> all;
  for (const Contender& c : contenders) {
    std::vector<Result> row;
    c.with_pool([&](const SubmitFn& submit) {
      // Warm up: threads started, first wakes done, windows learned.
      Measure(submit, {10000, 200}, 1.0);
      for (const Gap& g : kGaps) row.push_back(Measure(submit, g, scale));
    });
    for (size_t i = 0; i < row.size(); ++i) {
      const Result& r = row[i];
      absl::PrintF("| %s | %s | %.2f | %.2f | %.2f | %.1f |\n", c.name,
                   GapLabel(kGaps[i].ns), r.p50_us, r.p99_us, r.mean_us,
                   100 * r.idle_cpu);
      if (csv != nullptr) {
        absl::FPrintF(csv, "%s,%g,%.3f,%.3f,%.3f,%.2f\n", c.name,
                      kGaps[i].ns / 1000.0, r.p50_us, r.p99_us, r.mean_us,
                      100 * r.idle_cpu);
      }
    }
    fflush(stdout);
    all.push_back(std::move(row));
  }
  // The targets: default vs oneTBB and condvar (the last two contenders).
  const std::vector<Result>& mine = all[0];
  const std::vector<Result>* tbb = with_tbb ? &all[all.size() - 2] : nullptr;
  const std::vector<Result>& cv = all[all.size() - 1];
  printf(
      "\n| gap | default/oneTBB mean | default/condvar mean | default - "
      "condvar CPU %% |\n");
  printf("| ---: | ---: | ---: | ---: |\n");
  for (size_t i = 0; i < mine.size(); ++i) {
    absl::PrintF(
        "| %s | %s | %.3f | %+.1f |\n", GapLabel(kGaps[i].ns),
        tbb == nullptr
            ? std::string("-")
            : absl::StrFormat("%.3f", mine[i].mean_us / (*tbb)[i].mean_us),
        mine[i].mean_us / cv[i].mean_us,
        100 * (mine[i].idle_cpu - cv[i].idle_cpu));
  }
  if (csv != nullptr && fclose(csv) != 0) {
    absl::FPrintF(stderr, "pool_latency: cannot write %s\n", csv_path);
    return 1;
  }
  return 0;
}
