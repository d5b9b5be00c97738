#include "idle/haltpoll_governor.h"

#include "idle/idle_state.h"

namespace haltpool::idle {

Selection HaltpollGovernor::Select(const IdleContext&) noexcept {
  if (poll_limit_ns_ == 0) return {kBlockState, 0};
  // Last state was a poll that no event ended: block now.
  if (last_state_ == kPollState && poll_time_limit_) return {kBlockState, 0};
  // Last state was a block, or a poll that a wake ended: poll.
  return {kPollState, poll_limit_ns_};
}

void HaltpollGovernor::Reflect(int state, int64_t residency_ns,
                               IdleExit exit) noexcept {
  last_state_ = state;
  if (state == kPollState) {
    poll_time_limit_ = exit == IdleExit::kTimeout;
    return;
  }
  poll_time_limit_ = false;
  AdjustPollLimit(residency_ns);
}

void HaltpollGovernor::AdjustPollLimit(int64_t block_ns) noexcept {
  if (block_ns > poll_limit_ns_ && block_ns <= params_.poll_ns) {
    // Grow: times grow, at least grow_start, at most the cap.
    int64_t val = poll_limit_ns_ * params_.grow;
    if (val < params_.grow_start) val = params_.grow_start;
    if (val > params_.poll_ns) val = params_.poll_ns;
    poll_limit_ns_ = val;
  } else if (block_ns > params_.poll_ns && params_.allow_shrink) {
    // Shrink: divide, and reset to 0 below grow_start.
    int64_t val = poll_limit_ns_;
    if (params_.shrink == 0) {
      val = 0;
    } else {
      val /= params_.shrink;
      if (val < params_.grow_start) val = 0;
    }
    poll_limit_ns_ = val;
  }
}

}  // namespace haltpool::idle
