// A Clock that stands still until a test moves it, for deterministic tests
// of governors and the idle loop. Header-only: the cross build links every
// test file into one binary, so nothing here may define an out-of-line
// symbol.

#ifndef HALTPOOL_TESTS_IDLE_FAKE_CLOCK_H_
#define HALTPOOL_TESTS_IDLE_FAKE_CLOCK_H_

#include <cstdint>

#include "idle/clock.h"

namespace haltpool::idle::fakes {

class FakeClock final : public Clock {
 public:
  // Starts at `start_ns`, far from 0 so that "now + window" arithmetic is
  // exercised away from the origin.
  explicit FakeClock(int64_t start_ns = 1000000000) : now_ns_(start_ns) {}

  int64_t NowNs() const noexcept override { return now_ns_; }

  // Moves the clock forward by `ns` (>= 0: the Clock contract forbids going
  // backwards).
  void Advance(int64_t ns) { now_ns_ += ns; }

  // Moves the clock to `ns`, which must not be in its past.
  void AdvanceTo(int64_t ns) {
    if (ns > now_ns_) now_ns_ = ns;
  }

 private:
  int64_t now_ns_;
};

}  // namespace haltpool::idle::fakes

#endif  // HALTPOOL_TESTS_IDLE_FAKE_CLOCK_H_
