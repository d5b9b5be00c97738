// Command-line options of bench/pipe: perf bench sched pipe's, plus the
// transport, the gap and the statistics switches.

#ifndef HALTPOOL_BENCH_PIPE_ARGS_H_
#define HALTPOOL_BENCH_PIPE_ARGS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace haltpool::bench {

enum class Transport { kPipe, kParker };
enum class StatsFormat { kNone, kText, kJson };

struct PipeArgs {
  int64_t loops = 1000000;  // perf's default.
  bool threaded = false;    // perf's default: two processes.
  Transport transport = Transport::kPipe;
  int64_t gap_us = 0;  // The initiator stays busy this long per op.
  StatsFormat stats = StatsFormat::kNone;
  bool help = false;
};

// Parses argv (without argv[0]). InvalidArgument names the bad option.
absl::StatusOr<PipeArgs> ParsePipeArgs(int argc, const char* const* argv);

// perf-style usage text.
std::string PipeUsage();

}  // namespace haltpool::bench

#endif  // HALTPOOL_BENCH_PIPE_ARGS_H_
