// The profile table (idle/profile.h): one profile per environment, each
// valid as idle options, with its reason; and the choices the table's
// reasons promise.

#include "idle/profile.h"

#include <set>

#include "arch/hypervisor.h"
#include "gtest/gtest.h"
#include "idle/governor_registry.h"
#include "idle/idle_options.h"

namespace haltpool::idle {
namespace {

using arch::HostEnvironment;

TEST(Profile, EveryEnvironmentHasExactlyOne) {
  std::set<HostEnvironment> seen;
  for (const Profile& p : AllProfiles()) {
    EXPECT_TRUE(seen.insert(p.environment).second)
        << arch::HostEnvironmentName(p.environment) << " twice";
  }
  for (HostEnvironment e : arch::kAllHostEnvironments) {
    EXPECT_EQ(ProfileFor(e).environment, e) << arch::HostEnvironmentName(e);
  }
  EXPECT_EQ(seen.size(), arch::kAllHostEnvironments.size());
}

TEST(Profile, EachIsValidIdleOptionsWithAReason) {
  for (const Profile& p : AllProfiles()) {
    const std::string name(arch::HostEnvironmentName(p.environment));
    IdleOptions o;
    o.governor = std::string(p.governor);
    o.haltpoll.poll_ns = p.poll_ns;
    o.block_exit_latency_ns = p.block_exit_latency_ns;
    o.block_target_residency_ns = p.block_target_residency_ns;
    EXPECT_TRUE(ValidateIdleOptions(o).ok()) << name;
    EXPECT_TRUE(MakeGovernor(o).ok()) << name;
    EXPECT_GT(p.block_exit_latency_ns, 0) << name;
    EXPECT_EQ(p.block_target_residency_ns, 2 * p.block_exit_latency_ns) << name;
    EXPECT_GT(p.reason.size(), 40u) << name;
  }
}

TEST(Profile, PollsBlindlyOnlyWhereNoOneElseNeedsTheCpu) {
  // haltpoll's adaptive window polls after every short idle; only bare
  // metal and dedicated CPUs (KVM's hint, an LPAR) get it.
  for (const Profile& p : AllProfiles()) {
    const bool dedicated = p.environment == HostEnvironment::kBareMetal ||
                           p.environment == HostEnvironment::kKvmDedicated ||
                           p.environment == HostEnvironment::kLpar;
    EXPECT_EQ(p.governor, dedicated ? "haltpoll" : "predictive")
        << arch::HostEnvironmentName(p.environment);
  }
}

TEST(Profile, TheS390DriversExitLatencies) {
  EXPECT_EQ(ProfileFor(HostEnvironment::kLpar).block_exit_latency_ns, 5000);
  EXPECT_EQ(ProfileFor(HostEnvironment::kZvm).block_exit_latency_ns, 1000);
  EXPECT_EQ(ProfileFor(HostEnvironment::kKvmS390).block_exit_latency_ns, 1000);
}

TEST(Profile, DedicatedKvmIsTheKernelsHaltpoll) {
  const Profile& p = ProfileFor(HostEnvironment::kKvmDedicated);
  const IdleOptions plain;
  EXPECT_EQ(p.governor, "haltpoll");
  EXPECT_EQ(p.poll_ns, plain.haltpoll.poll_ns);  // guest_halt_poll_ns.
}

}  // namespace
}  // namespace haltpool::idle
