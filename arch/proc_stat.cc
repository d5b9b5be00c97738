#include "arch/proc_stat.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace haltpool::arch {
namespace {

constexpr absl::string_view kRunningPrefix = "procs_running ";
constexpr absl::string_view kBlockedPrefix = "procs_blocked ";

// The values of a cpu line after its "cpuN" word, into `t`: false unless at
// least the eight up to steal, and guest and guest_nice where present, are
// numbers. Values past the tenth (none yet) are ignored.
bool ParseCpuValues(absl::string_view values, CpuTimes& t) noexcept {
  // user nice system idle iowait irq softirq steal [guest guest_nice]
  constexpr size_t kNeeded = 8;
  uint64_t* fields[] = {&t.user,   &t.nice,      &t.system,  &t.idle,
                        &t.iowait, &t.irq,       &t.softirq, &t.steal,
                        &t.guest,  &t.guest_nice};
  size_t n = 0;
  for (absl::string_view word :
       absl::StrSplit(values, ' ', absl::SkipEmpty())) {
    if (n < std::size(fields) && !absl::SimpleAtoi(word, fields[n])) {
      return false;
    }
    ++n;
  }
  return n >= kNeeded;
}

bool ParseCount(absl::string_view rest, std::optional<int64_t>& n) noexcept {
  int64_t v = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &v) || v < 0) {
    return false;
  }
  n = v;
  return true;
}

}  // namespace

uint64_t CpuTimes::Total() const noexcept {
  return user + nice + system + idle + iowait + irq + softirq + steal;
}

void ProcStatScanner::Feed(absl::string_view chunk) {
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

void ProcStatScanner::Fail(absl::string_view problem,
                           absl::string_view line) noexcept {
  if (!problem_.empty()) return;
  problem_ = problem;
  std::memcpy(bad_line_, line.data(), line.size());
  bad_length_ = line.size();
}

void ProcStatScanner::EndLine() {
  const absl::string_view whole(line_, length_);
  absl::string_view line = whole;
  const bool too_long = too_long_;
  length_ = 0;
  too_long_ = false;
  if (too_long || !problem_.empty()) return;
  if (absl::ConsumePrefix(&line, "cpu")) {
    // "cpu " is all CPUs, "cpuN " CPU N.
    const size_t blank = line.find(' ');
    const absl::string_view id = line.substr(0, blank);
    const absl::string_view values =
        blank == absl::string_view::npos ? "" : line.substr(blank);
    if (id.empty()) {
      if (have_cpu_) return;  // Only the first counts.
      have_cpu_ = true;
      if (!ParseCpuValues(values, stat_.cpu)) {
        Fail(
            "the cpu line lacks the eight values up to steal (user nice "
            "system idle iowait irq softirq steal), or one is not a number",
            whole);
      }
      return;
    }
    int cpu = 0;
    if (!per_cpu_ || !absl::SimpleAtoi(id, &cpu)) return;
    PerCpuTimes p;
    p.cpu = cpu;
    if (!ParseCpuValues(values, p.times)) {
      Fail(
          "a per-CPU line lacks the eight values up to steal, or one is not "
          "a number",
          whole);
      return;
    }
    stat_.per_cpu.push_back(p);
    return;
  }
  if (!stat_.procs_running && absl::ConsumePrefix(&line, kRunningPrefix)) {
    if (!ParseCount(line, stat_.procs_running)) {
      Fail("procs_running is not a count", whole);
    }
    return;
  }
  if (!stat_.procs_blocked && absl::ConsumePrefix(&line, kBlockedPrefix)) {
    if (!ParseCount(line, stat_.procs_blocked)) {
      Fail("procs_blocked is not a count", whole);
    }
  }
}

bool ProcStatScanner::Finish(ProcStat& out) {
  if (length_ != 0 || too_long_) EndLine();  // A last line with no newline.
  if (problem_.empty() && !have_cpu_) problem_ = "no 'cpu ' line";
  if (!problem_.empty()) return false;
  out = std::move(stat_);
  return true;
}

absl::StatusOr<ProcStat> ParseProcStat(absl::string_view content) {
  ProcStatScanner scanner(/*per_cpu=*/true);
  scanner.Feed(content);
  ProcStat stat;
  if (!scanner.Finish(stat)) {
    std::string message = absl::StrCat(kProcStat, ": ", scanner.problem());
    if (!scanner.bad_line().empty()) {
      absl::StrAppend(&message, ": '", scanner.bad_line(), "'");
    }
    return absl::InvalidArgumentError(message);
  }
  return stat;
}

absl::StatusOr<ProcStat> ReadProcStat(const SystemFiles& files) {
  absl::StatusOr<std::string> content = files.Read(kProcStat);
  if (!content.ok()) return content.status();
  return ParseProcStat(*content);
}

absl::StatusOr<CpuTimes> ReadCpuTimes(const SystemFiles& files) {
  absl::StatusOr<ProcStat> stat = ReadProcStat(files);
  if (!stat.ok()) return stat.status();
  return stat->cpu;
}

bool ReadProcStatNoAlloc(ProcStat& out) noexcept {
  const int fd = open(kProcStat, O_RDONLY | O_CLOEXEC);
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

double StealFraction(const CpuTimes& before, const CpuTimes& after) noexcept {
  const uint64_t t0 = before.Total(), t1 = after.Total();
  if (t1 <= t0 || after.steal < before.steal) return 0.0;
  const double steal = static_cast<double>(after.steal - before.steal);
  const double total = static_cast<double>(t1 - t0);
  return steal >= total ? 1.0 : steal / total;
}

}  // namespace haltpool::arch
