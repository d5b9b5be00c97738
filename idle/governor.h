// The governor interface: choose an idle state before each idle period,
// learn from how it ended. As cpuidle's `struct cpuidle_governor`
// (select/reflect), without the kernel's per-CPU device.
//
// A governor instance belongs to one waiter; Select and Reflect are called
// only from that waiter's thread, are noexcept, allocate nothing and cost tens
// of nanoseconds.

#ifndef HALTPOOL_IDLE_GOVERNOR_H_
#define HALTPOOL_IDLE_GOVERNOR_H_

#include <cstdint>
#include <limits>

#include "absl/strings/string_view.h"

namespace haltpool::idle {

// A poll window with no end: poll until woken or the caller's deadline.
inline constexpr int64_t kUnlimitedPollNs = std::numeric_limits<int64_t>::max();

// A block with no limit of its own: it ends at a wake or the deadline.
inline constexpr int64_t kBlockUntilDeadline =
    std::numeric_limits<int64_t>::max();

// What the governor knows when an idle period starts.
struct IdleContext {
  int64_t now_ns;       // The clock at selection.
  int64_t deadline_ns;  // When the caller stops waiting (a timer), or
                        // arch::kNoDeadline.
  // The longest poll the caller allows now (the pool's back-off under
  // contention); 0: no polling. As cpuidle's latency_req, the governor plans
  // within it (a block ahead of a wake pays only for the poll after it),
  // and the loop enforces it whatever the governor selects.
  int64_t poll_cap_ns = kUnlimitedPollNs;
};

// The state to enter; for the poll state how long to poll at most, for the
// block state when to stop blocking (before the caller's deadline, so the
// waiter can poll across a wake it expects; kBlockUntilDeadline: block until
// woken or the deadline).
struct Selection {
  int state;
  int64_t poll_limit_ns;
  int64_t block_until_ns = kBlockUntilDeadline;
};

// Why a state was left.
enum class IdleExit {
  kWoken,     // A wake ended it.
  kTimeout,   // The state's own limit passed (the poll window ran out, or
              // the block reached its block_until_ns).
  kDeadline,  // The caller's deadline passed.
};

class Governor {
 public:
  virtual ~Governor() = default;

  // The name operators select it by ("haltpoll").
  virtual absl::string_view name() const noexcept = 0;

  // Picks the state for the next idle period or the next step of the current
  // one (after a poll timed out, the loop asks again).
  virtual Selection Select(const IdleContext& context) noexcept = 0;

  // Reports the state just left, how long it lasted and why it ended.
  virtual void Reflect(int state, int64_t residency_ns,
                       IdleExit exit) noexcept = 0;

  // The current poll window, for statistics (kUnlimitedPollNs: no window).
  virtual int64_t poll_limit_ns() const noexcept = 0;
};

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_GOVERNOR_H_
