// s390x waiting: no unprivileged wait instruction, so a load loop; the clock
// is the TOD clock read with STCKF. Included only through arch/platform.h.

#ifndef HALTPOOL_ARCH_S390X_CPU_WAIT_H_
#define HALTPOOL_ARCH_S390X_CPU_WAIT_H_

#ifndef HALTPOOL_ARCH_PLATFORM_H_
#error "include arch/platform.h, not arch/s390x/cpu_wait.h"
#endif

#include <atomic>
#include <cstdint>

#include "arch/cpu_features.h"
#include "arch/spin_loop.h"
#include "arch/wait_mechanism.h"

namespace haltpool::arch::platform {

inline constexpr const char* kArchName = "s390x";

// Loads between two clock reads; STCKF is cheap but not free.
inline constexpr int kLoadsPerClockRead = 16;

// TOD clock: bit 51 ticks once a microsecond, so 4096 units per us.
inline constexpr double kTodUnitsPerNs = 4.096;

inline void Relax() noexcept { asm volatile("" ::: "memory"); }

inline uint64_t ReadCycles() noexcept {
  uint64_t tod;
  asm volatile("stckf %0" : "=Q"(tod) : : "cc", "memory");
  return tod;
}

inline double CyclesPerNsHint() noexcept { return kTodUnitsPerNs; }

inline CpuFeatures DetectFeatures() noexcept {
  CpuFeatures f;
  f.arch = kArchName;
  return f;
}

inline bool Supports(WaitMechanism m, const CpuFeatures&) noexcept {
  return m == WaitMechanism::kSpin;
}

inline const char* MissingReason(WaitMechanism) noexcept {
  return "s390x has no unprivileged wait instruction; only spin is available";
}

inline WaitMechanism Best(const CpuFeatures&) noexcept {
  return WaitMechanism::kSpin;
}

// Loads with a compiler barrier between them, the TOD clock every
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

#endif  // HALTPOOL_ARCH_S390X_CPU_WAIT_H_
