// The inter-processor interrupts a machine has taken, from /proc/interrupts:
// the rows bench/io_wake counts a wake by. A thread woken on a CPU that
// halted (no cpuidle driver in a guest, or a deep state) needs an IPI, and in
// a guest every IPI is a VM exit; a wake to a thread that polls needs none.
//
// Two rows, found by their description so the reader serves every
// architecture: "Rescheduling interrupts" (x86 RES, arm64 IPI0) and
// "Function call interrupts" (x86 CAL, arm64 IPI1). The scheduler sends a
// remote wake-up as either, depending on the kernel version and on whether
// the wake is queued to the target CPU's wake list (a function call) or
// not (a reschedule).

#ifndef HALTPOOL_BENCH_IPI_COUNTS_H_
#define HALTPOOL_BENCH_IPI_COUNTS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arch/system_files.h"

namespace haltpool::bench {

inline constexpr char kProcInterrupts[] = "/proc/interrupts";

// IPIs received since boot, summed over every CPU.
struct IpiCounts {
  uint64_t rescheduling = 0;   // "Rescheduling interrupts".
  uint64_t function_call = 0;  // "Function call interrupts".

  uint64_t total() const noexcept { return rescheduling + function_call; }
};

// Parses the text of /proc/interrupts: the header line names the CPUs (one
// column each); each of the two rows gives a count per CPU, then its
// description. NotFound if neither row is there (an architecture that does
// not list IPIs); InvalidArgument on a row whose counts do not parse.
absl::StatusOr<IpiCounts> ParseIpiCounts(absl::string_view proc_interrupts);

// Reads and parses kProcInterrupts. One open, read and close; the kernel
// reads per-CPU counters and sends no IPI for it. Any thread.
absl::StatusOr<IpiCounts> ReadIpiCounts(
    const arch::SystemFiles& files = arch::RealSystemFiles());

}  // namespace haltpool::bench

#endif  // HALTPOOL_BENCH_IPI_COUNTS_H_
