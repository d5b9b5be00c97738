// What hypervisor detection says: the environments haltpool tells apart,
// their names, and HypervisorInfo, which every detector (CPUID, firmware
// files, /proc/sysinfo) returns.

#ifndef HALTPOOL_ARCH_HYPERVISOR_INFO_H_
#define HALTPOOL_ARCH_HYPERVISOR_INFO_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arch/named_enum.h"

namespace haltpool::arch {

// The environments haltpool tells apart, one profile of defaults each
// (idle/profile.h).
enum class HostEnvironment : uint8_t {
  kBareMetal,     // No hypervisor.
  kKvmDedicated,  // KVM (x86) with KVM_HINTS_REALTIME: a physical CPU per vCPU.
  kKvmShared,     // KVM without that hint (every arm64 KVM guest).
  kHyperV,        // Microsoft Hyper-V (Azure).
  kVmware,        // VMware ESXi, Workstation, Fusion.
  kXen,           // Xen, HVM or PV.
  kZvm,           // IBM z/VM (s390x).
  kLpar,          // An s390x LPAR under PR/SM, no further hypervisor.
  kKvmS390,       // KVM on s390x.
  kUnknownVm,     // Some other hypervisor, or one that does not say which.
};

// Every environment with the name operators type in HALTPOOL_HYPERVISOR.
inline constexpr NamedEnum<HostEnvironment, 10> kHostEnvironments({{
    {HostEnvironment::kBareMetal, "bare-metal"},
    {HostEnvironment::kKvmDedicated, "kvm-dedicated"},
    {HostEnvironment::kKvmShared, "kvm-shared"},
    {HostEnvironment::kHyperV, "hyperv"},
    {HostEnvironment::kVmware, "vmware"},
    {HostEnvironment::kXen, "xen"},
    {HostEnvironment::kZvm, "zvm"},
    {HostEnvironment::kLpar, "lpar"},
    {HostEnvironment::kKvmS390, "kvm-s390"},
    {HostEnvironment::kUnknownVm, "unknown-vm"},
}});

// Every environment, in declaration order.
inline constexpr std::array<HostEnvironment, 10> kAllHostEnvironments =
    kHostEnvironments.values();

// The name operators type in HALTPOOL_HYPERVISOR: "bare-metal",
// "kvm-dedicated", "kvm-shared", "hyperv", "vmware", "xen", "zvm", "lpar",
// "kvm-s390", "unknown-vm".
absl::string_view HostEnvironmentName(HostEnvironment e);

// What detection found.
struct HypervisorInfo {
  HostEnvironment kind = HostEnvironment::kBareMetal;
  // Who: "KVM", "Microsoft Hyper-V", "z/VM 7.3.0", "Amazon EC2 m7g.large";
  // empty on bare metal.
  std::string vendor;
  // The hypervisor says each vCPU has a physical CPU to itself: x86 KVM's
  // KVM_HINTS_REALTIME, or an s390x LPAR whose CPUs are all dedicated.
  bool dedicated_hint = false;
  // The hypervisor tells the guest kernel how long its vCPUs waited to run,
  // so /proc/stat's steal column means something: KVM_FEATURE_STEAL_TIME,
  // Xen's runstate, s390x always. False where detection cannot tell.
  bool steal_time = false;
  // KVM_FEATURE_POLL_CONTROL: the guest kernel can turn off host-side halt
  // polling while it polls itself (MSR_KVM_POLL_CONTROL).
  bool poll_control = false;
  // x86 KVM only: CPUID 0x40000001 EAX (KVM_FEATURE_* bits) and EDX
  // (KVM_HINTS_* bits), as read; 0 elsewhere.
  uint32_t kvm_features = 0;
  uint32_t kvm_hints = 0;
  // What decided it: "cpuid 0x40000000 \"KVMKVMKVM\"", "/proc/sysinfo VM00
  // Control Program", "/sys/class/dmi/id/sys_vendor", ...
  std::string source;
};

// One line for humans: "kvm-shared: KVM (cpuid 0x40000000 \"KVMKVMKVM\");
// dedicated hint no, steal time yes, poll control yes".
std::string DescribeHypervisor(const HypervisorInfo& info);

// A HypervisorInfo for `kind`, named `vendor`, found by `source`; steal_time
// set where the kind always accounts it (Xen's runstate area). For the
// detectors (cpuid_hypervisor.h, firmware_hypervisor.h, s390_sysinfo.h).
HypervisorInfo FoundHypervisor(HostEnvironment kind, std::string vendor,
                               std::string source);

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_HYPERVISOR_INFO_H_
