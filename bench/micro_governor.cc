// bench/micro_governor (Google Benchmark): what one Select + Reflect costs
// per governor, the decision the idle loop makes for every idle state it
// enters. Each governor comes from the registry with default IdleOptions
// and replays a synthetic trace of idle periods (regular, short, long and
// timer-ended ones), so the history-based governors find patterns, miss
// them and learn margins as they would in a pool. A do-nothing governor
// gives the harness's own cost; reading the clock (the idle loop reads it
// twice per state) gives the numbers a scale.
//
// ./bazelw run -c opt //bench:micro_governor

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "arch/cycle_clock.h"
#include "bench/micro_main.h"
#include "benchmark/benchmark.h"
#include "idle/clock.h"
#include "idle/governor.h"
#include "idle/governor_registry.h"
#include "idle/idle_options.h"
#include "idle/idle_state.h"

namespace haltpool::bench {
namespace {

// One idle period of the trace: when the wake comes and, if a timer ends
// the wait, when the caller's deadline is, both from the period's start.
struct Period {
  int64_t wake_after_ns;
  int64_t deadline_after_ns;  // 0: no deadline.
};

// Periods in the trace (a power of two) and per phase.
constexpr size_t kTraceLength = 1024;
constexpr size_t kPhaseLength = 32;
// The work between two idle periods.
constexpr int64_t kBusyNs = 2000;
// The least a state lasts: entering and leaving it (two clock reads and an
// atomic exchange are about this on a 2-vCPU KVM guest: docs/
// microbenchmarks.md has clock_gettime at 23.6 ns).
constexpr int64_t kMinStayNs = 100;

// A deterministic trace that moves through four kinds of phases, each
// kPhaseLength periods long: a regular message rate (20 us, 1 us of
// jitter), short bursts (1-8 us, poll territory), long quiet stretches
// (0.1-3 ms, block territory), and waits that a timer 50 us away ends
// unless a wake comes first (half of them).
std::vector<Period> MakeTrace() {
  std::mt19937_64 rng(42);
  auto uniform = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::vector<Period> trace(kTraceLength);
  for (size_t i = 0; i < kTraceLength; ++i) {
    switch ((i / kPhaseLength) % 4) {
      case 0:
        trace[i] = {uniform(19000, 21000), 0};
        break;
      case 1:
        trace[i] = {uniform(1000, 8000), 0};
        break;
      case 2:
        trace[i] = {uniform(100000, 3000000), 0};
        break;
      default:
        trace[i] = {uniform(10000, 100000), 50000};
        break;
    }
  }
  return trace;
}

// A governor that decides nothing: the floor of the harness (the trace
// replay and two virtual calls).
class NullGovernor final : public idle::Governor {
 public:
  absl::string_view name() const noexcept override { return "none"; }
  idle::Selection Select(const idle::IdleContext&) noexcept override {
    return {idle::kPollState, idle::kUnlimitedPollNs};
  }
  void Reflect(int, int64_t, idle::IdleExit) noexcept override {}
  int64_t poll_limit_ns() const noexcept override {
    return idle::kUnlimitedPollNs;
  }
};

// One iteration is one Select and one Reflect of `governor`, on a
// simulated clock: the state lasts until the period's wake, the caller's
// deadline, or the state's own limit, whichever comes first, as in RunIdle
// (idle/idle_loop.h); after a timeout the next iteration selects again
// within the same period.
void SelectReflect(benchmark::State& state, idle::Governor& governor) {
  const std::vector<Period> trace = MakeTrace();
  size_t next = 0;
  int64_t now = 1000000000;
  int64_t wake = now + trace[0].wake_after_ns;
  int64_t deadline = arch::kNoDeadline;
  int64_t polls = 0;
  int64_t timeouts = 0;
  for (auto _ : state) {
    const idle::Selection sel = governor.Select({now, deadline});
    const int64_t due = std::min(wake, deadline);
    int64_t limit;  // The state's own end.
    if (sel.state == idle::kPollState) {
      ++polls;
      limit = sel.poll_limit_ns < due - now ? now + sel.poll_limit_ns
                                            : arch::kNoDeadline;
    } else {
      limit = sel.block_until_ns;
    }
    limit = std::max(limit, now + kMinStayNs);
    int64_t end = due;
    idle::IdleExit exit =
        wake <= deadline ? idle::IdleExit::kWoken : idle::IdleExit::kDeadline;
    if (limit < due) {
      end = limit;
      exit = idle::IdleExit::kTimeout;
      ++timeouts;
    }
    governor.Reflect(sel.state, end - now, exit);
    now = end;
    if (exit != idle::IdleExit::kTimeout) {
      const Period& p = trace[++next % kTraceLength];
      now += kBusyNs;
      wake = now + p.wake_after_ns;
      deadline = p.deadline_after_ns == 0 ? arch::kNoDeadline
                                          : now + p.deadline_after_ns;
    }
  }
  const double n = static_cast<double>(state.iterations());
  if (n > 0) {
    state.counters["poll_pct"] = 100.0 * polls / n;
    state.counters["timeout_pct"] = 100.0 * timeouts / n;
  }
  state.SetLabel(absl::StrCat("Select + Reflect; governor=", governor.name()));
}

void BM_MonotonicNowNs(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(arch::MonotonicNowNs());
  state.SetLabel("one clock_gettime(CLOCK_MONOTONIC) (vDSO)");
}

void BM_RealClockNowNs(benchmark::State& state) {
  const idle::Clock& clock = idle::RealClock();
  for (auto _ : state) benchmark::DoNotOptimize(clock.NowNs());
  state.SetLabel("one idle::RealClock().NowNs(), the idle loop's clock");
}

void BM_ReadCycles(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(arch::ReadCycles());
  state.SetLabel("one arch::ReadCycles() (TSC, CNTVCT_EL0, TOD)");
}

void RegisterAll() {
  // Every governor the registry knows, as a pool would make it.
  for (absl::string_view name : absl::StrSplit(idle::GovernorNames(), '|')) {
    idle::IdleOptions options;
    options.governor = std::string(name);
    benchmark::RegisterBenchmark(
        absl::StrCat("BM_SelectReflect/governor:", name).c_str(),
        [options](benchmark::State& state) {
          absl::StatusOr<std::unique_ptr<idle::Governor>> governor =
              idle::MakeGovernor(options);
          if (!governor.ok()) {
            state.SkipWithError(
                std::string(governor.status().message()).c_str());
            return;
          }
          SelectReflect(state, **governor);
        });
  }
  benchmark::RegisterBenchmark("BM_SelectReflect/governor:none",
                               [](benchmark::State& state) {
                                 std::unique_ptr<idle::Governor> governor =
                                     std::make_unique<NullGovernor>();
                                 // Keeps the calls virtual, as for the rest.
                                 benchmark::DoNotOptimize(governor);
                                 SelectReflect(state, *governor);
                               });
  benchmark::RegisterBenchmark("BM_MonotonicNowNs", BM_MonotonicNowNs);
  benchmark::RegisterBenchmark("BM_RealClockNowNs", BM_RealClockNowNs);
  benchmark::RegisterBenchmark("BM_ReadCycles", BM_ReadCycles);
}

}  // namespace
}  // namespace haltpool::bench

int main(int argc, char** argv) {
  return haltpool::bench::RunMicrobenchmarks(argc, argv,
                                             haltpool::bench::RegisterAll);
}
