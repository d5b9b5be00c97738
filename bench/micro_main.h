// The main() of the micro_* benchmarks: Google Benchmark's, with a short
// default minimum time per row so that each binary finishes in seconds.

#ifndef HALTPOOL_BENCH_MICRO_MAIN_H_
#define HALTPOOL_BENCH_MICRO_MAIN_H_

namespace haltpool::bench {

// 0.1 s a row: enough for a stable figure on a 2-vCPU KVM guest, and each
// micro_* binary runs in well under 20 s there.
inline constexpr double kDefaultMinTimeS = 0.1;

// Parses Google Benchmark's flags with --benchmark_min_time defaulting to
// kDefaultMinTimeS (a --benchmark_min_time on the command line wins), calls
// `register_all` to register the rows, runs them and returns the exit
// code: 0, or 1 on an unknown flag. Rows that set their own MinTime or
// Iterations keep them.
int RunMicrobenchmarks(int argc, char** argv, void (*register_all)());

}  // namespace haltpool::bench

#endif  // HALTPOOL_BENCH_MICRO_MAIN_H_
