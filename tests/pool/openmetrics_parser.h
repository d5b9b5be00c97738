// A strict parser of the OpenMetrics 1.0 text format, for tests only: it
// checks every line of an exposition against the format's grammar and
// rules, and returns the families and samples it read, so that a test can
// compare them with the statistics that were formatted.
//
// Checked: every line ends in \n and is metadata ("# TYPE", "# HELP",
// "# UNIT") or a sample; a family's metadata comes before its samples, at
// most once each, and the family is never resumed after another began;
// names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*;
// label values and help text use only the escapes \\, \" and \n; values
// are OpenMetrics numbers (counters non-negative, info exactly 1); a
// counter's samples end in _total (or _created), an info's in _info, a
// unit is the family name's suffix; no sample (name and label set) repeats;
// the text ends with "# EOF" and nothing after it but one \n. Types other
// than counter, gauge, info and unknown, timestamps and exemplars are
// refused as not supported here.

#ifndef HALTPOOL_TESTS_POOL_OPENMETRICS_PARSER_H_
#define HALTPOOL_TESTS_POOL_OPENMETRICS_PARSER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace haltpool::openmetrics {

struct OpenMetricsFamily {
  std::string name;
  std::string type;  // "counter", "gauge", "info", "unknown".
  std::string unit;  // "" if none.
  std::string help;  // Unescaped; "" if none.
};

struct OpenMetricsSample {
  std::string family;                         // Its family's name.
  std::string name;                           // As written: with _total.
  std::map<std::string, std::string> labels;  // Values unescaped.
  std::string value_text;                     // As written.
  double value = 0;
};

struct OpenMetricsExposition {
  std::vector<OpenMetricsFamily> families;  // In order.
  std::vector<OpenMetricsSample> samples;   // In order.

  // The sample named `name` with exactly `labels`, or null.
  const OpenMetricsSample* Find(
      absl::string_view name,
      const std::map<std::string, std::string>& labels = {}) const;
  // Every sample named `name`.
  std::vector<const OpenMetricsSample*> All(absl::string_view name) const;
  // The family named `name`, or null.
  const OpenMetricsFamily* Family(absl::string_view name) const;
};

// Parses `text`. InvalidArgument naming the line (1-based), quoting it and
// saying which rule it breaks.
absl::StatusOr<OpenMetricsExposition> ParseOpenMetrics(absl::string_view text);

}  // namespace haltpool::openmetrics

#endif  // HALTPOOL_TESTS_POOL_OPENMETRICS_PARSER_H_
