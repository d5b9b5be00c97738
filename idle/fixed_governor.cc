#include "idle/fixed_governor.h"

#include "idle/idle_state.h"

namespace haltpool::idle {

Selection FixedGovernor::Select(const IdleContext&) noexcept {
  if (window_ns_ == kUnlimitedPollNs) return {kPollState, window_ns_};
  if (window_ns_ == 0 || poll_timed_out_) return {kBlockState, 0};
  return {kPollState, window_ns_};
}

void FixedGovernor::Reflect(int state, int64_t, IdleExit exit) noexcept {
  poll_timed_out_ = state == kPollState && exit == IdleExit::kTimeout;
}

}  // namespace haltpool::idle
