#include "idle/clock.h"

#include "arch/cycle_clock.h"

namespace haltpool::idle {
namespace {

class MonotonicClock final : public Clock {
 public:
  int64_t NowNs() const noexcept override { return arch::MonotonicNowNs(); }
};

}  // namespace

const Clock& RealClock() noexcept {
  static const MonotonicClock kClock;
  return kClock;
}

}  // namespace haltpool::idle
