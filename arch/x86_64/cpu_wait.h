// x86-64 waiting: PAUSE, WAITPKG (UMONITOR/UMWAIT, TPAUSE), AMD
// MONITORX/MWAITX. Included only through arch/platform.h.

#ifndef HALTPOOL_ARCH_X86_64_CPU_WAIT_H_
#define HALTPOOL_ARCH_X86_64_CPU_WAIT_H_

#ifndef HALTPOOL_ARCH_PLATFORM_H_
#error "include arch/platform.h, not arch/x86_64/cpu_wait.h"
#endif

#include <cpuid.h>
#include <immintrin.h>
#include <x86intrin.h>

#include <atomic>
#include <cstdint>

#include "arch/cpu_features.h"
#include "arch/spin_loop.h"
#include "arch/wait_mechanism.h"

namespace haltpool::arch::platform {

inline constexpr const char* kArchName = "x86_64";

// Loads between two TSC reads in the PAUSE and spin loops. A PAUSE costs tens
// to a hundred cycles, RDTSC a few tens; 16 keeps the clock under a tenth of
// the loop while overshooting a deadline by well under a microsecond.
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

// The waiters SpinWhileEqual runs (arch/spin_loop.h), one per mechanism.

// PAUSE between loads, the TSC read every kLoadsPerClockRead loads.
struct PauseWaiter : PlainLoad {
  static constexpr int kLoadsPerClockRead = platform::kLoadsPerClockRead;
  static void Relax() noexcept { _mm_pause(); }
  static uint64_t Now() noexcept { return __rdtsc(); }
  static void Wait(uint64_t, uint64_t) noexcept { _mm_pause(); }
};

// Loads alone, with only a compiler barrier between them.
struct SpinWaiter : PlainLoad {
  static constexpr int kLoadsPerClockRead = platform::kLoadsPerClockRead;
  static void Relax() noexcept { asm volatile("" ::: "memory"); }
  static uint64_t Now() noexcept { return __rdtsc(); }
  static void Wait(uint64_t, uint64_t) noexcept { Relax(); }
};

// UMONITOR arms the monitor, UMWAIT sleeps until a store to the word or the
// deadline. Linux caps each UMWAIT (umwait_control/max_time), so the loop
// goes on until the word changes or the deadline passes.
struct UmwaitWaiter {
  static constexpr int kLoadsPerClockRead = 1;
  __attribute__((target("waitpkg"))) static uint32_t Load(
      const std::atomic<uint32_t>& word) noexcept {
    _umonitor(const_cast<std::atomic<uint32_t>*>(&word));
    return word.load(std::memory_order_acquire);
  }
  static void Relax() noexcept {}
  static uint64_t Now() noexcept { return __rdtsc(); }
  __attribute__((target("waitpkg"))) static void Wait(
      uint64_t, uint64_t deadline) noexcept {
    _umwait(kWaitpkgC01, deadline);
  }
  static void Done() noexcept {}
};

// TPAUSE does not watch the word: it sleeps one slice at a time.
struct TpauseWaiter : PlainLoad {
  static constexpr int kLoadsPerClockRead = 1;
  static void Relax() noexcept {}
  static uint64_t Now() noexcept { return __rdtsc(); }
  __attribute__((target("waitpkg"))) static void Wait(
      uint64_t now, uint64_t deadline) noexcept {
    const uint64_t until = now + kTpauseSliceCycles;
    _tpause(kWaitpkgC01, until < deadline ? until : deadline);
  }
};

// MONITORX arms the monitor, MWAITX sleeps until a store to the word or its
// timer (at most 2^32 - 1 TSC cycles) runs out.
struct MwaitxWaiter {
  static constexpr int kLoadsPerClockRead = 1;
  __attribute__((target("mwaitx"))) static uint32_t Load(
      const std::atomic<uint32_t>& word) noexcept {
    _mm_monitorx(const_cast<std::atomic<uint32_t>*>(&word), 0, 0);
    return word.load(std::memory_order_acquire);
  }
  static void Relax() noexcept {}
  static uint64_t Now() noexcept { return __rdtsc(); }
  __attribute__((target("mwaitx"))) static void Wait(
      uint64_t now, uint64_t deadline) noexcept {
    const uint64_t left = deadline - now;
    _mm_mwaitx(kMwaitxTimerEnable, kMwaitxHintC0,
               left > 0xffffffffu ? 0xffffffffu : static_cast<unsigned>(left));
  }
  static void Done() noexcept {}
};

// Callers have checked Supports(m) before: an unsupported m would SIGILL.
inline uint32_t Wait(WaitMechanism m, const std::atomic<uint32_t>& word,
                     uint32_t old, uint64_t deadline) noexcept {
  switch (m) {
    case WaitMechanism::kUmwait:
      return SpinWhileEqual<UmwaitWaiter>(word, old, deadline);
    case WaitMechanism::kTpause:
      return SpinWhileEqual<TpauseWaiter>(word, old, deadline);
    case WaitMechanism::kMwaitx:
      return SpinWhileEqual<MwaitxWaiter>(word, old, deadline);
    case WaitMechanism::kPause:
      return SpinWhileEqual<PauseWaiter>(word, old, deadline);
    default:
      return SpinWhileEqual<SpinWaiter>(word, old, deadline);
  }
}

}  // namespace haltpool::arch::platform

#endif  // HALTPOOL_ARCH_X86_64_CPU_WAIT_H_
