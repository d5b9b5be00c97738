// Portable waiting: a load loop on CLOCK_MONOTONIC. Builds on any Linux CPU.
// Included only through arch/platform.h.

#ifndef HALTPOOL_ARCH_GENERIC_CPU_WAIT_H_
#define HALTPOOL_ARCH_GENERIC_CPU_WAIT_H_

#include <time.h>

#include <atomic>
#include <cstdint>

#include "arch/cpu_features.h"
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

inline uint32_t Wait(WaitMechanism, const std::atomic<uint32_t>& word,
                     uint32_t old, uint64_t deadline) noexcept {
  for (;;) {
    for (int i = 0; i < kLoadsPerClockRead; ++i) {
      uint32_t v = word.load(std::memory_order_acquire);
      if (v != old) return v;
      asm volatile("" ::: "memory");
    }
    if (ReadCycles() >= deadline) return word.load(std::memory_order_acquire);
  }
}

}  // namespace haltpool::arch::platform

#endif  // HALTPOOL_ARCH_GENERIC_CPU_WAIT_H_
