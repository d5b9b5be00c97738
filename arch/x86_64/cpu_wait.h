// x86-64 waiting: PAUSE, WAITPKG (UMONITOR/UMWAIT, TPAUSE), AMD
// MONITORX/MWAITX. Included only through arch/platform.h.

#ifndef HALTPOOL_ARCH_X86_64_CPU_WAIT_H_
#define HALTPOOL_ARCH_X86_64_CPU_WAIT_H_

#include <cpuid.h>
#include <immintrin.h>
#include <x86intrin.h>

#include <atomic>
#include <cstdint>

#include "arch/cpu_features.h"
#include "arch/wait_mechanism.h"

namespace haltpool::arch::platform {

inline constexpr const char* kArchName = "x86_64";

// Loads between two TSC reads in the PAUSE loop. A PAUSE costs tens to a
// hundred cycles, RDTSC a few tens; 16 keeps the clock under a tenth of the
// loop while overshooting a deadline by well under a microsecond.
inline constexpr int kLoadsPerClockRead = 16;

// A TPAUSE slice in TSC cycles (about 0.5 us at 2-4 GHz): TPAUSE does not
// watch the word, so this bounds how late a change is seen.
inline constexpr uint64_t kTpauseSliceCycles = 1500;

// MWAITX "C-state" hint for C0 (bits 7:4 = 0xF), as Linux's delay_mwaitx().
inline constexpr unsigned kMwaitxHintC0 = 0xf0;
// MWAITX extension bit 1 enables its timer (EBX counts down at the TSC rate).
inline constexpr unsigned kMwaitxTimerEnable = 0x2;
// UMWAIT/TPAUSE control: 1 asks for C0.1, the lighter, faster-waking state.
inline constexpr unsigned kWaitpkgC01 = 1;

inline void Relax() noexcept { _mm_pause(); }

inline uint64_t ReadCycles() noexcept { return __rdtsc(); }

// The TSC rate is not architecturally visible on every x86 CPU: calibrate.
inline double CyclesPerNsHint() noexcept { return 0.0; }

inline CpuFeatures DetectFeatures() noexcept {
  CpuFeatures f;
  f.arch = kArchName;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) f.hypervisor = (c >> 31) & 1;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) f.waitpkg = (c >> 5) & 1;
  if (__get_cpuid(0x80000001, &a, &b, &c, &d)) f.mwaitx = (c >> 29) & 1;
  return f;
}

inline bool Supports(WaitMechanism m, const CpuFeatures& f) noexcept {
  switch (m) {
    case WaitMechanism::kSpin:
    case WaitMechanism::kPause:
      return true;
    case WaitMechanism::kUmwait:
    case WaitMechanism::kTpause:
      return f.waitpkg;
    case WaitMechanism::kMwaitx:
      return f.mwaitx;
    default:
      return false;
  }
}

inline const char* MissingReason(WaitMechanism m) noexcept {
  switch (m) {
    case WaitMechanism::kUmwait:
    case WaitMechanism::kTpause:
      return "the CPU lacks WAITPKG (CPUID.(7,0):ECX[5])";
    case WaitMechanism::kMwaitx:
      return "the CPU lacks MONITORX/MWAITX (CPUID.80000001h:ECX[29])";
    default:
      return "it is not an x86-64 mechanism";
  }
}

inline WaitMechanism Best(const CpuFeatures& f) noexcept {
  if (f.waitpkg) return WaitMechanism::kUmwait;
  if (f.mwaitx) return WaitMechanism::kMwaitx;
  return WaitMechanism::kPause;
}

inline uint32_t WaitPause(const std::atomic<uint32_t>& word, uint32_t old,
                          uint64_t deadline) noexcept {
  for (;;) {
    for (int i = 0; i < kLoadsPerClockRead; ++i) {
      uint32_t v = word.load(std::memory_order_acquire);
      if (v != old) return v;
      _mm_pause();
    }
    if (__rdtsc() >= deadline) return word.load(std::memory_order_acquire);
  }
}

// Linux caps each UMWAIT (umwait_control/max_time), so this loops until the
// word changes or the deadline passes.
__attribute__((target("waitpkg"))) inline uint32_t WaitUmwait(
    const std::atomic<uint32_t>& word, uint32_t old,
    uint64_t deadline) noexcept {
  void* addr = const_cast<std::atomic<uint32_t>*>(&word);
  for (;;) {
    _umonitor(addr);
    uint32_t v = word.load(std::memory_order_acquire);
    if (v != old || __rdtsc() >= deadline) return v;
    _umwait(kWaitpkgC01, deadline);
  }
}

__attribute__((target("waitpkg"))) inline uint32_t WaitTpause(
    const std::atomic<uint32_t>& word, uint32_t old,
    uint64_t deadline) noexcept {
  for (;;) {
    uint32_t v = word.load(std::memory_order_acquire);
    uint64_t now = __rdtsc();
    if (v != old || now >= deadline) return v;
    uint64_t until = now + kTpauseSliceCycles;
    _tpause(kWaitpkgC01, until < deadline ? until : deadline);
  }
}

__attribute__((target("mwaitx"))) inline uint32_t WaitMwaitx(
    const std::atomic<uint32_t>& word, uint32_t old,
    uint64_t deadline) noexcept {
  const void* addr = &word;
  for (;;) {
    _mm_monitorx(const_cast<void*>(addr), 0, 0);
    uint32_t v = word.load(std::memory_order_acquire);
    uint64_t now = __rdtsc();
    if (v != old || now >= deadline) return v;
    uint64_t left = deadline - now;
    _mm_mwaitx(kMwaitxTimerEnable, kMwaitxHintC0,
               left > 0xffffffffu ? 0xffffffffu : static_cast<unsigned>(left));
  }
}

inline uint32_t WaitSpin(const std::atomic<uint32_t>& word, uint32_t old,
                         uint64_t deadline) noexcept {
  for (;;) {
    for (int i = 0; i < kLoadsPerClockRead; ++i) {
      uint32_t v = word.load(std::memory_order_acquire);
      if (v != old) return v;
      asm volatile("" ::: "memory");
    }
    if (__rdtsc() >= deadline) return word.load(std::memory_order_acquire);
  }
}

// Callers have checked Supports(m) before: an unsupported m would SIGILL.
inline uint32_t Wait(WaitMechanism m, const std::atomic<uint32_t>& word,
                     uint32_t old, uint64_t deadline) noexcept {
  switch (m) {
    case WaitMechanism::kUmwait:
      return WaitUmwait(word, old, deadline);
    case WaitMechanism::kTpause:
      return WaitTpause(word, old, deadline);
    case WaitMechanism::kMwaitx:
      return WaitMwaitx(word, old, deadline);
    case WaitMechanism::kPause:
      return WaitPause(word, old, deadline);
    default:
      return WaitSpin(word, old, deadline);
  }
}

}  // namespace haltpool::arch::platform

#endif  // HALTPOOL_ARCH_X86_64_CPU_WAIT_H_
