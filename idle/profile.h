// Idle defaults per environment: which governor, how long a poll may last,
// and what the block state costs, for bare metal and each kind of
// hypervisor. The right idle choice depends on where the CPU runs: the x86
// haltpoll cpuidle driver is only enabled when the host promises dedicated
// CPUs (KVM_HINTS_REALTIME), the s390 driver gives its states different
// latencies on an LPAR and under z/VM or KVM, and guest polling burns host
// CPU that other guests need when vCPUs share physical ones.
//
// A profile only gives defaults: code options and HALTPOOL_* variables
// override each field, and a calibration at pool start replaces the block
// state's costs with the ones measured on the machine at hand.

#ifndef HALTPOOL_IDLE_PROFILE_H_
#define HALTPOOL_IDLE_PROFILE_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "arch/hypervisor.h"

namespace haltpool::idle {

struct Profile {
  arch::HostEnvironment environment;
  absl::string_view governor;  // One of GovernorNames().
  int64_t poll_ns;             // The poll cap (haltpoll's guest_halt_poll_ns).
  int64_t block_exit_latency_ns;
  int64_t block_target_residency_ns;
  absl::string_view reason;  // Why these values, one sentence.
};

// The profile of `environment`. Every environment has one.
const Profile& ProfileFor(arch::HostEnvironment environment);

// Every profile, in arch::kAllHostEnvironments order, for documentation.
const std::vector<Profile>& AllProfiles();

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_PROFILE_H_
