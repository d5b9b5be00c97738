#include "runtime/value_parse.h"

#include <array>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace haltpool {
namespace {

constexpr std::array<std::pair<absl::string_view, int64_t>, 4> kUnits = {
    {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}}};

// Digits only, into an int64; errors name the problem.
absl::StatusOr<int64_t> ParseDigits(absl::string_view digits) {
  if (digits.empty()) return absl::InvalidArgumentError("no number");
  if (digits[0] == '-') return absl::InvalidArgumentError("negative");
  int64_t v = 0;
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      return absl::InvalidArgumentError("not a number");
    }
    if (v > (INT64_MAX - (c - '0')) / 10) {
      return absl::InvalidArgumentError("too large");
    }
    v = v * 10 + (c - '0');
  }
  return v;
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
      "nanoseconds, or a whole number with a unit ns, us, ms or s (200us, "
      "2ms), from ",
      FormatDurationNs(min_ns), " to ", FormatDurationNs(max_ns));
  if (text.empty()) return Wrap("empty", accepted);
  size_t digits_end = 0;
  while (digits_end < text.size() &&
         (absl::ascii_isdigit(static_cast<unsigned char>(text[digits_end])) ||
          (digits_end == 0 && text[0] == '-'))) {
    ++digits_end;
  }
  const absl::string_view unit = text.substr(digits_end);
  int64_t scale = 0;
  if (unit.empty()) scale = 1;
  for (const auto& [name, ns] : kUnits) {
    if (unit == name) scale = ns;
  }
  absl::StatusOr<int64_t> count = ParseDigits(text.substr(0, digits_end));
  if (!count.ok()) {
    if (text[0] == '-') return Wrap("negative", accepted);
    return Wrap(count.status().message() == "no number"
                    ? "not a duration"
                    : count.status().message(),
                accepted);
  }
  if (scale == 0 && absl::StartsWith(unit, ".")) {
    return Wrap("not a whole number", accepted);
  }
  if (scale == 0) {
    return Wrap(absl::StrCat("unknown unit '", unit, "'"), accepted);
  }
  if (*count > INT64_MAX / scale) return Wrap("too large", accepted);
  const int64_t ns = *count * scale;
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

absl::StatusOr<bool> ParseBool(absl::string_view text) {
  constexpr absl::string_view kAccepted = "1, 0, true, false, yes, no, y, n";
  if (text.empty()) return Wrap("empty", kAccepted);
  const std::string t = absl::AsciiStrToLower(text);
  if (t == "1" || t == "true" || t == "yes" || t == "y") return true;
  if (t == "0" || t == "false" || t == "no" || t == "n") return false;
  return Wrap("not a boolean", kAccepted);
}

}  // namespace haltpool
