// Hypervisor detection on x86-64 from CPUID: leaf 1 ECX[31], the vendor
// leaves from 0x40000000 and KVM's feature leaf. HypervisorFromCpuid is a
// plain function of recorded leaves, so tests feed `cpuid -r` captures on
// any architecture; only ReadHostCpuid executes CPUID.

#ifndef HALTPOOL_ARCH_CPUID_HYPERVISOR_H_
#define HALTPOOL_ARCH_CPUID_HYPERVISOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "arch/hypervisor_info.h"

namespace haltpool::arch {

// The four registers one CPUID instruction returns.
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

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_CPUID_HYPERVISOR_H_
