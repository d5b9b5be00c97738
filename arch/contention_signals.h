// Cheap readings of whether the CPUs are contended, for the pool's poll
// back-off: runnable threads on the machine (/proc/stat's procs_running)
// and the calling thread's involuntary context switches (getrusage). Steal
// time is in arch/hypervisor.h (ReadCpuTimes, StealFraction).

#ifndef HALTPOOL_ARCH_CONTENTION_SIGNALS_H_
#define HALTPOOL_ARCH_CONTENTION_SIGNALS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arch/system_files.h"

namespace haltpool::arch {

// The "procs_running N" line of a /proc/stat: threads runnable right now on
// the whole machine, the reader included. InvalidArgument naming /proc/stat
// if the line is missing or not a number.
absl::StatusOr<int64_t> ParseProcsRunning(absl::string_view proc_stat);

// Times the calling thread was switched out while it could still run
// (getrusage(RUSAGE_THREAD).ru_nivcsw): another thread took its CPU, or the
// kernel preempted it for one. One system call.
int64_t ThreadInvoluntarySwitches();

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_CONTENTION_SIGNALS_H_
