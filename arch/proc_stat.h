// The one reader of /proc/stat: CPU time by state since boot (the aggregate
// "cpu " line and each "cpuN" line, steal included) and the runnable and
// blocked thread counts. Callers take what they need from one ProcStat:
// hypervisor tools the steal share, the pool's poll back-off steal and
// procs_running.
//
// One line scanner does all the parsing. It takes the file in pieces of any
// size and allocates nothing unless asked for the per-CPU lines, so the pool
// reads the real file from a worker about to idle (ReadProcStatNoAlloc, a
// path that allocates nothing: tests/pool/pool_memory_test.cc), and tests
// feed the same scanner captured files (tests/arch/testdata/).

#ifndef HALTPOOL_ARCH_PROC_STAT_H_
#define HALTPOOL_ARCH_PROC_STAT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arch/system_files.h"

namespace haltpool::arch {

inline constexpr char kProcStat[] = "/proc/stat";

// One "cpu" line of /proc/stat: time spent in each state since boot, in
// USER_HZ ticks (1/100 s on every Linux architecture). guest and guest_nice
// are already counted in user and nice.
struct CpuTimes {
  uint64_t user = 0;
  uint64_t nice = 0;
  uint64_t system = 0;
  uint64_t idle = 0;
  uint64_t iowait = 0;
  uint64_t irq = 0;
  uint64_t softirq = 0;
  uint64_t steal = 0;  // Runnable, but the hypervisor ran something else.
  uint64_t guest = 0;
  uint64_t guest_nice = 0;

  // user + nice + system + idle + iowait + irq + softirq + steal.
  uint64_t Total() const noexcept;
};

// A "cpuN" line: CPU N's times.
struct PerCpuTimes {
  int cpu = 0;
  CpuTimes times;
};

// What one read of /proc/stat says.
struct ProcStat {
  CpuTimes cpu;  // The "cpu " line: all CPUs together.
  // The "cpuN" lines in file order (offline CPUs have none); empty unless
  // the reader was asked for them.
  std::vector<PerCpuTimes> per_cpu;
  // Threads runnable right now on the whole machine, the reader included,
  // and threads blocked on I/O. Absent where the kernel does not print them.
  std::optional<int64_t> procs_running;
  std::optional<int64_t> procs_blocked;
};

// Takes /proc/stat in pieces of any size and keeps the lines ProcStat holds;
// every other line is skipped however long it is (intr has one number per
// interrupt: kilobytes on large machines). A cpu line needs at least the
// eight values up to steal (kernels since 2.6.11); guest and guest_nice, if
// present, must be numbers too, and read as 0 where absent. Allocates
// nothing unless `per_cpu` is true. One thread.
class ProcStatScanner {
 public:
  // With `per_cpu`, Finish also fills ProcStat::per_cpu (allocates).
  explicit ProcStatScanner(bool per_cpu = false) noexcept : per_cpu_(per_cpu) {}

  // The next bytes of the file. Throws only std::bad_alloc, and only with
  // `per_cpu`.
  void Feed(absl::string_view chunk);

  // After the last chunk: true and `out` set if there was a "cpu " line and
  // every line kept was well formed; false (and `out` untouched) otherwise,
  // with problem() and bad_line() saying why.
  bool Finish(ProcStat& out);

  // Why Finish returned false ("no 'cpu ' line", ...); empty if it did not.
  // A string literal.
  absl::string_view problem() const noexcept { return problem_; }

  // The first malformed line, as far as it was kept; empty if none was.
  absl::string_view bad_line() const noexcept {
    return absl::string_view(bad_line_, bad_length_);
  }

 private:
  // Longest line kept: "cpuNNNN" and ten 20-digit values with their spaces
  // take 217 characters; procs_running far fewer.
  static constexpr size_t kMaxLine = 256;

  void EndLine();
  void Fail(absl::string_view problem, absl::string_view line) noexcept;

  const bool per_cpu_;
  char line_[kMaxLine];
  size_t length_ = 0;
  bool too_long_ = false;  // The current line outgrew line_: not ours.
  bool have_cpu_ = false;
  absl::string_view problem_;  // The first problem found, if any.
  char bad_line_[kMaxLine];
  size_t bad_length_ = 0;
  ProcStat stat_;
};

// Parses a whole /proc/stat, per-CPU lines included. InvalidArgument naming
// /proc/stat, what is wrong and the line (no cpu line, too few values, a
// value that is not a number, a count that is not one) otherwise.
absl::StatusOr<ProcStat> ParseProcStat(absl::string_view content);

// ParseProcStat of /proc/stat read through `files`; NotFound without it.
absl::StatusOr<ProcStat> ReadProcStat(const SystemFiles& files);

// The "cpu " line of /proc/stat read through `files`.
absl::StatusOr<CpuTimes> ReadCpuTimes(const SystemFiles& files);

// The real /proc/stat read into a 4 KiB buffer on the stack and scanned
// without its per-CPU lines: an open, a few reads (about one per 4 KiB) and
// a close, no allocation: 12-14 us for the 1.2 KB file of a 2-vCPU KVM
// guest (20000 reads in a loop). false if the file cannot be read or is
// malformed (a sandbox without /proc). Any thread.
bool ReadProcStatNoAlloc(ProcStat& out) noexcept;

// The share of CPU time stolen between two readings: steal ticks over all
// ticks, in [0, 1]; 0 if no tick passed or the counters went backwards.
double StealFraction(const CpuTimes& before, const CpuTimes& after) noexcept;

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_PROC_STAT_H_
