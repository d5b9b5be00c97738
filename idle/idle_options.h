// The idle policy as a plain value: which governor, its tunables, and the
// wait mechanism. The runtime fills it from code and the environment; idle/
// only reads it.

#ifndef HALTPOOL_IDLE_IDLE_OPTIONS_H_
#define HALTPOOL_IDLE_IDLE_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "arch/wait_mechanism.h"
#include "idle/haltpoll_governor.h"
#include "idle/idle_state.h"
#include "idle/predictive_governor.h"

namespace haltpool::idle {

// folly's Baton spins about 2 us before it blocks; `fixed` starts there.
inline constexpr int64_t kDefaultFixedPollNs = 2000;

// Accepted ranges. A window past one second only burns a CPU; the factors
// are the kernel's unsigned ints, kept to sizes that mean something.
inline constexpr int64_t kMaxWindowNs = 1000000000;
inline constexpr int64_t kMinGrow = 1;
inline constexpr int64_t kMaxFactor = 1024;

struct IdleOptions {
  std::string governor = "haltpoll";            // One of GovernorNames().
  HaltpollParams haltpoll;                      // Used by `haltpoll`.
  int64_t fixed_poll_ns = kDefaultFixedPollNs;  // Used by `fixed`.
  std::optional<arch::WaitMechanism> wait;      // Unset: the CPU's best.
  // The block state's costs in the state table (idle_state.h).
  int64_t block_exit_latency_ns = kDefaultBlockExitLatencyNs;
  int64_t block_target_residency_ns = kDefaultBlockTargetResidencyNs;
  // `predictive`: the wake margin it starts with, until its own limited
  // blocks teach it how late this host's timed blocks end. A profile sets
  // its block exit latency here; the calibration, the lateness it measured.
  int64_t wake_margin_ns = kDefaultBlockExitLatencyNs;
  // `predictive`: the poll through each idle period while wakes are dense
  // (its rule 0); 0: never.
  int64_t dense_poll_ns = kDefaultDensePollNs;
};

// OK if every field is in range and the governor name is known; otherwise
// InvalidArgument naming the field, the value and what is accepted.
absl::Status ValidateIdleOptions(const IdleOptions& options);

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_IDLE_OPTIONS_H_
