// Strict parsers for configuration values. Each returns InvalidArgument with
// a message saying what is wrong and what is accepted; callers prefix the
// variable name and the value.

#ifndef HALTPOOL_RUNTIME_VALUE_PARSE_H_
#define HALTPOOL_RUNTIME_VALUE_PARSE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace haltpool {

// A duration in nanoseconds: digits alone (nanoseconds), or what
// absl::ParseDuration takes with a unit ns, us, ms or s ("200us", "1.5ms"),
// within [min_ns, max_ns] and a whole number of nanoseconds. No sign, no
// spaces.
absl::StatusOr<int64_t> ParseDurationNs(absl::string_view text, int64_t min_ns,
                                        int64_t max_ns);

// A whole number within [min, max]: digits only.
absl::StatusOr<int64_t> ParseInteger(absl::string_view text, int64_t min,
                                     int64_t max);

// 1/0, true/false, yes/no, y/n (any case), as kernel boolean parameters.
absl::StatusOr<bool> ParseBool(absl::string_view text);

// A CPU list in the kernel's cpulist spelling ("1", "0-3,6"): CPU numbers
// from 0 to max_cpu and ranges low-high, joined by commas. Ascending with no
// duplicates on return. No spaces, no empty items.
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text,
                                              int max_cpu);

// The shortest exact spelling of a duration: 200000 -> "200us", 0 -> "0".
std::string FormatDurationNs(int64_t ns);

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_VALUE_PARSE_H_
