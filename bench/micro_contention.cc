// bench/micro_contention (Google Benchmark): what each reading behind the
// pool's poll back-off costs (runtime/contention_monitor.h). A sample reads
// some of them every 10 ms from a worker about to idle, so their cost is
// time that worker is not ready for a wake. /proc/stat is the expensive
// one: the kernel formats every interrupt's count into it on each read.
//
// ./bazelw run -c opt //bench:micro_contention

#include <cstdint>
#include <optional>

#include "arch/contention_signals.h"
#include "arch/proc_stat.h"
#include "bench/micro_main.h"
#include "benchmark/benchmark.h"

namespace haltpool::bench {
namespace {

void BM_ProcStat(benchmark::State& state) {
  for (auto _ : state) {
    arch::ProcStat stat;
    if (!arch::ReadProcStatNoAlloc(stat)) {
      state.SkipWithError("/proc/stat cannot be read");
      return;
    }
    benchmark::DoNotOptimize(stat.cpu.steal);
  }
  state.SetLabel("/proc/stat, steal and procs_running");
}

void BM_CpuPressure(benchmark::State& state) {
  for (auto _ : state) {
    const std::optional<int64_t> us = arch::ReadCpuPressureSomeUs();
    if (!us) {
      state.SkipWithError("/proc/pressure/cpu cannot be read");
      return;
    }
    benchmark::DoNotOptimize(*us);
  }
  state.SetLabel("/proc/pressure/cpu, CPU wait");
}

void BM_CpuPressureKeptOpen(benchmark::State& state) {
  arch::ProcFile file(arch::kProcPressureCpu);
  for (auto _ : state) {
    const std::optional<int64_t> us = arch::ReadCpuPressureSomeUs(file);
    if (!us) {
      state.SkipWithError("/proc/pressure/cpu cannot be read");
      return;
    }
    benchmark::DoNotOptimize(*us);
  }
  state.SetLabel("/proc/pressure/cpu kept open, one pread (the pool's)");
}

void BM_Loadavg(benchmark::State& state) {
  for (auto _ : state) {
    const std::optional<int64_t> n = arch::ReadLoadavgRunning();
    if (!n) {
      state.SkipWithError("/proc/loadavg cannot be read");
      return;
    }
    benchmark::DoNotOptimize(*n);
  }
  state.SetLabel("/proc/loadavg, runnable threads");
}

void BM_LoadavgKeptOpen(benchmark::State& state) {
  arch::ProcFile file(arch::kProcLoadavg);
  for (auto _ : state) {
    const std::optional<int64_t> n = arch::ReadLoadavgRunning(file);
    if (!n) {
      state.SkipWithError("/proc/loadavg cannot be read");
      return;
    }
    benchmark::DoNotOptimize(*n);
  }
  state.SetLabel("/proc/loadavg kept open, one pread (the pool's)");
}

void BM_RunDelayKeptOpen(benchmark::State& state) {
  arch::ProcFile file(arch::kProcThreadSchedstat);
  for (auto _ : state) {
    const std::optional<int64_t> ns = arch::ReadRunDelayNs(file);
    if (!ns) {
      state.SkipWithError("/proc/thread-self/schedstat cannot be read");
      return;
    }
    benchmark::DoNotOptimize(*ns);
  }
  state.SetLabel(
      "/proc/thread-self/schedstat kept open, one pread (the pool's)");
}

void RegisterAll() {
  benchmark::RegisterBenchmark("BM_ProcStat", BM_ProcStat);
  benchmark::RegisterBenchmark("BM_CpuPressure", BM_CpuPressure);
  benchmark::RegisterBenchmark("BM_CpuPressureKeptOpen",
                               BM_CpuPressureKeptOpen);
  benchmark::RegisterBenchmark("BM_Loadavg", BM_Loadavg);
  benchmark::RegisterBenchmark("BM_LoadavgKeptOpen", BM_LoadavgKeptOpen);
  benchmark::RegisterBenchmark("BM_RunDelayKeptOpen", BM_RunDelayKeptOpen);
}

}  // namespace
}  // namespace haltpool::bench

int main(int argc, char** argv) {
  return haltpool::bench::RunMicrobenchmarks(argc, argv,
                                             haltpool::bench::RegisterAll);
}
