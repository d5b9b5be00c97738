// Whether the calling thread loses its CPU while it could still run, for the
// pool's poll back-off: its involuntary context switches (getrusage). The
// back-off's other two signals, runnable threads and steal time, come from
// /proc/stat through arch/proc_stat.h.

#ifndef HALTPOOL_ARCH_CONTENTION_SIGNALS_H_
#define HALTPOOL_ARCH_CONTENTION_SIGNALS_H_

#include <cstdint>

namespace haltpool::arch {

// Times the calling thread was switched out while it could still run
// (getrusage(RUSAGE_THREAD).ru_nivcsw): another thread took its CPU, or the
// kernel preempted it for one. One system call, 0.33 us on a 2-vCPU KVM
// guest; 0 if it fails. Allocates nothing; any thread.
int64_t ThreadInvoluntarySwitches() noexcept;

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_CONTENTION_SIGNALS_H_
