// The readings behind the pool's poll back-off, each from the cheapest
// source that gives it, none of them /proc/stat (a poll back-off sample
// must not format every interrupt line; steal comes from arch/proc_stat.h,
// read far less often):
//  - the calling thread's involuntary context switches (getrusage);
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

// Times the calling thread was switched out while it could still run
// (getrusage(RUSAGE_THREAD).ru_nivcsw): another thread took its CPU, or the
// kernel preempted it for one. One system call, 0.33 us on a 2-vCPU KVM
// guest; 0 if it fails. Allocates nothing; any thread.
int64_t ThreadInvoluntarySwitches() noexcept;

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

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_CONTENTION_SIGNALS_H_
