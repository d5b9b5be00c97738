// Portable waiting: a load loop on CLOCK_MONOTONIC. Builds on any Linux CPU.
// Included only through arch/platform.h.

#ifndef HALTPOOL_ARCH_GENERIC_CPU_WAIT_H_
#define HALTPOOL_ARCH_GENERIC_CPU_WAIT_H_

#ifndef HALTPOOL_ARCH_PLATFORM_H_
#error "include arch/platform.h, not arch/generic/cpu_wait.h"
#endif

#include <time.h>

#include <atomic>
#include <cstdint>

#include "arch/cpu_features.h"
#include "arch/spin_loop.h"
#include "arch/wait_mechanism.h"

namespace haltpool::arch::platform {

inline constexpr const char* kArchName = "generic";

// Loads between two clock reads: clock_gettime costs tens of nanoseconds.
inline constexpr int kLoadsPerClockRead = 64;

inline void Relax() noexcept { asm volatile("" ::: "memory"); }

inline uint64_t ReadCycles() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + ts.tv_nsec;
}

inline double CyclesPerNsHint() noexcept { return 1.0; }

inline CpuFeatures DetectFeatures() noexcept { return CpuFeatures{}; }

inline bool Supports(WaitMechanism m, const CpuFeatures&) noexcept {
  return m == WaitMechanism::kSpin;
}

inline const char* MissingReason(WaitMechanism) noexcept {
  return "the generic backend only has spin";
}

inline WaitMechanism Best(const CpuFeatures&) noexcept {
  return WaitMechanism::kSpin;
}

// Loads with a compiler barrier between them, CLOCK_MONOTONIC every
// kLoadsPerClockRead loads (arch/spin_loop.h runs it).
struct SpinWaiter : PlainLoad {
  static constexpr int kLoadsPerClockRead = platform::kLoadsPerClockRead;
  static void Relax() noexcept { platform::Relax(); }
  static uint64_t Now() noexcept { return ReadCycles(); }
  static void Wait(uint64_t, uint64_t) noexcept { Relax(); }
};

inline uint32_t Wait(WaitMechanism, const std::atomic<uint32_t>& word,
                     uint32_t old, uint64_t deadline) noexcept {
  return SpinWhileEqual<SpinWaiter>(word, old, deadline);
}

}  // namespace haltpool::arch::platform

#endif  // HALTPOOL_ARCH_GENERIC_CPU_WAIT_H_
