// Deadline arithmetic the reactors share: absolute CLOCK_MONOTONIC
// nanoseconds (arch::kNoDeadline: none), saturating instead of overflowing,
// and the timespec the kernel takes.

#ifndef HALTPOOL_RUNTIME_IO_DEADLINE_H_
#define HALTPOOL_RUNTIME_IO_DEADLINE_H_

#include <time.h>

#include <cstdint>

#include "absl/time/time.h"
#include "arch/cycle_clock.h"

namespace haltpool {

inline constexpr int64_t kNsPerSecond = 1000000000;

// The deadline `duration_ns` after `now_ns`: `now_ns` itself for a duration
// of zero or less, arch::kNoDeadline if the sum would overflow.
constexpr int64_t DeadlineAfterNs(int64_t now_ns,
                                  int64_t duration_ns) noexcept {
  return duration_ns <= 0                           ? now_ns
         : duration_ns > arch::kNoDeadline - now_ns ? arch::kNoDeadline
                                                    : now_ns + duration_ns;
}

// `ns` (at least 0) as a timespec: struct timespec or __kernel_timespec.
template <typename Timespec>
Timespec ToTimespec(int64_t ns) noexcept {
  const timespec t = absl::ToTimespec(absl::Nanoseconds(ns));
  Timespec ts{};
  ts.tv_sec = t.tv_sec;
  ts.tv_nsec = t.tv_nsec;
  return ts;
}

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_IO_DEADLINE_H_
