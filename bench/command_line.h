// Command lines of the benchmarks, tools and example servers: their flags
// are ABSL_FLAGs, parsed here so that a bad one exits 2 with a message
// naming the flag, the value and what is accepted (absl's own parser exits
// 1). Also the flag types they share: a whole number within a range, and a
// list of governors.

#ifndef HALTPOOL_BENCH_COMMAND_LINE_H_
#define HALTPOOL_BENCH_COMMAND_LINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace haltpool::bench {

// Parses argv into the program's ABSL_FLAGs ("--name=value" or "--name
// value"; a bool flag alone is true, --noname false). With --help or -h prints
// `usage` and every flag of the program with its help and default to stdout and
// exits 0. On an unknown flag, a value its flag does not accept, or a bare
// argument, prints "PROGRAM: <what is wrong>" and `usage` to stderr and
// exits 2. Call once, first thing in main().
void ParseCommandLineOrExit(int argc, char** argv, absl::string_view usage);

// A whole number from Min to Max. ABSL_FLAG's type cannot hold a comma, so
// name it first: `using Count = IntIn<1, 100>;` then
// `ABSL_FLAG(Count, n, 10, "...")` rejects "0" with "accepted: a whole number
// from 1 to 100". Read it as absl::GetFlag(FLAGS_n).value.
template <int64_t Min, int64_t Max>
struct IntIn {
  static_assert(Min <= Max);
  IntIn(int64_t v = Min) : value(v) {}  // NOLINT: a default reads as a number
  int64_t value;
};

template <int64_t Min, int64_t Max>
bool AbslParseFlag(absl::string_view text, IntIn<Min, Max>* out,
                   std::string* error);
template <int64_t Min, int64_t Max>
std::string AbslUnparseFlag(IntIn<Min, Max> v);

// The governors to run: a comma-separated list of idle::GovernorNames();
// empty (the default) is every one of them.
struct GovernorList {
  std::vector<std::string> names;
};

bool AbslParseFlag(absl::string_view text, GovernorList* out,
                   std::string* error);
std::string AbslUnparseFlag(const GovernorList& list);

// The governors `list` names, or every governor when it names none.
std::vector<std::string> GovernorsOrAll(const GovernorList& list);

// IntIn's parser, shared by every range: `*out` within [min, max].
bool ParseIntInRange(absl::string_view text, int64_t min, int64_t max,
                     int64_t* out, std::string* error);

template <int64_t Min, int64_t Max>
bool AbslParseFlag(absl::string_view text, IntIn<Min, Max>* out,
                   std::string* error) {
  return ParseIntInRange(text, Min, Max, &out->value, error);
}

template <int64_t Min, int64_t Max>
std::string AbslUnparseFlag(IntIn<Min, Max> v) {
  return std::to_string(v.value);
}

}  // namespace haltpool::bench

#endif  // HALTPOOL_BENCH_COMMAND_LINE_H_
