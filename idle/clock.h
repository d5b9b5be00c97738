// The clock the idle loop and governors measure with. Injected, so governor
// tests run on a fake clock, deterministic and fast.

#ifndef HALTPOOL_IDLE_CLOCK_H_
#define HALTPOOL_IDLE_CLOCK_H_

#include <cstdint>

namespace haltpool::idle {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic nanoseconds; any thread; must not go backwards.
  virtual int64_t NowNs() const noexcept = 0;
};

// CLOCK_MONOTONIC. A process-wide instance; any thread.
const Clock& RealClock() noexcept;

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_CLOCK_H_
