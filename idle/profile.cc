#include "idle/profile.h"

namespace haltpool::idle {
namespace {

using arch::HostEnvironment;

constexpr int64_t kUs = 1000;

// Target residency is twice the exit latency throughout: blocking pays off
// once the idle period covers the wake's cost twice (going to sleep and
// coming back), as idle_state.h's default table reasons.
const std::vector<Profile>& Table() {
  static const auto* kTable = new std::vector<Profile>{
      {HostEnvironment::kBareMetal, "haltpoll", 50 * kUs, 3 * kUs, 6 * kUs,
       "no VM exit on a wake: a FUTEX_WAKE costs a few microseconds, so "
       "polling past 50 us buys little; haltpoll's adaptive window keeps "
       "polls short"},
      {HostEnvironment::kKvmDedicated, "haltpoll", 200 * kUs, 6 * kUs, 12 * kUs,
       "a physical CPU per vCPU (KVM_HINTS_REALTIME) is where the kernel "
       "enables its own haltpoll driver: polling takes CPU from no one, so "
       "the kernel's 200 us cap"},
      {HostEnvironment::kKvmShared, "predictive", 50 * kUs, 20 * kUs, 40 * kUs,
       "vCPUs share physical CPUs: a poll burns CPU other guests need, and a "
       "wake of a halted vCPU costs an IPI and a VM exit (15-50 us on a "
       "2-vCPU KVM guest), so poll only across a wake that is expected"},
      {HostEnvironment::kHyperV, "predictive", 50 * kUs, 20 * kUs, 40 * kUs,
       "Hyper-V gives no dedicated-CPU hint and wakes a halted vCPU through "
       "a hypercall and an IPI: treated as shared KVM"},
      {HostEnvironment::kVmware, "predictive", 50 * kUs, 20 * kUs, 40 * kUs,
       "ESXi schedules vCPUs on shared cores by default and halts them on "
       "HLT: treated as shared KVM"},
      {HostEnvironment::kXen, "predictive", 50 * kUs, 25 * kUs, 50 * kUs,
       "Xen wakes a blocked vCPU through an event channel and the credit "
       "scheduler, a little slower than KVM's posted interrupts"},
      {HostEnvironment::kZvm, "predictive", 50 * kUs, 1 * kUs, 2 * kUs,
       "the s390 cpuidle driver gives 1 us of exit latency under z/VM: a "
       "wait state ends through the SIE instruction cheaply, but CPUs are "
       "shared, so no blind polling"},
      {HostEnvironment::kLpar, "haltpoll", 200 * kUs, 5 * kUs, 10 * kUs,
       "the s390 cpuidle driver gives 5 us of exit latency on an LPAR, whose "
       "CPUs PR/SM dispatches with little sharing: poll as on dedicated KVM"},
      {HostEnvironment::kKvmS390, "predictive", 50 * kUs, 1 * kUs, 2 * kUs,
       "the s390 cpuidle driver gives 1 us of exit latency under KVM on "
       "s390x; vCPUs are shared, so no blind polling"},
      {HostEnvironment::kUnknownVm, "predictive", 50 * kUs, 20 * kUs, 40 * kUs,
       "a hypervisor that does not say which: assume shared CPUs and costly "
       "wakes, as shared KVM"},
  };
  return *kTable;
}

}  // namespace

const Profile& ProfileFor(arch::HostEnvironment environment) {
  for (const Profile& p : Table()) {
    if (p.environment == environment) return p;
  }
  return Table().back();  // Unreachable: the table covers every value.
}

const std::vector<Profile>& AllProfiles() { return Table(); }

}  // namespace haltpool::idle
