// Monotonic time for deadlines: CLOCK_MONOTONIC in nanoseconds, and the CPU's
// own counter (TSC, CNTVCT_EL0, the TOD clock) that wait loops compare
// against without a system call.

#ifndef HALTPOOL_ARCH_CYCLE_CLOCK_H_
#define HALTPOOL_ARCH_CYCLE_CLOCK_H_

#include <time.h>

#include <cstdint>
#include <limits>

#include "arch/platform.h"

namespace haltpool::arch {

// A deadline that never passes.
inline constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();

// CLOCK_MONOTONIC in nanoseconds (the vDSO: tens of ns, no system call).
inline int64_t MonotonicNowNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The raw CPU counter; a few cycles to a few tens of ns.
inline uint64_t ReadCycles() noexcept { return platform::ReadCycles(); }

// Counter ticks per nanosecond: stated by the CPU where it can (arm64
// CNTFRQ_EL0, s390x TOD), otherwise measured once against CLOCK_MONOTONIC
// over about 0.3 ms on first use. Thread-safe.
double CyclesPerNs() noexcept;

// The counter value at which CLOCK_MONOTONIC reaches `deadline_ns`
// (UINT64_MAX for kNoDeadline). Costs one counter and one clock read.
uint64_t DeadlineToCycles(int64_t deadline_ns) noexcept;

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_CYCLE_CLOCK_H_
