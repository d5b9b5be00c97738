// The idle-state table, the user-space twin of `struct cpuidle_state`.
//
// State 0 polls the wake word with the CPU's wait instruction; state 1 blocks
// in the kernel. Governors choose between them by index.

#ifndef HALTPOOL_IDLE_IDLE_STATE_H_
#define HALTPOOL_IDLE_IDLE_STATE_H_

#include <array>
#include <cstdint>

namespace haltpool::idle {

inline constexpr int kPollState = 0;
inline constexpr int kBlockState = 1;
inline constexpr int kStateCount = 2;

struct IdleState {
  const char* name;  // "POLL", "BLOCK" (cpupower's "Available idle states").
  const char* desc;  // One line for cpupower's Flags/Description.
  int64_t exit_latency_ns;      // Time from a wake to the waiter running again.
  int64_t target_residency_ns;  // Shortest idle for which entering pays off.
  bool polling;                 // Wakers can end it with a store, no syscall.
};

using StateTable = std::array<IdleState, kStateCount>;

// Block: a FUTEX_WAIT round trip between two threads is 11-15 us on a 2-vCPU
// KVM guest with no cpuidle driver (docs/DESIGN.md, "Why it matters"), so
// one wake costs about 6 us; blocking pays off only for idles at least twice
// that long. Poll: zero, as the kernel's poll_state.c.
inline constexpr int64_t kDefaultBlockExitLatencyNs = 6000;
inline constexpr int64_t kDefaultBlockTargetResidencyNs = 12000;

// The table: POLL, and BLOCK with the given costs (an environment's profile
// or a calibration measures them for the machine at hand).
inline constexpr StateTable MakeStateTable(int64_t block_exit_latency_ns,
                                           int64_t block_target_residency_ns) {
  return StateTable{{
      {"POLL", "CPUIDLE CORE POLL IDLE", 0, 0, true},
      {"BLOCK", "FUTEX_WAIT on the wake word", block_exit_latency_ns,
       block_target_residency_ns, false},
  }};
}

// The default table: POLL and BLOCK with the values above.
inline constexpr StateTable DefaultStateTable() {
  return MakeStateTable(kDefaultBlockExitLatencyNs,
                        kDefaultBlockTargetResidencyNs);
}

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_IDLE_STATE_H_
