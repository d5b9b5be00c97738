// A port of Linux's drivers/cpuidle/governors/haltpoll.c to user space.
//
// The poll window starts at 0 (block at once). After a block that lasted
// longer than the window but no more than the cap, the window grows; after a
// block longer than the cap, it shrinks. A poll that a wake ends changes
// nothing; a poll that runs out its window is followed by a block.

#ifndef HALTPOOL_IDLE_HALTPOLL_GOVERNOR_H_
#define HALTPOOL_IDLE_HALTPOLL_GOVERNOR_H_

#include <cstdint>

#include "idle/governor.h"

namespace haltpool::idle {

// The tunables, named and defaulted as the kernel's haltpoll module
// parameters (drivers/cpuidle/governors/haltpoll.c).
struct HaltpollParams {
  int64_t poll_ns = 200000;    // guest_halt_poll_ns: the window's cap.
  int64_t grow = 2;            // guest_halt_poll_grow: growth factor.
  int64_t grow_start = 50000;  // guest_halt_poll_grow_start: first window.
  int64_t shrink = 2;          // guest_halt_poll_shrink: divisor (0: reset).
  bool allow_shrink = true;    // guest_halt_poll_allow_shrink.
};

class HaltpollGovernor final : public Governor {
 public:
  explicit HaltpollGovernor(const HaltpollParams& params) noexcept
      : params_(params) {}

  absl::string_view name() const noexcept override { return "haltpoll"; }

  // Block if the window is 0 or the last poll ran it out; otherwise poll.
  Selection Select(const IdleContext& context) noexcept override;

  // Remembers the state; after a block, adjusts the window by its length.
  void Reflect(int state, int64_t residency_ns,
               IdleExit exit) noexcept override;

  int64_t poll_limit_ns() const noexcept override { return poll_limit_ns_; }

 private:
  // adjust_poll_limit(): grow or shrink the window after a block.
  void AdjustPollLimit(int64_t block_ns) noexcept;

  HaltpollParams params_;
  int64_t poll_limit_ns_ = 0;     // dev->poll_limit_ns
  int last_state_ = kNoState;     // dev->last_state_idx
  bool poll_time_limit_ = false;  // dev->poll_time_limit: last poll timed out.

  static constexpr int kNoState = -1;
};

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_HALTPOLL_GOVERNOR_H_
