// Governors with a constant poll window, for the ends and the middle of the
// tradeoff: `poll` (never blocks), `block` (never polls) and `fixed` (polls a
// set window, then blocks).

#ifndef HALTPOOL_IDLE_FIXED_GOVERNOR_H_
#define HALTPOOL_IDLE_FIXED_GOVERNOR_H_

#include <cstdint>

#include "idle/governor.h"

namespace haltpool::idle {

class FixedGovernor final : public Governor {
 public:
  // A governor named `name` that polls `window_ns` (0: never;
  // kUnlimitedPollNs: until woken or the deadline), then blocks.
  FixedGovernor(absl::string_view name, int64_t window_ns) noexcept
      : name_(name), window_ns_(window_ns) {}

  absl::string_view name() const noexcept override { return name_; }

  // Poll the window, unless it is 0 or the last poll ran it out.
  Selection Select(const IdleContext& context) noexcept override;

  void Reflect(int state, int64_t residency_ns,
               IdleExit exit) noexcept override;

  int64_t poll_limit_ns() const noexcept override { return window_ns_; }

 private:
  absl::string_view name_;
  int64_t window_ns_;
  bool poll_timed_out_ = false;
};

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_FIXED_GOVERNOR_H_
