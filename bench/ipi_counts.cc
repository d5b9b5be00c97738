#include "bench/ipi_counts.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace haltpool::bench {

absl::StatusOr<IpiCounts> ParseIpiCounts(absl::string_view proc_interrupts) {
  std::vector<absl::string_view> lines =
      absl::StrSplit(proc_interrupts, '\n', absl::SkipWhitespace());
  if (lines.empty()) {
    return absl::InvalidArgumentError("/proc/interrupts is empty");
  }
  // "           CPU0       CPU1       ": one column per CPU.
  const size_t cpus = std::vector<absl::string_view>(
                          absl::StrSplit(lines[0], ' ', absl::SkipEmpty()))
                          .size();
  IpiCounts counts;
  bool found = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const absl::string_view line = lines[i];
    uint64_t* field = nullptr;
    if (absl::EndsWith(absl::StripTrailingAsciiWhitespace(line),
                       "Rescheduling interrupts")) {
      field = &counts.rescheduling;
    } else if (absl::EndsWith(absl::StripTrailingAsciiWhitespace(line),
                              "Function call interrupts")) {
      field = &counts.function_call;
    } else {
      continue;
    }
    // "RES:   833567   745669   Rescheduling interrupts": the label, then
    // one count per CPU.
    const std::vector<absl::string_view> words =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.size() < cpus + 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("/proc/interrupts: too few counts in '", line, "'"));
    }
    for (size_t c = 1; c <= cpus; ++c) {
      uint64_t n = 0;
      if (!absl::SimpleAtoi(words[c], &n)) {
        return absl::InvalidArgumentError(
            absl::StrCat("/proc/interrupts: '", words[c],
                         "' is not a count in '", line, "'"));
      }
      *field += n;
    }
    found = true;
  }
  if (!found) {
    return absl::NotFoundError(
        "/proc/interrupts has no Rescheduling or Function call interrupts "
        "row");
  }
  return counts;
}

absl::StatusOr<IpiCounts> ReadIpiCounts(const arch::SystemFiles& files) {
  absl::StatusOr<std::string> text = files.Read(kProcInterrupts);
  if (!text.ok()) return text.status();
  return ParseIpiCounts(*text);
}

}  // namespace haltpool::bench
