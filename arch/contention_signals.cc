#include "arch/contention_signals.h"

#include <sys/resource.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace haltpool::arch {

absl::StatusOr<int64_t> ParseProcsRunning(absl::string_view proc_stat) {
  for (absl::string_view line : absl::StrSplit(proc_stat, '\n')) {
    if (!absl::ConsumePrefix(&line, "procs_running ")) continue;
    int64_t n = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &n) || n < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "/proc/stat: procs_running is not a count: '", line, "'"));
    }
    return n;
  }
  return absl::InvalidArgumentError("/proc/stat: no procs_running line");
}

int64_t ThreadInvoluntarySwitches() {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  return usage.ru_nivcsw;
}

}  // namespace haltpool::arch
