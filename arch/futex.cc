#include "arch/futex.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "absl/time/time.h"
#include "arch/cycle_clock.h"

namespace haltpool::arch {
namespace {

int Op(int op, FutexScope scope) {
  return scope == FutexScope::kPrivate ? (op | FUTEX_PRIVATE_FLAG) : op;
}

uint32_t* Addr(const std::atomic<uint32_t>& word) {
  return reinterpret_cast<uint32_t*>(const_cast<std::atomic<uint32_t>*>(&word));
}

}  // namespace

FutexWaitResult FutexWaitUntil(const std::atomic<uint32_t>& word,
                               uint32_t expected, int64_t deadline_ns,
                               FutexScope scope) noexcept {
  timespec ts;
  timespec* tsp = nullptr;
  if (deadline_ns != kNoDeadline) {
    ts = absl::ToTimespec(absl::Nanoseconds(std::max<int64_t>(deadline_ns, 0)));
    tsp = &ts;
  }
  for (;;) {
    // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline.
    long rc = syscall(SYS_futex, Addr(word), Op(FUTEX_WAIT_BITSET, scope),
                      expected, tsp, nullptr, FUTEX_BITSET_MATCH_ANY);
    if (rc == 0) return FutexWaitResult::kWoken;
    switch (errno) {
      case EINTR:
        continue;
      case EAGAIN:
        return FutexWaitResult::kValueChanged;
      case ETIMEDOUT:
        return FutexWaitResult::kTimedOut;
      default:
        return FutexWaitResult::kError;
    }
  }
}

void FutexFallbackNap(int64_t deadline_ns) noexcept {
  const int64_t now = MonotonicNowNs();
  int64_t until = now + kFutexFallbackNapNs;
  if (deadline_ns != kNoDeadline && deadline_ns < until) until = deadline_ns;
  if (until <= now) return;
  const timespec ts{static_cast<time_t>(until / 1000000000),
                    static_cast<long>(until % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) ==
         EINTR) {
  }
}

int FutexWake(const std::atomic<uint32_t>& word, int count,
              FutexScope scope) noexcept {
  long rc = syscall(SYS_futex, Addr(word), Op(FUTEX_WAKE, scope), count,
                    nullptr, nullptr, 0);
  return rc < 0 ? 0 : static_cast<int>(rc);
}

}  // namespace haltpool::arch
