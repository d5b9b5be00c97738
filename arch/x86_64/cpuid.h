// x86-64 CPUID, for hypervisor detection. Included only through
// arch/platform.h.

#ifndef HALTPOOL_ARCH_X86_64_CPUID_H_
#define HALTPOOL_ARCH_X86_64_CPUID_H_

#ifndef HALTPOOL_ARCH_PLATFORM_H_
#error "include arch/platform.h, not arch/x86_64/cpuid.h"
#endif

#include <cpuid.h>

#include <cstdint>

namespace haltpool::arch::platform {

// This architecture has the CPUID instruction.
inline constexpr bool kHasCpuid = true;

// CPUID with EAX = leaf and ECX = 0, into regs[0..3] = EAX, EBX, ECX, EDX.
// Asks for any leaf without checking the maximum first (the hypervisor range
// 0x40000000 lies above the basic maximum; CPUID never faults). Under a
// hypervisor every call is a VM exit, about a microsecond.
inline void Cpuid(uint32_t leaf, uint32_t regs[4]) noexcept {
  __cpuid_count(leaf, 0, regs[0], regs[1], regs[2], regs[3]);
}

}  // namespace haltpool::arch::platform

#endif  // HALTPOOL_ARCH_X86_64_CPUID_H_
