// The one place that chooses the CPU backend. Every backend defines, in
// haltpool::arch::platform, the same small set of inline functions: Relax,
// ReadCycles, CyclesPerNsHint, DetectFeatures, Supports, MissingReason, Best
// and Wait (cpu_wait.h), and kHasCpuid and Cpuid for hypervisor detection
// (cpuid.h; architectures without CPUID share generic/cpuid.h). A backend's
// Wait describes each mechanism as a waiter for the one loop in
// arch/spin_loop.h. The per-architecture files refuse to be included from
// anywhere but here (#error). Define HALTPOOL_ARCH_GENERIC to force the
// portable fallback.

#ifndef HALTPOOL_ARCH_PLATFORM_H_
#define HALTPOOL_ARCH_PLATFORM_H_

#if defined(HALTPOOL_ARCH_GENERIC)
#include "arch/generic/cpu_wait.h"
#include "arch/generic/cpuid.h"
#elif defined(__x86_64__)
#include "arch/x86_64/cpu_wait.h"
#include "arch/x86_64/cpuid.h"
#elif defined(__aarch64__)
#include "arch/aarch64/cpu_wait.h"
#include "arch/generic/cpuid.h"
#elif defined(__s390x__)
#include "arch/generic/cpuid.h"
#include "arch/s390x/cpu_wait.h"
#else
#include "arch/generic/cpu_wait.h"
#include "arch/generic/cpuid.h"
#endif

#endif  // HALTPOOL_ARCH_PLATFORM_H_
