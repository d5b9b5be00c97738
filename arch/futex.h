// Thin wrappers over futex(2) on a 32-bit atomic word.
//
// -errno never leaves this file: EINTR is retried (deadlines are absolute, so
// a retry cannot stretch the wait), EAGAIN and ETIMEDOUT become results.

#ifndef HALTPOOL_ARCH_FUTEX_H_
#define HALTPOOL_ARCH_FUTEX_H_

#include <atomic>
#include <cstdint>

namespace haltpool::arch {

// kPrivate: waiter and wakers share one address space (FUTEX_PRIVATE_FLAG,
// cheaper). kShared: the word lives in memory shared between processes.
enum class FutexScope { kPrivate, kShared };

enum class FutexWaitResult {
  kWoken,         // A FUTEX_WAKE ended the wait, or a spurious wake-up.
  kValueChanged,  // The word did not hold `expected` (EAGAIN).
  kTimedOut,      // The deadline passed.
  kError,         // The kernel refused the wait (ENOSYS under a seccomp
                  // filter, EFAULT, EINVAL): it did not sleep, and asking
                  // again at once would only spin. See FutexFallbackNap.
};

// For a caller whose FUTEX_WAIT failed with kError: sleeps with
// clock_nanosleep until `deadline_ns` or for kFutexFallbackNapNs, whichever
// is sooner, so the caller can look at its word again without burning a CPU.
// A wake then takes up to one nap to be noticed.
void FutexFallbackNap(int64_t deadline_ns) noexcept;

// 100 us: long enough that a broken futex costs about 1 % of a CPU in
// system calls, short enough that a wake is still noticed quickly.
inline constexpr int64_t kFutexFallbackNapNs = 100000;

// Sleeps while `word` holds `expected`, until woken or CLOCK_MONOTONIC
// reaches `deadline_ns` (arch::kNoDeadline: no limit). Callers must re-check
// the word: kWoken may be spurious. The kernel's compare gives the ordering;
// callers that need acquire ordering load the word afterwards.
FutexWaitResult FutexWaitUntil(const std::atomic<uint32_t>& word,
                               uint32_t expected, int64_t deadline_ns,
                               FutexScope scope) noexcept;

// Wakes up to `count` waiters on `word`; returns how many were woken.
// A system call (about a microsecond, more when it sends an IPI).
int FutexWake(const std::atomic<uint32_t>& word, int count,
              FutexScope scope) noexcept;

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_FUTEX_H_
