// Command-line flags shared by the pool benchmarks (messaging, cyclic):
// "--name=value" integers with their accepted range, and the list of
// governors to run. A bad flag is an error naming it and what is accepted.

#ifndef HALTPOOL_BENCH_BENCH_FLAGS_H_
#define HALTPOOL_BENCH_BENCH_FLAGS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace haltpool::bench {

// One integer flag: its default and accepted range, and a line of help.
struct IntFlag {
  int64_t value;
  int64_t min;
  int64_t max;
  const char* help;
};

// One text flag: its default (empty: unset) and a line of help. Any
// non-empty value is accepted; the program checks its meaning.
struct StringFlag {
  std::string value;
  const char* help;
};

struct BenchFlags {
  std::map<std::string, IntFlag> ints;        // By name, without "--".
  std::map<std::string, StringFlag> strings;  // By name, without "--".
  // --governors=a,b: the governors to run; default every one of
  // idle::GovernorNames(), the profile's default first as "default".
  std::vector<std::string> governors;
  bool help = false;
};

// Parses argv (without argv[0]) into `defaults`' integer and text flags
// and --governors; --help sets help. InvalidArgument naming the flag and what
// is accepted otherwise.
absl::StatusOr<BenchFlags> ParseBenchFlags(BenchFlags defaults, int argc,
                                           const char* const* argv);

// "usage: NAME [--flag=N]...", each flag with its default, range and help.
std::string BenchUsage(const char* name, const BenchFlags& defaults);

// ParseBenchFlags for a benchmark's main(): on a bad flag prints
// "NAME: <error>" and the usage to stderr and exits 2; with --help prints
// the usage to stdout and exits 0.
BenchFlags ParseBenchFlagsOrExit(const char* name, const BenchFlags& defaults,
                                 int argc, const char* const* argv);

}  // namespace haltpool::bench

#endif  // HALTPOOL_BENCH_BENCH_FLAGS_H_
