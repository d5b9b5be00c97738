// bench/tradeoff: the latency-versus-CPU tradeoff of waking an idle thread,
// haltpool against the ways people wake threads today, side by side in one
// run.
//
// For every gap of kSweepGapsNs (0 to 10 ms) and every contender: the mean,
// p50 and p99 wake latency and the CPU the waiting side burns. Two modes
// (wake_harness.h says how each is measured):
// - pair: one thread wakes another. haltpool's parker under each governor;
//   std::binary_semaphore, std::atomic::wait, absl::Mutex + CondVar,
//   std::condition_variable, folly's Baton policy (spin 2 us, then futex),
//   oneTBB's concurrent_bounded_queue, and an OpenMP barrier under libgomp
//   and LLVM's libomp, each with its default wait policy and with
//   OMP_WAIT_POLICY=passive.
// - pool: an outside thread submits to an idle pool. haltpool's ThreadPool
//   under each governor; a mutex + condition-variable pool, oneTBB's
//   task_arena, and an OpenMP parallel region (the same four runtimes).
// The OpenMP contenders run in child processes (tradeoff_gomp and
// tradeoff_llvm_omp, found beside this binary), one per runtime and policy.
//
// Every mode runs under each arrival process of --arrivals (periodic,
// poisson, bursty) and with the submitter --submitter says (wake_harness.h).
//
// Prints Markdown: both tables per mode and arrival process, who dominates
// the default at each gap, and the verdict on the target (tradeoff_table.h).
// --csv and --markdown also write them to files, for tools/plot-tradeoff and
// docs/results/.
//
// ./bazelw run -c opt //bench:tradeoff -- [--point_ms=N] [--workers=N]
//   [--modes=pair,pool] [--arrivals=periodic,poisson,bursty]
//   [--submitter=sleep|spin] [--seed=N] [--submitter_cpu=N]
//   [--gaps=0,50us,1ms]
//   [--only=NAME,NAME] [--csv=PATH]
//   [--markdown=PATH]

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/command_line.h"
#include "bench/pool_runners.h"
#include "bench/tradeoff_table.h"
#include "bench/wake_channels.h"
#include "bench/wake_harness.h"
#include "runtime/config.h"

using haltpool::bench::IntIn;
// ABSL_FLAG's type cannot hold a comma: the ranges are named here.
using PointMs = IntIn<1, 60000>;
using Samples = IntIn<1, 1000000>;
using Workers = IntIn<1, 256>;
using SubmitterCpu = IntIn<-1, 8191>;

ABSL_FLAG(PointMs, point_ms, 250, "time per contender and gap, ms");
ABSL_FLAG(Samples, min_samples, 10, "fewest wakes per point");
ABSL_FLAG(Samples, max_samples, 20000, "most wakes per point");
ABSL_FLAG(Workers, workers, 2, "pool mode's worker threads");
ABSL_FLAG(std::string, modes, "pair,pool",
          "pair, pool or both, comma-separated");
ABSL_FLAG(std::string, arrivals, "periodic",
          "periodic, poisson, bursty, or several, comma-separated");
ABSL_FLAG(std::string, submitter, "sleep",
          "how the waker waits out a gap: sleep (to 80 us before, then "
          "spin) or spin (the harness before arrivals existed)");
ABSL_FLAG(uint64_t, seed, 1, "the poisson arrivals' generator seed");
ABSL_FLAG(SubmitterCpu, submitter_cpu, -1,
          "pool mode: the CPU the submitting thread runs on (pin a server's "
          "I/O thread so, and set HALTPOOL_CPUS to the others); -1: where "
          "the kernel puts it");
ABSL_FLAG(std::string, gaps, haltpool::bench::SweepGapsList(),
          "the gaps to measure, ascending, comma-separated (0 to 10s)");
ABSL_FLAG(std::string, only, "",
          "run only contenders whose name contains one of these, "
          "comma-separated; empty: all");
ABSL_FLAG(std::string, csv, "", "also write the results as CSV to this file");
ABSL_FLAG(std::string, markdown, "", "also write the Markdown to this file");

namespace haltpool::bench {
namespace {

// How each point is sized (SamplesFor) and paced, from the flags.
struct Sizing {
  int64_t point_ms;
  int min_samples;
  int max_samples;
  std::vector<Arrivals> arrivals;
  Submitter submitter;
  uint64_t seed;
  int submitter_cpu;
  std::vector<int64_t> gaps_ns;  // Ascending.
  int Samples(Arrivals a, int64_t gap_ns) const {
    return SamplesFor(MeanSpacingNs(a, gap_ns), point_ms, min_samples,
                      max_samples);
  }
  Pacing PacingFor(Arrivals a) const {
    return {a, submitter, seed, submitter_cpu};
  }
  // The --arrivals list as given, for a child's command line.
  std::string ArrivalsList() const {
    std::string out;
    for (Arrivals a : arrivals) {
      absl::StrAppend(&out, out.empty() ? "" : ",", ArrivalsName(a));
    }
    return out;
  }
  // The --gaps list, for a child's command line.
  std::string GapsList() const {
    std::string out;
    for (int64_t gap : gaps_ns) {
      absl::StrAppend(&out, out.empty() ? "" : ",", gap, "ns");
    }
    return out;
  }
};

struct Contender {
  std::string name;
  bool haltpool = false;
  bool is_default = false;
};

struct PairContender : Contender {
  std::function<absl::StatusOr<std::unique_ptr<WakeChannel>>()> make;
};

struct PoolContender : Contender {
  PoolRunner with_pool;
};

// haltpool's governors as the sweep runs them: every one, `fixed` at
// folly's 2 us and at the kernel's 200 us poll cap.
struct GovernorVariant {
  std::string name;
  idle::IdleOptions options;  // The parker's, for a pair.
  IdleChoices choices;        // What the variant sets over the default.
};

std::vector<GovernorVariant> GovernorVariants(const idle::IdleOptions& base) {
  std::vector<GovernorVariant> out;
  out.push_back(
      {absl::StrCat("haltpool default (", base.governor, ")"), base, {}});
  auto add = [&](std::string name, std::string governor, int64_t fixed_ns) {
    idle::IdleOptions o = base;
    IdleChoices choices;
    o.governor = governor;
    choices.governor = governor;
    o.fixed_poll_ns = fixed_ns;
    choices.fixed_poll_ns = fixed_ns;
    // A fixed window is held to the poll cap; this variant is the window.
    if (governor == "fixed" && fixed_ns > o.haltpoll.poll_ns) {
      o.haltpoll.poll_ns = fixed_ns;
      choices.haltpoll.poll_ns = fixed_ns;
    }
    // The default already runs these options.
    if (o.governor == base.governor &&
        (governor != "fixed" || fixed_ns == base.fixed_poll_ns)) {
      return;
    }
    out.push_back({std::move(name), o, choices});
  };
  add("haltpool haltpoll", "haltpoll", base.fixed_poll_ns);
  add("haltpool predictive", "predictive", base.fixed_poll_ns);
  add("haltpool fixed 2 us", "fixed", 2000);
  add("haltpool fixed 200 us", "fixed", 200000);
  add("haltpool poll", "poll", base.fixed_poll_ns);
  add("haltpool block", "block", base.fixed_poll_ns);
  return out;
}

std::vector<PairContender> PairContenders(const idle::IdleOptions& idle) {
  std::vector<PairContender> out;
  bool first = true;
  for (const GovernorVariant& v : GovernorVariants(idle)) {
    PairContender c;
    c.name = v.name;
    c.haltpool = true;
    c.is_default = first;
    first = false;
    c.make = [o = v.options] { return MakeParkerChannel(o); };
    out.push_back(std::move(c));
  }
  auto peer = [&](std::string name,
                  std::function<std::unique_ptr<WakeChannel>()> make) {
    PairContender c;
    c.name = std::move(name);
    c.make = [make]() -> absl::StatusOr<std::unique_ptr<WakeChannel>> {
      return make();
    };
    out.push_back(std::move(c));
  };
  peer("std::binary_semaphore", MakeSemaphoreChannel);
  peer("std::atomic::wait", MakeAtomicWaitChannel);
  peer("absl::Mutex + CondVar", MakeAbslCondVarChannel);
  peer("std::condition_variable", MakeStdCondVarChannel);
  peer("folly-style spin 2 us + futex",
       [] { return MakeSpinThenFutexChannel(2000); });
  peer("oneTBB concurrent_bounded_queue", MakeTbbQueueChannel);
  return out;
}

std::vector<PoolContender> PoolContenders(const Config& base, int workers) {
  std::vector<PoolContender> out;
  bool first = true;
  for (const GovernorVariant& v : GovernorVariants(base.pool.idle)) {
    PoolContender c;
    c.name = v.name;
    c.haltpool = true;
    c.is_default = first;
    first = false;
    PoolOptions o;
    o.idle = v.choices;
    c.with_pool = HaltpoolRunner(WithCodeOptions(base, o, "tradeoff"), workers,
                                 "tradeoff");
    out.push_back(std::move(c));
  }
  // The default without the back-off under contention: on a 2-CPU machine
  // the submitter spinning out a short gap makes three runnable threads,
  // which the back-off answers by polling less.
  PoolContender no_backoff;
  no_backoff.name = "haltpool default, back-off off";
  no_backoff.haltpool = true;
  PoolOptions o;
  o.backoff = false;
  no_backoff.with_pool =
      HaltpoolRunner(WithCodeOptions(base, o, "tradeoff"), workers, "tradeoff");
  out.push_back(std::move(no_backoff));
  out.push_back({{"std::condition_variable pool"}, CondvarPoolRunner(workers)});
  out.push_back({{"oneTBB task_arena"}, TbbArenaRunner(workers)});
  return out;
}

// One OpenMP contender: which binary, under which wait policy.
struct OmpContender {
  std::string name;
  std::string binary;  // Beside this one.
  bool passive;
};

const OmpContender kOmpContenders[] = {
    {"libgomp default", "tradeoff_gomp", false},
    {"libgomp passive", "tradeoff_gomp", true},
    {"libomp default", "tradeoff_llvm_omp", false},
    {"libomp passive", "tradeoff_llvm_omp", true},
};

// The directory this binary is in.
std::string SelfDir() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  path[n] = '\0';
  std::string s(path);
  return s.substr(0, s.rfind('/'));
}

// NotFound naming the OpenMP child binary if it cannot be run.
absl::Status CheckOmpBinary(const OmpContender& c) {
  const std::string binary = absl::StrCat(SelfDir(), "/", c.binary);
  if (access(binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat(binary, ": ", strerror(errno),
                                            " (build //bench:", c.binary, ")"));
  }
  return absl::OkStatus();
}

// Runs an OpenMP child and returns its curves.
absl::StatusOr<std::vector<Curve>> RunOmp(const OmpContender& c,
                                          const Sizing& sizing, int workers,
                                          const std::string& modes) {
  const std::string binary = absl::StrCat(SelfDir(), "/", c.binary);
  const std::string command = absl::StrCat(
      c.passive ? "OMP_WAIT_POLICY=passive" : "env -u OMP_WAIT_POLICY", " '",
      binary, "' '--label=", c.name, "' --point_ms=", sizing.point_ms,
      " --min_samples=", sizing.min_samples,
      " --max_samples=", sizing.max_samples, " --workers=", workers,
      " --modes=", modes, " --arrivals=", sizing.ArrivalsList(),
      " --submitter=", SubmitterName(sizing.submitter), " --seed=", sizing.seed,
      " --submitter_cpu=", sizing.submitter_cpu, " --gaps=", sizing.GapsList());
  FILE* child = popen(command.c_str(), "r");
  if (child == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot run ", binary, ": ", strerror(errno)));
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), child)) > 0) out.append(buf, n);
  const int status = pclose(child);
  if (status != 0) {
    return absl::InternalError(
        absl::StrCat(command, " failed (status ", status, ")"));
  }
  return ParseCurvesCsv(out);
}

bool Selected(absl::string_view name, const std::vector<std::string>& only) {
  if (only.empty()) return true;
  for (const std::string& o : only) {
    if (absl::StrContains(name, o)) return true;
  }
  return false;
}

void Progress(absl::string_view mode, absl::string_view name) {
  absl::FPrintF(stderr, "tradeoff: %s: %s\n", mode, name);
}

// One curve per arrival process.
std::vector<Curve> RunPairContender(const PairContender& c,
                                    const Sizing& sizing) {
  Progress("pair", c.name);
  absl::StatusOr<std::unique_ptr<WakeChannel>> channel = c.make();
  if (!channel.ok()) {
    absl::FPrintF(stderr, "tradeoff: %s: %s\n", c.name,
                  channel.status().message());
    exit(1);
  }
  std::vector<Curve> curves;
  for (Arrivals a : sizing.arrivals) {
    Curve curve{"pair", ArrivalsName(a), c.name, c.haltpool, c.is_default, {}};
    const Pacing pacing = sizing.PacingFor(a);
    MeasurePair(**channel, 10000, 200, pacing);  // Warm-up: windows learned.
    for (int64_t gap : sizing.gaps_ns) {
      curve.points.push_back(
          MeasurePair(**channel, gap, sizing.Samples(a, gap), pacing));
    }
    curves.push_back(std::move(curve));
  }
  return curves;
}

// One curve per arrival process, all from one pool.
std::vector<Curve> RunPoolContender(const PoolContender& c,
                                    const Sizing& sizing) {
  Progress("pool", c.name);
  std::vector<Curve> curves;
  c.with_pool([&](const SubmitFn& submit) {
    for (Arrivals a : sizing.arrivals) {
      Curve curve{"pool",     ArrivalsName(a), c.name,
                  c.haltpool, c.is_default,    {}};
      const Pacing pacing = sizing.PacingFor(a);
      MeasurePool(submit, 10000, 200, pacing);  // Warm-up: threads started.
      for (int64_t gap : sizing.gaps_ns) {
        curve.points.push_back(
            MeasurePool(submit, gap, sizing.Samples(a, gap), pacing));
      }
      curves.push_back(std::move(curve));
    }
  });
  return curves;
}

bool WriteFile(const std::string& path, const std::string& text) {
  FILE* f = fopen(path.c_str(), "w");
  if (f == nullptr) {
    absl::FPrintF(stderr, "tradeoff: cannot write %s: %s\n", path,
                  strerror(errno));
    return false;
  }
  const bool ok = fwrite(text.data(), 1, text.size(), f) == text.size();
  return fclose(f) == 0 && ok;
}

}  // namespace
}  // namespace haltpool::bench

int main(int argc, char** argv) {
  using namespace haltpool;
  using namespace haltpool::bench;
  ParseCommandLineOrExit(argc, argv, "usage: tradeoff [flags]");
  Sizing sizing{absl::GetFlag(FLAGS_point_ms).value,
                static_cast<int>(absl::GetFlag(FLAGS_min_samples).value),
                static_cast<int>(absl::GetFlag(FLAGS_max_samples).value),
                {},
                Submitter::kSleep,
                absl::GetFlag(FLAGS_seed),
                -1,
                {}};
  if (std::string error;
      !ParseGaps(absl::GetFlag(FLAGS_gaps), &sizing.gaps_ns, &error)) {
    absl::FPrintF(stderr, "tradeoff: --gaps: %s\n", error);
    return 2;
  }
  for (absl::string_view a :
       absl::StrSplit(absl::GetFlag(FLAGS_arrivals), ',')) {
    Arrivals arrivals;
    if (!ParseArrivals(a, &arrivals)) {
      absl::FPrintF(stderr,
                    "tradeoff: --arrivals: '%s': accepted: periodic, poisson, "
                    "bursty (comma-separated)\n",
                    a);
      return 2;
    }
    sizing.arrivals.push_back(arrivals);
  }
  if (!ParseSubmitter(absl::GetFlag(FLAGS_submitter), &sizing.submitter)) {
    absl::FPrintF(stderr,
                  "tradeoff: --submitter: '%s': accepted: sleep, spin\n",
                  absl::GetFlag(FLAGS_submitter));
    return 2;
  }
  sizing.submitter_cpu =
      static_cast<int>(absl::GetFlag(FLAGS_submitter_cpu).value);
  if (std::string problem = CheckSubmitterCpu(sizing.submitter_cpu);
      !problem.empty()) {
    absl::FPrintF(stderr, "tradeoff: --submitter_cpu=%d: %s\n",
                  sizing.submitter_cpu, problem);
    return 2;
  }
  const int workers = static_cast<int>(absl::GetFlag(FLAGS_workers).value);
  const std::string modes = absl::GetFlag(FLAGS_modes);
  bool pair = false, pool = false;
  for (absl::string_view m : absl::StrSplit(modes, ',')) {
    if (m == "pair") {
      pair = true;
    } else if (m == "pool") {
      pool = true;
    } else {
      absl::FPrintF(stderr, "tradeoff: --modes: '%s': accepted: pair, pool\n",
                    m);
      return 2;
    }
  }
  const std::string only_flag = absl::GetFlag(FLAGS_only);
  std::vector<std::string> only;
  if (!only_flag.empty()) only = absl::StrSplit(only_flag, ',');
  // Before anything is measured: the OpenMP children must be there.
  for (const OmpContender& c : kOmpContenders) {
    if (!Selected(c.name, only)) continue;
    if (absl::Status s = CheckOmpBinary(c); !s.ok()) {
      absl::FPrintF(stderr, "tradeoff: %s: %s\n", c.name, s.message());
      return 1;
    }
  }
  // The default governor comes from the environment, as for any user.
  const Config config = ConfigFromEnvironmentOrExit();

  std::vector<Curve> pair_curves, pool_curves;
  if (pair) {
    for (const PairContender& c : PairContenders(config.pool.idle)) {
      if (Selected(c.name, only)) {
        for (Curve& curve : RunPairContender(c, sizing)) {
          pair_curves.push_back(std::move(curve));
        }
      }
    }
  }
  if (pool) {
    for (const PoolContender& c : PoolContenders(config, workers)) {
      if (Selected(c.name, only)) {
        for (Curve& curve : RunPoolContender(c, sizing)) {
          pool_curves.push_back(std::move(curve));
        }
      }
    }
  }
  const std::string omp_modes = pair && pool ? "pair,pool"
                                : pair       ? "pair"
                                             : "pool";
  // A child that fails is reported and the run goes on: the other
  // contenders' results are still written, and the exit status is 1.
  bool child_failed = false;
  for (const OmpContender& c : kOmpContenders) {
    if (!Selected(c.name, only)) continue;
    Progress(omp_modes, c.name);
    absl::StatusOr<std::vector<Curve>> curves =
        RunOmp(c, sizing, workers, omp_modes);
    if (!curves.ok()) {
      absl::FPrintF(stderr, "tradeoff: %s: %s\n", c.name,
                    curves.status().message());
      child_failed = true;
      continue;
    }
    for (Curve& curve : *curves) {
      (curve.mode == "pair" ? pair_curves : pool_curves)
          .push_back(std::move(curve));
    }
  }
  std::vector<Curve> curves = std::move(pair_curves);
  for (Curve& c : pool_curves) curves.push_back(std::move(c));
  if (curves.empty()) {
    absl::FPrintF(stderr, "tradeoff: --only='%s' matches no contender\n",
                  only_flag);
    return 2;
  }

  std::string markdown = absl::StrCat(
      "### Wake latency against gap and CPU (", workers, " pool workers, ",
      sizing.point_ms, " ms per point, ",
      sizing.submitter == Submitter::kSleep ? "sleeping" : "spinning",
      " submitter)\n\n", CurvesMarkdown(curves),
      DominanceMarkdown(JudgeDominance(curves)), "\n");
  for (const char* mode : {"pair", "pool"}) {
    for (Arrivals a : sizing.arrivals) {
      absl::StatusOr<Verdict> verdict =
          JudgeTradeoff(curves, mode, ArrivalsName(a));
      if (verdict.ok()) {
        absl::StrAppend(&markdown, VerdictMarkdown(*verdict), "\n");
      }
    }
  }
  fputs(markdown.c_str(), stdout);
  const std::string csv_path = absl::GetFlag(FLAGS_csv);
  const std::string md_path = absl::GetFlag(FLAGS_markdown);
  if (!csv_path.empty() && !WriteFile(csv_path, CurvesCsv(curves))) return 1;
  if (!md_path.empty() && !WriteFile(md_path, markdown)) return 1;
  return child_failed ? 1 : 0;
}
