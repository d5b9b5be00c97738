#include "arch/contention_signals.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "arch/hypervisor.h"

namespace haltpool::arch {
namespace {

constexpr char kProcStatPath[] = "/proc/stat";
constexpr absl::string_view kCpuPrefix = "cpu ";
constexpr absl::string_view kRunningPrefix = "procs_running ";

// The values of a "cpu " line, as ParseProcStat reads them but without its
// vector: false unless at least the eight up to steal are numbers.
bool ParseCpuLine(absl::string_view line, ProcStatSignals& s) noexcept {
  // user nice system idle iowait irq softirq steal [guest guest_nice]
  constexpr size_t kNeeded = 8;
  constexpr size_t kSteal = 7;
  uint64_t values[kNeeded] = {};
  size_t words = 0;
  bool first = true;  // "cpu" itself.
  for (absl::string_view word : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
    if (first) {
      first = false;
      continue;
    }
    uint64_t v = 0;
    // guest and guest_nice must be numbers too, as ParseProcStat wants.
    if (words < kNeeded + 2 && !absl::SimpleAtoi(word, &v)) return false;
    if (words < kNeeded) values[words] = v;
    ++words;
  }
  if (words < kNeeded) return false;
  s.steal_ticks = values[kSteal];
  s.total_ticks = 0;
  for (uint64_t v : values) s.total_ticks += v;
  return true;
}

bool ParseRunningLine(absl::string_view rest, int64_t& n) noexcept {
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &n) && n >= 0;
}

}  // namespace

absl::StatusOr<int64_t> ParseProcsRunning(absl::string_view proc_stat) {
  for (absl::string_view line : absl::StrSplit(proc_stat, '\n')) {
    if (!absl::ConsumePrefix(&line, kRunningPrefix)) continue;
    int64_t n = 0;
    if (!ParseRunningLine(line, n)) {
      return absl::InvalidArgumentError(absl::StrCat(
          kProcStatPath, ": procs_running is not a count: '", line, "'"));
    }
    return n;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(kProcStatPath, ": no procs_running line"));
}

double StealFraction(const ProcStatSignals& before,
                     const ProcStatSignals& after) noexcept {
  // As CpuTimes whose Total() is total_ticks: the rule lives in one place.
  auto times = [](const ProcStatSignals& s) {
    CpuTimes t;
    t.steal = s.steal_ticks;
    t.user = s.total_ticks >= s.steal_ticks ? s.total_ticks - s.steal_ticks : 0;
    return t;
  };
  return arch::StealFraction(times(before), times(after));
}

absl::StatusOr<ProcStatSignals> ParseProcStatSignals(
    absl::string_view proc_stat) {
  ProcStatScanner scanner;
  scanner.Feed(proc_stat);
  ProcStatSignals s;
  if (!scanner.Finish(s)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kProcStatPath, ": ", scanner.problem()));
  }
  return s;
}

absl::StatusOr<ProcStatSignals> ReadProcStatSignals(const SystemFiles& files) {
  absl::StatusOr<std::string> content = files.Read(kProcStatPath);
  if (!content.ok()) return content.status();
  return ParseProcStatSignals(*content);
}

void ProcStatScanner::Feed(absl::string_view chunk) noexcept {
  while (!chunk.empty()) {
    const size_t newline = chunk.find('\n');
    const absl::string_view piece = chunk.substr(0, newline);
    if (!too_long_) {
      if (length_ + piece.size() <= kMaxLine) {
        std::memcpy(line_ + length_, piece.data(), piece.size());
        length_ += piece.size();
      } else {
        too_long_ = true;
      }
    }
    if (newline == absl::string_view::npos) return;
    EndLine();
    chunk.remove_prefix(newline + 1);
  }
}

void ProcStatScanner::EndLine() noexcept {
  absl::string_view line(line_, length_);
  if (!too_long_) {
    if (!have_cpu_ && absl::StartsWith(line, kCpuPrefix)) {
      have_cpu_ = true;
      if (!ParseCpuLine(line, signals_) && problem_.empty()) {
        problem_ =
            "the cpu line lacks the eight values up to steal, or one is not "
            "a number";
      }
    } else if (!have_running_ && absl::ConsumePrefix(&line, kRunningPrefix)) {
      have_running_ = true;
      if (!ParseRunningLine(line, signals_.procs_running) && problem_.empty()) {
        problem_ = "procs_running is not a count";
      }
    }
  }
  length_ = 0;
  too_long_ = false;
}

bool ProcStatScanner::Finish(ProcStatSignals& out) noexcept {
  if (length_ != 0 || too_long_) EndLine();  // A last line with no newline.
  if (problem_.empty() && !have_cpu_) problem_ = "no 'cpu ' line";
  if (problem_.empty() && !have_running_) problem_ = "no procs_running line";
  if (!problem_.empty()) return false;
  out = signals_;
  return true;
}

bool ReadProcStatSignalsNoAlloc(ProcStatSignals& out) noexcept {
  const int fd = open(kProcStatPath, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ProcStatScanner scanner;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      close(fd);
      return false;
    }
    scanner.Feed(absl::string_view(buf, static_cast<size_t>(n)));
  }
  close(fd);
  return scanner.Finish(out);
}

int64_t ThreadInvoluntarySwitches() noexcept {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  return usage.ru_nivcsw;
}

}  // namespace haltpool::arch
