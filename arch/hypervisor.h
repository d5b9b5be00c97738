// Where the process runs: bare metal or which hypervisor, with the hints the
// hypervisor gives its guests, and how much CPU time it steals.
//
// x86-64 asks CPUID (leaf 1 ECX[31], the vendor leaves from 0x40000000, the
// KVM feature leaf); arm64 reads the device tree's hypervisor node,
// /sys/hypervisor and DMI; s390x reads /proc/sysinfo. Steal time comes from
// /proc/stat. Every parser is a plain function of recorded CPUID registers or
// of a SystemFiles, so tests feed captures from each kind of machine on any
// architecture; only HostHypervisor() and ReadHostCpuid() look at this one.

#ifndef HALTPOOL_ARCH_HYPERVISOR_H_
#define HALTPOOL_ARCH_HYPERVISOR_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arch/named_enum.h"
#include "arch/system_files.h"

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

// The name operators type in HALTPOOL_HYPERVISOR ("kvm-shared").
absl::string_view HostEnvironmentName(HostEnvironment e);

// Parses a name as printed by HostEnvironmentName, exactly (no case folding,
// no blanks). InvalidArgument naming the accepted names otherwise.
absl::StatusOr<HostEnvironment> ParseHostEnvironment(absl::string_view name);

// "bare-metal|kvm-dedicated|...|unknown-vm", for error messages.
absl::string_view HostEnvironmentNames();

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

// --- x86-64: CPUID -----------------------------------------------------------

struct CpuidRegs {
  uint32_t eax = 0;
  uint32_t ebx = 0;
  uint32_t ecx = 0;
  uint32_t edx = 0;
};

// CPUID leaves (subleaf 0) as recorded from one CPU, by leaf. A leaf missing
// from the map reads as all zeros, as AMD CPUs answer unused leaves of the
// hypervisor range.
using CpuidLeaves = std::map<uint32_t, CpuidRegs>;

// Leaf 1 ECX[31]: "a hypervisor is present", set by every hypervisor and
// never by a CPU on bare metal.
inline constexpr int kCpuidHypervisorBit = 31;

// The hypervisor vendor leaves: a 12-byte signature in EBX, ECX, EDX of
// every 0x100th leaf from 0x40000000 to below 0x40010000, as the kernel's
// hypervisor_cpuid_base() scans them. Xen, and KVM, offering Hyper-V's
// interface put "Microsoft Hv" at 0x40000000 and their own signature at
// 0x40000100.
inline constexpr uint32_t kCpuidHypervisorFirst = 0x40000000;
inline constexpr uint32_t kCpuidHypervisorEnd = 0x40010000;
inline constexpr uint32_t kCpuidHypervisorStep = 0x100;

// KVM's feature leaf is its base + 1 (KVM_CPUID_FEATURES). Bit numbers as in
// Linux's arch/x86/include/uapi/asm/kvm_para.h; hints are in EDX.
inline constexpr int kKvmFeatureStealTime = 5;     // KVM_FEATURE_STEAL_TIME
inline constexpr int kKvmFeaturePvUnhalt = 7;      // KVM_FEATURE_PV_UNHALT
inline constexpr int kKvmFeaturePollControl = 12;  // KVM_FEATURE_POLL_CONTROL
inline constexpr int kKvmHintsRealtime = 0;        // KVM_HINTS_REALTIME

// The signature of a vendor leaf: EBX, ECX, EDX as 12 little-endian bytes,
// NULs included ("KVMKVMKVM\0\0\0").
std::string CpuidSignature(const CpuidRegs& regs);

// The names of the KVM_FEATURE_* bits set in `features` (CPUID 0x40000001
// EAX), lowest bit first: {"clocksource", ..., "steal_time", ...}; unknown
// bits as "bit17".
std::vector<std::string> KvmFeatureNames(uint32_t features);

// Where a CPU with these recorded leaves runs. Leaf 1 ECX[31] clear: bare
// metal. Otherwise the vendor leaves decide: KVM (dedicated with
// KVM_HINTS_REALTIME, else shared; its features from base + 1), Hyper-V,
// VMware, Xen; QEMU TCG, bhyve, ACRN, Parallels, QNX, Jailhouse, VirtualBox
// and unknown or missing signatures are kUnknownVm with the vendor named. A
// hypervisor's own signature wins over "Microsoft Hv" at a lower leaf.
HypervisorInfo HypervisorFromCpuid(const CpuidLeaves& leaves);

// The leaves HypervisorFromCpuid reads, from this CPU: leaf 1 and, with the
// hypervisor bit set, every vendor leaf with a signature and the leaf after
// each known signature. Empty where the architecture has no CPUID. About 260
// CPUID instructions under a hypervisor (each a VM exit): call once.
CpuidLeaves ReadHostCpuid();

// --- arm64 and other architectures without CPUID: firmware files ----------

inline constexpr char kDeviceTreeHypervisor[] =
    "/proc/device-tree/hypervisor/compatible";
inline constexpr char kSysHypervisorType[] = "/sys/hypervisor/type";
inline constexpr char kDmiSysVendor[] = "/sys/class/dmi/id/sys_vendor";
inline constexpr char kDmiProductName[] = "/sys/class/dmi/id/product_name";

// Where the machine runs according to its firmware, in this order: the
// device tree's hypervisor node ("xen,xen" -> Xen, "linux,kvm" -> KVM),
// /sys/hypervisor/type ("xen"), then DMI: "QEMU" with a "KVM ..." product is
// KVM (without KVM, QEMU emulates: kUnknownVm), "Amazon EC2" is KVM (Nitro)
// unless the product is a bare-metal size ("c7g.metal", "m8g.metal-24xl"),
// "Microsoft Corporation" with "Virtual Machine" is Hyper-V, "VMware, Inc."
// VMware, "Xen" Xen, "Google" KVM, "innotek GmbH" (VirtualBox) and "Parallels"
// kUnknownVm. Anything else, or no such file at all, is bare metal. KVM found
// this way is kKvmShared: arm64 has no dedicated-CPU hint. Never fails;
// unreadable files count as missing.
HypervisorInfo HypervisorFromFirmware(const SystemFiles& files);

// --- s390x: /proc/sysinfo --------------------------------------------------

inline constexpr char kProcSysinfo[] = "/proc/sysinfo";

// Where an s390x machine runs according to /proc/sysinfo (the kernel's STSI
// output): a "VM00 Control Program:" line names the hypervisor right under
// this guest ("z/VM    7.3.0" -> kZvm, "KVM/Linux" -> kKvmS390, anything else
// kUnknownVm); without one, the "LPAR ..." lines mean an LPAR (dedicated
// hint if "LPAR CPUs Shared" is 0). NotFound without /proc/sysinfo (not
// s390x); InvalidArgument naming the file if it has neither.
absl::StatusOr<HypervisorInfo> HypervisorFromSysinfo(const SystemFiles& files);

// --- All architectures -----------------------------------------------------

// Where a machine with these CPUID leaves and files runs: CPUID if `cpuid`
// is not empty, else /proc/sysinfo where it exists, else the firmware files.
// A /proc/sysinfo that cannot be read or understood gives kUnknownVm with the
// error as its source, never an error.
HypervisorInfo DetectHypervisor(const CpuidLeaves& cpuid,
                                const SystemFiles& files);

// DetectHypervisor(ReadHostCpuid(), RealSystemFiles()) for this machine,
// computed on first use (under a millisecond); thread-safe.
const HypervisorInfo& HostHypervisor();

// --- Steal time: /proc/stat ------------------------------------------------

inline constexpr char kProcStat[] = "/proc/stat";

// The "cpu " line of /proc/stat: time all CPUs spent in each state since
// boot, in USER_HZ ticks (1/100 s on every Linux architecture). guest and
// guest_nice are already counted in user and nice.
struct CpuTimes {
  uint64_t user = 0;
  uint64_t nice = 0;
  uint64_t system = 0;
  uint64_t idle = 0;
  uint64_t iowait = 0;
  uint64_t irq = 0;
  uint64_t softirq = 0;
  uint64_t steal = 0;  // Runnable, but the hypervisor ran something else.
  uint64_t guest = 0;
  uint64_t guest_nice = 0;

  // user + nice + system + idle + iowait + irq + softirq + steal.
  uint64_t Total() const;
};

// Parses the "cpu " line of a /proc/stat. It needs at least the eight
// values up to steal (kernels since 2.6.11); guest and guest_nice read as 0
// where absent. InvalidArgument naming /proc/stat and what is wrong (no cpu
// line, too few values, a value that is not a number) otherwise.
absl::StatusOr<CpuTimes> ParseProcStat(absl::string_view content);

// ParseProcStat of /proc/stat read through `files`.
absl::StatusOr<CpuTimes> ReadCpuTimes(const SystemFiles& files);

// The share of CPU time stolen between two samples: steal ticks over all
// ticks, in [0, 1]; 0 if no tick passed or the counters went backwards.
double StealFraction(const CpuTimes& before, const CpuTimes& after);

// --- The guest kernel's own idle policy ------------------------------------

// What the kernel's cpuidle does on this machine; haltpool polls in user
// space on top of it.
struct KernelCpuidle {
  std::string driver;    // "haltpoll", "intel_idle", "acpi_idle"; "" if none.
  std::string governor;  // "haltpoll", "menu", "teo"; "" if none.
  // The haltpoll governor's guest_halt_poll_ns, where the module is loaded.
  std::optional<int64_t> guest_halt_poll_ns;
};

// Reads /sys/devices/system/cpu/cpuidle/current_driver and current_governor
// (current_governor_ro on older kernels) and
// /sys/module/haltpoll/parameters/guest_halt_poll_ns. Missing files leave
// fields empty; never fails.
KernelCpuidle ReadKernelCpuidle(const SystemFiles& files);

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_HYPERVISOR_H_
