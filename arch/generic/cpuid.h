// No CPUID: architectures without it (arm64, s390x and the generic fallback)
// tell where they run through kernel files instead. Included only through
// arch/platform.h.

#ifndef HALTPOOL_ARCH_GENERIC_CPUID_H_
#define HALTPOOL_ARCH_GENERIC_CPUID_H_

#ifndef HALTPOOL_ARCH_PLATFORM_H_
#error "include arch/platform.h, not arch/generic/cpuid.h"
#endif

#include <cstdint>

namespace haltpool::arch::platform {

// This architecture has no CPUID instruction.
inline constexpr bool kHasCpuid = false;

// Never called where kHasCpuid is false; reads as all zeros.
inline void Cpuid(uint32_t /*leaf*/, uint32_t regs[4]) noexcept {
  regs[0] = regs[1] = regs[2] = regs[3] = 0;
}

}  // namespace haltpool::arch::platform

#endif  // HALTPOOL_ARCH_GENERIC_CPUID_H_
