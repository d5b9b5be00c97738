// The readings behind the pool's poll back-off, each from the cheapest
// source that gives it, none of them /proc/stat (a poll back-off sample
// must not format every interrupt line; steal comes from arch/proc_stat.h,
// read far less often):
//  - how long the calling thread waited for a CPU while it could run
//    (/proc/thread-self/schedstat, the kernel's run delay);
//  - how long runnable threads waited for a CPU, machine-wide
//    (/proc/pressure/cpu, the kernel's pressure stall information);
//  - how many threads are runnable right now, machine-wide (/proc/loadavg),
//    for kernels without pressure stall information.
// The parsers take the file's text, so tests feed them captured files; the
// readers read the real files into a buffer on the stack and allocate
// nothing.

#ifndef HALTPOOL_ARCH_CONTENTION_SIGNALS_H_
#define HALTPOOL_ARCH_CONTENTION_SIGNALS_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace haltpool::arch {

inline constexpr char kProcPressureCpu[] = "/proc/pressure/cpu";
inline constexpr char kProcLoadavg[] = "/proc/loadavg";
// The opening thread's own: a ProcFile of it reads that thread's figures.
inline constexpr char kProcThreadSchedstat[] = "/proc/thread-self/schedstat";

// The "some ... total=N" value of /proc/pressure/cpu: microseconds, since
// boot, in which at least one runnable thread waited for a CPU. Absent if
// the text has no such line or N is not a count. Allocates nothing.
std::optional<int64_t> ParseCpuPressureSomeUs(absl::string_view text) noexcept;

// ParseCpuPressureSomeUs of the real /proc/pressure/cpu, opened, read and
// closed. Absent if the file cannot be read: kernels before 4.20, or booted
// with psi=0, or a sandbox without /proc. Any thread.
std::optional<int64_t> ReadCpuPressureSomeUs() noexcept;

// A /proc file kept open and read again from its start, one pread per
// reading (the kernel writes the text anew for a read at offset 0): a third
// of what opening it each time costs (measured by the micro_contention
// benchmark).
class ProcFile {
 public:
  // Opens `path`; available() says whether that worked.
  explicit ProcFile(const char* path) noexcept;
  ~ProcFile();
  ProcFile(const ProcFile&) = delete;
  ProcFile& operator=(const ProcFile&) = delete;

  bool available() const noexcept { return fd_ >= 0; }

  // The file's text from its start into `buf`: the bytes read, or -1 if
  // not available() or the read failed. Allocates nothing. One thread at a
  // time.
  ssize_t Read(char* buf, size_t size) noexcept;

 private:
  int fd_ = -1;
};

// ParseCpuPressureSomeUs of `file` (/proc/pressure/cpu kept open).
std::optional<int64_t> ReadCpuPressureSomeUs(ProcFile& file) noexcept;

// The runnable thread count of /proc/loadavg ("0.09 0.91 1.60 3/148 21880":
// 3), the reader included. Absent if the text is not in that form.
// Allocates nothing.
std::optional<int64_t> ParseLoadavgRunning(absl::string_view text) noexcept;

// ParseLoadavgRunning of the real /proc/loadavg; absent if it cannot be
// read. About 2 us (the micro_contention benchmark). Any thread.
std::optional<int64_t> ReadLoadavgRunning() noexcept;

// ParseLoadavgRunning of `file` (/proc/loadavg kept open).
std::optional<int64_t> ReadLoadavgRunning(ProcFile& file) noexcept;

// The run delay of a /proc/<pid>/task/<tid>/schedstat text ("2682310 383262
// 3": time on a CPU, time runnable but waiting for one, timeslices; ns):
// 383262, how long the thread waited for a CPU since it started, wakes
// included. Absent if the text is not in that form. Allocates nothing.
std::optional<int64_t> ParseSchedstatRunDelayNs(
    absl::string_view text) noexcept;

// ParseSchedstatRunDelayNs of `file`, kProcThreadSchedstat kept open by the
// thread it describes. Absent where the kernel has no schedstat
// (CONFIG_SCHED_INFO off) or /proc is missing.
std::optional<int64_t> ReadRunDelayNs(ProcFile& file) noexcept;

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_CONTENTION_SIGNALS_H_
