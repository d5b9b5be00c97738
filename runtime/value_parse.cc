#include "runtime/value_parse.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"

namespace haltpool {
namespace {

constexpr std::array<std::pair<absl::string_view, int64_t>, 4> kUnits = {
    {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}}};

bool AllDigits(absl::string_view text) {
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return !text.empty();
}

// Digits only, into an int64; errors name the problem.
absl::StatusOr<int64_t> ParseDigits(absl::string_view digits) {
  if (digits.empty()) return absl::InvalidArgumentError("no number");
  if (digits[0] == '-') return absl::InvalidArgumentError("negative");
  if (!AllDigits(digits)) return absl::InvalidArgumentError("not a number");
  int64_t v = 0;
  if (!absl::SimpleAtoi(digits, &v)) {
    return absl::InvalidArgumentError("too large");
  }
  return v;
}

// Digits of a unit's nanoseconds below one unit: ns 0, us 3, ms 6, s 9.
int FractionDigitsOf(int64_t unit_ns) {
  int digits = 0;
  for (; unit_ns > 1; unit_ns /= 10) ++digits;
  return digits;
}

// What is wrong with `text`, meant as a number and one unit ns, us, ms or s
// for absl::ParseDuration, before it is parsed; empty if nothing. A
// fraction must come to whole nanoseconds ("1.5us", not "1.5ns": absl
// would round that to its quarter nanoseconds silently).
std::string DurationSyntaxProblem(absl::string_view text) {
  size_t number_end = 0;
  while (number_end < text.size() &&
         (absl::ascii_isdigit(static_cast<unsigned char>(text[number_end])) ||
          text[number_end] == '.')) {
    ++number_end;
  }
  const absl::string_view number = text.substr(0, number_end);
  const absl::string_view unit = text.substr(number_end);
  if (number.empty() || unit.empty()) return "not a duration";
  int64_t unit_ns = 0;
  for (const auto& [name, ns] : kUnits) {
    if (unit == name) unit_ns = ns;
  }
  if (unit_ns == 0) {
    return absl::StrCat("unknown unit '", unit, "'");
  }
  const size_t dot = number.find('.');
  absl::string_view whole = number.substr(0, dot);
  absl::string_view fraction =
      dot == absl::string_view::npos ? "" : number.substr(dot + 1);
  if (fraction.find('.') != absl::string_view::npos) return "not a duration";
  while (!whole.empty() && whole.front() == '0') whole.remove_prefix(1);
  while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
  if (whole.size() > 18) return "too large";
  if (fraction.size() > static_cast<size_t>(FractionDigitsOf(unit_ns))) {
    return "not a whole number of nanoseconds";
  }
  return "";
}

absl::Status Wrap(absl::string_view problem, absl::string_view accepted) {
  return absl::InvalidArgumentError(
      absl::StrCat(problem, "; accepted: ", accepted));
}

}  // namespace

std::string FormatDurationNs(int64_t ns) {
  if (ns == 0) return "0";
  for (auto it = kUnits.rbegin(); it != kUnits.rend(); ++it) {
    if (ns % it->second == 0) return absl::StrCat(ns / it->second, it->first);
  }
  return absl::StrCat(ns, "ns");
}

absl::StatusOr<int64_t> ParseDurationNs(absl::string_view text, int64_t min_ns,
                                        int64_t max_ns) {
  const std::string accepted = absl::StrCat(
      "nanoseconds, or a number with one unit ns, us, ms or s (200us, 1.5ms), "
      "from ",
      FormatDurationNs(min_ns), " to ", FormatDurationNs(max_ns));
  if (text.empty()) return Wrap("empty", accepted);
  if (text[0] == '-') return Wrap("negative", accepted);
  int64_t ns = 0;
  if (AllDigits(text)) {
    absl::StatusOr<int64_t> v = ParseDigits(text);
    if (!v.ok()) return Wrap(v.status().message(), accepted);
    ns = *v;
  } else {
    if (std::string problem = DurationSyntaxProblem(text); !problem.empty()) {
      return Wrap(problem, accepted);
    }
    absl::Duration d;
    if (!absl::ParseDuration(text, &d)) return Wrap("not a duration", accepted);
    if (d > absl::Nanoseconds(INT64_MAX)) return Wrap("too large", accepted);
    ns = absl::ToInt64Nanoseconds(d);
    if (absl::Nanoseconds(ns) != d) {
      return Wrap("not a whole number of nanoseconds", accepted);
    }
  }
  if (ns < min_ns || ns > max_ns) return Wrap("out of range", accepted);
  return ns;
}

absl::StatusOr<int64_t> ParseInteger(absl::string_view text, int64_t min,
                                     int64_t max) {
  const std::string accepted =
      absl::StrCat("a whole number from ", min, " to ", max);
  if (text.empty()) return Wrap("empty", accepted);
  absl::StatusOr<int64_t> v = ParseDigits(text);
  if (!v.ok()) return Wrap(v.status().message(), accepted);
  if (*v < min || *v > max) return Wrap("out of range", accepted);
  return *v;
}

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text,
                                              int max_cpu) {
  const std::string accepted = absl::StrCat("CPU numbers from 0 to ", max_cpu,
                                            " and ranges, such as 1 or 0-3,6");
  if (text.empty()) return Wrap("empty", accepted);
  std::vector<int> cpus;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    std::pair<absl::string_view, absl::string_view> range =
        absl::StrSplit(item, absl::MaxSplits('-', 1));
    if (range.second.empty() && item.size() != range.first.size()) {
      return Wrap(absl::StrCat("'", item, "' is not a range"), accepted);
    }
    if (range.second.empty()) range.second = range.first;
    absl::StatusOr<int64_t> low = ParseDigits(range.first);
    absl::StatusOr<int64_t> high = ParseDigits(range.second);
    if (!low.ok() || !high.ok()) {
      return Wrap(absl::StrCat("'", item, "' is not a CPU or a range"),
                  accepted);
    }
    if (*low > *high) {
      return Wrap(absl::StrCat("'", item, "' runs backwards"), accepted);
    }
    if (*high > max_cpu) {
      return Wrap(absl::StrCat("'", item, "' is out of range"), accepted);
    }
    for (int64_t c = *low; c <= *high; ++c) cpus.push_back(static_cast<int>(c));
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

absl::StatusOr<bool> ParseBool(absl::string_view text) {
  constexpr absl::string_view kAccepted = "1, 0, true, false, yes, no, y, n";
  if (text.empty()) return Wrap("empty", kAccepted);
  const std::string t = absl::AsciiStrToLower(text);
  if (t == "1" || t == "true" || t == "yes" || t == "y") return true;
  if (t == "0" || t == "false" || t == "no" || t == "n") return false;
  return Wrap("not a boolean", kAccepted);
}

}  // namespace haltpool
