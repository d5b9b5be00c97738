// The strict OpenMetrics text parser (see the header): one pass over the
// lines, with the family being read as its only state.

#include "tests/pool/openmetrics_parser.h"

#include <cstdlib>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace haltpool::openmetrics {
namespace {

bool IsNameStart(char c, bool colon) {
  return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_' ||
         (colon && c == ':');
}
bool IsNameChar(char c, bool colon) {
  return IsNameStart(c, colon) ||
         absl::ascii_isdigit(static_cast<unsigned char>(c));
}

// Takes a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or, without `colon`, a
// label name from the front of `s`; "" if there is none.
std::string TakeName(absl::string_view& s, bool colon) {
  size_t n = 0;
  if (s.empty() || !IsNameStart(s[0], colon)) return "";
  while (n < s.size() && IsNameChar(s[n], colon)) ++n;
  std::string name(s.substr(0, n));
  s.remove_prefix(n);
  return name;
}

// Unescapes `s` (help text, or a label value without its quotes): only
// \\, \" and \n are escapes. False on any other backslash.
bool Unescape(absl::string_view s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      *out += s[i];
      continue;
    }
    if (++i == s.size()) return false;
    switch (s[i]) {
      case '\\':
        *out += '\\';
        break;
      case '"':
        *out += '"';
        break;
      case 'n':
        *out += '\n';
        break;
      default:
        return false;
    }
  }
  return true;
}

// True if `s` is an OpenMetrics number: a decimal with optional fraction
// and exponent, or +Inf, -Inf, NaN (in any letter case, as the ABNF's
// case-insensitive strings allow).
bool IsNumber(absl::string_view s) {
  absl::string_view t = s;
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) t.remove_prefix(1);
  if (absl::EqualsIgnoreCase(t, "inf") ||
      absl::EqualsIgnoreCase(t, "infinity")) {
    return s[0] == '+' || s[0] == '-';
  }
  if (absl::EqualsIgnoreCase(s, "nan")) return true;
  size_t i = 0, digits = 0;
  while (i < t.size() && absl::ascii_isdigit(static_cast<unsigned char>(t[i])))
    ++i, ++digits;
  if (i < t.size() && t[i] == '.') {
    ++i;
    while (i < t.size() &&
           absl::ascii_isdigit(static_cast<unsigned char>(t[i])))
      ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    size_t exp = 0;
    while (i < t.size() &&
           absl::ascii_isdigit(static_cast<unsigned char>(t[i])))
      ++i, ++exp;
    if (exp == 0) return false;
  }
  return i == t.size();
}

double ToDouble(absl::string_view s) {
  return std::strtod(std::string(s).c_str(), nullptr);
}

const std::set<std::string>& SupportedTypes() {
  static const auto* types =
      new std::set<std::string>{"counter", "gauge", "info", "unknown"};
  return *types;
}
const std::set<std::string>& KnownTypes() {
  static const auto* types = new std::set<std::string>{
      "counter",  "gauge", "histogram", "gaugehistogram",
      "stateset", "info",  "summary",   "unknown"};
  return *types;
}

class Parser {
 public:
  absl::StatusOr<OpenMetricsExposition> Parse(absl::string_view text) {
    // The last line's \n is optional after "# EOF" only; a text without
    // it that does not end in "# EOF" is refused below.
    absl::ConsumeSuffix(&text, "\n");
    const std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
    for (size_t i = 0; i < lines.size(); ++i) {
      line_number_ = i + 1;
      line_ = lines[i];
      if (line_ == "# EOF") {
        if (i + 1 != lines.size()) {
          return Error("\"# EOF\" is not the last line: text follows it");
        }
        return std::move(out_);
      }
      absl::Status s = absl::StartsWith(line_, "#") ? Metadata() : Sample();
      if (!s.ok()) return s;
    }
    return absl::InvalidArgumentError(
        "the exposition does not end with \"# EOF\"");
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", line_number_, " \"", line_, "\": ", what));
  }

  // "# TYPE name type", "# UNIT name unit", "# HELP name text".
  absl::Status Metadata() {
    absl::string_view rest = line_;
    if (!absl::ConsumePrefix(&rest, "# ")) {
      return Error(
          "a comment must be \"# TYPE\", \"# UNIT\", \"# HELP\" or "
          "\"# EOF\", with one space after #");
    }
    std::string kind;
    if (absl::ConsumePrefix(&rest, "TYPE ")) {
      kind = "TYPE";
    } else if (absl::ConsumePrefix(&rest, "UNIT ")) {
      kind = "UNIT";
    } else if (absl::ConsumePrefix(&rest, "HELP ")) {
      kind = "HELP";
    } else {
      return Error("unknown metadata; accepted: TYPE, UNIT, HELP, EOF");
    }
    const std::string name = TakeName(rest, /*colon=*/true);
    if (name.empty()) return Error("no metric family name after " + kind);
    if (!absl::ConsumePrefix(&rest, " ")) {
      return Error("the family name must be followed by one space");
    }
    if (out_.families.empty() || current().name != name) {
      if (!seen_families_.insert(name).second) {
        return Error(absl::StrCat("family ", name,
                                  " appears again after another family"));
      }
      out_.families.push_back({name, "unknown", "", ""});
      metadata_.clear();
      has_samples_ = false;
    }
    if (has_samples_) {
      return Error(absl::StrCat(kind, " of ", name, " after its samples"));
    }
    if (!metadata_.insert(kind).second) {
      return Error(absl::StrCat("a second ", kind, " for ", name));
    }
    if (kind == "TYPE") {
      const std::string type(rest);
      if (KnownTypes().count(type) == 0) {
        return Error(absl::StrCat("unknown type '", type,
                                  "'; accepted: counter, gauge, histogram, "
                                  "gaugehistogram, stateset, info, summary, "
                                  "unknown"));
      }
      if (SupportedTypes().count(type) == 0) {
        return Error(absl::StrCat("type ", type,
                                  " is not supported by this "
                                  "parser (counter, gauge, info, unknown)"));
      }
      current().type = type;
    } else if (kind == "UNIT") {
      const std::string unit(rest);
      bool ok = !unit.empty();
      for (char c : unit) ok = ok && IsNameChar(c, /*colon=*/true);
      if (!ok) return Error("a unit is one or more of [a-zA-Z0-9_:]");
      if (!absl::EndsWith(name, "_" + unit)) {
        return Error(absl::StrCat("family ", name,
                                  " does not end with its unit _", unit));
      }
      current().unit = unit;
    } else {
      if (!Unescape(rest, &current().help)) {
        return Error("help text has an escape other than \\\\, \\\" or \\n");
      }
    }
    return absl::OkStatus();
  }

  // name [{labels}] value
  absl::Status Sample() {
    absl::string_view rest = line_;
    OpenMetricsSample sample;
    sample.name = TakeName(rest, /*colon=*/true);
    if (sample.name.empty()) {
      return Error(
          "a sample must start with a metric name "
          "[a-zA-Z_:][a-zA-Z0-9_:]*");
    }
    if (out_.families.empty() || metadata_.count("TYPE") == 0) {
      return Error(
          absl::StrCat("sample ", sample.name, " before its family's # TYPE"));
    }
    absl::Status s = CheckFamilyOf(sample.name);
    if (!s.ok()) return s;
    sample.family = current().name;
    if (absl::ConsumePrefix(&rest, "{")) {
      s = Labels(rest, &sample.labels);
      if (!s.ok()) return s;
    }
    if (!absl::ConsumePrefix(&rest, " ")) {
      return Error("the name or labels must be followed by one space");
    }
    if (absl::StrContains(rest, " ")) {
      return Error(
          "text after the value: timestamps and exemplars are not "
          "supported here, and values hold no spaces");
    }
    if (!IsNumber(rest)) {
      return Error(absl::StrCat("'", rest, "' is not a number"));
    }
    sample.value_text = std::string(rest);
    sample.value = ToDouble(rest);
    if (current().type == "counter" && !(sample.value >= 0)) {
      return Error("a counter's value must be a non-negative number");
    }
    if (current().type == "info" && sample.value != 1) {
      return Error("an info sample's value must be 1");
    }
    std::string key = sample.name;
    for (const auto& [k, v] : sample.labels) {
      absl::StrAppend(&key, "\x01", k, "\x02", v);
    }
    if (!sample_keys_.insert(key).second) {
      return Error("the same name and labels as an earlier sample");
    }
    has_samples_ = true;
    out_.samples.push_back(std::move(sample));
    return absl::OkStatus();
  }

  // A counter's samples are family_total or family_created; an info's
  // family_info; a gauge's and unknown's the family's name.
  absl::Status CheckFamilyOf(absl::string_view name) {
    const std::string& f = current().name;
    const std::string& type = current().type;
    bool ok = false;
    std::string want;
    if (type == "counter") {
      ok = name == f + "_total" || name == f + "_created";
      want = f + "_total or " + f + "_created";
    } else if (type == "info") {
      ok = name == f + "_info";
      want = f + "_info";
    } else {
      ok = name == f;
      want = f;
    }
    if (!ok) {
      return Error(absl::StrCat("sample ", name, " in ", type, " family ", f,
                                "; accepted: ", want));
    }
    return absl::OkStatus();
  }

  // After '{': name="value"{,name="value"} '}'.
  absl::Status Labels(absl::string_view& rest,
                      std::map<std::string, std::string>* labels) {
    if (absl::ConsumePrefix(&rest, "}")) return absl::OkStatus();
    for (;;) {
      const std::string label = TakeName(rest, /*colon=*/false);
      if (label.empty()) {
        return Error("a label name must match [a-zA-Z_][a-zA-Z0-9_]*");
      }
      if (!absl::ConsumePrefix(&rest, "=\"")) {
        return Error(
            absl::StrCat("label ", label, " must be followed by =\"value\""));
      }
      size_t end = 0;
      while (end < rest.size() && rest[end] != '"') {
        end += rest[end] == '\\' ? 2 : 1;
      }
      if (end >= rest.size()) {
        return Error(
            absl::StrCat("label ", label, "'s value has no end quote"));
      }
      std::string value;
      if (!Unescape(rest.substr(0, end), &value)) {
        return Error(absl::StrCat("label ", label,
                                  "'s value has an escape other than \\\\, "
                                  "\\\" or \\n"));
      }
      rest.remove_prefix(end + 1);
      if (!labels->emplace(label, std::move(value)).second) {
        return Error(absl::StrCat("label ", label, " appears twice"));
      }
      if (absl::ConsumePrefix(&rest, "}")) return absl::OkStatus();
      if (!absl::ConsumePrefix(&rest, ",")) {
        return Error("labels must be separated by ',' and closed by '}'");
      }
    }
  }

  // The family being read: the last one begun.
  OpenMetricsFamily& current() { return out_.families.back(); }

  OpenMetricsExposition out_;
  std::set<std::string> metadata_;  // Of current(): TYPE, UNIT, HELP.
  bool has_samples_ = false;        // current() has had a sample.
  std::set<std::string> seen_families_;
  std::set<std::string> sample_keys_;
  size_t line_number_ = 0;
  absl::string_view line_;
};

}  // namespace

const OpenMetricsSample* OpenMetricsExposition::Find(
    absl::string_view name,
    const std::map<std::string, std::string>& labels) const {
  for (const OpenMetricsSample& s : samples) {
    if (s.name == name && s.labels == labels) return &s;
  }
  return nullptr;
}

std::vector<const OpenMetricsSample*> OpenMetricsExposition::All(
    absl::string_view name) const {
  std::vector<const OpenMetricsSample*> out;
  for (const OpenMetricsSample& s : samples) {
    if (s.name == name) out.push_back(&s);
  }
  return out;
}

const OpenMetricsFamily* OpenMetricsExposition::Family(
    absl::string_view name) const {
  for (const OpenMetricsFamily& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

absl::StatusOr<OpenMetricsExposition> ParseOpenMetrics(absl::string_view text) {
  return Parser().Parse(text);
}

}  // namespace haltpool::openmetrics
