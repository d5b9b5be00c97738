// arm64 waiting: LDAXR + WFE on the event stream, WFET, or a YIELD loop.
// Included only through arch/platform.h.

#ifndef HALTPOOL_ARCH_AARCH64_CPU_WAIT_H_
#define HALTPOOL_ARCH_AARCH64_CPU_WAIT_H_

#ifndef HALTPOOL_ARCH_PLATFORM_H_
#error "include arch/platform.h, not arch/aarch64/cpu_wait.h"
#endif

#include <sys/auxv.h>

#include <atomic>
#include <cstdint>

#include "arch/cpu_features.h"
#include "arch/spin_loop.h"
#include "arch/wait_mechanism.h"

namespace haltpool::arch::platform {

inline constexpr const char* kArchName = "aarch64";

// From the kernel's uapi/asm/hwcap.h.
inline constexpr unsigned long kHwcapEvtstrm = 1UL << 2;
inline constexpr unsigned long kHwcap2Wfxt = 1UL << 31;

// Loads between two counter reads in the YIELD and spin loops (the counter read
// is a cheap system-register read; YIELD is a hint that may be a no-op).
inline constexpr int kLoadsPerClockRead = 16;

inline void Relax() noexcept { asm volatile("yield" ::: "memory"); }

inline uint64_t ReadCycles() noexcept {
  uint64_t v;
  asm volatile("isb; mrs %0, cntvct_el0" : "=r"(v)::"memory");
  return v;
}

// CNTFRQ_EL0 states the counter's frequency exactly.
inline double CyclesPerNsHint() noexcept {
  uint64_t hz;
  asm volatile("mrs %0, cntfrq_el0" : "=r"(hz));
  return static_cast<double>(hz) / 1e9;
}

inline CpuFeatures DetectFeatures() noexcept {
  CpuFeatures f;
  f.arch = kArchName;
  f.evtstrm = (getauxval(AT_HWCAP) & kHwcapEvtstrm) != 0;
  f.wfxt = (getauxval(AT_HWCAP2) & kHwcap2Wfxt) != 0;
  return f;
}

inline bool Supports(WaitMechanism m, const CpuFeatures& f) noexcept {
  switch (m) {
    case WaitMechanism::kSpin:
    case WaitMechanism::kYield:
      return true;
    case WaitMechanism::kWfe:
      return f.evtstrm;
    case WaitMechanism::kWfet:
      return f.wfxt;
    default:
      return false;
  }
}

inline const char* MissingReason(WaitMechanism m) noexcept {
  switch (m) {
    case WaitMechanism::kWfe:
      return "the kernel's event stream is off (no HWCAP_EVTSTRM), so a WFE "
             "could sleep without bound";
    case WaitMechanism::kWfet:
      return "the CPU lacks FEAT_WFxT (no HWCAP2_WFXT)";
    default:
      return "it is not an arm64 mechanism";
  }
}

inline WaitMechanism Best(const CpuFeatures& f) noexcept {
  if (f.wfxt) return WaitMechanism::kWfet;
  if (f.evtstrm) return WaitMechanism::kWfe;
  return WaitMechanism::kYield;
}

// Load-acquire exclusive: arms the monitor so a store to the word sends the
// event that ends a WFE.
inline uint32_t LoadExclusive(const std::atomic<uint32_t>& word) noexcept {
  uint32_t v;
  asm volatile("ldaxr %w0, [%1]" : "=&r"(v) : "r"(&word) : "memory");
  return v;
}

// The waiters SpinWhileEqual runs (arch/spin_loop.h), one per mechanism.

// LDAXR arms the monitor, then WFE (bounded by the event stream) or WFET
// (bounded by the deadline itself) until the word changes or time is up.
template <bool kTimed>
struct EventWaiter {
  static constexpr int kLoadsPerClockRead = 1;
  static uint32_t Load(const std::atomic<uint32_t>& word) noexcept {
    return LoadExclusive(word);
  }
  static void Relax() noexcept {}
  static uint64_t Now() noexcept { return ReadCycles(); }
  static void Wait(uint64_t, uint64_t deadline) noexcept {
    if constexpr (kTimed) {
      // WFET x<n>: 0xd5031000 | n. Spelled as an encoding so older
      // assemblers build it; the deadline is absolute in CNTVCT units.
      register uint64_t x0 asm("x0") = deadline;
      asm volatile(".inst 0xd5031000" : : "r"(x0) : "memory");
    } else {
      asm volatile("wfe" ::: "memory");
    }
  }
  static void Done() noexcept { asm volatile("clrex" ::: "memory"); }
};

// YIELD between loads, the counter every kLoadsPerClockRead loads.
struct YieldWaiter : PlainLoad {
  static constexpr int kLoadsPerClockRead = platform::kLoadsPerClockRead;
  static void Relax() noexcept { asm volatile("yield" ::: "memory"); }
  static uint64_t Now() noexcept { return ReadCycles(); }
  static void Wait(uint64_t, uint64_t) noexcept { Relax(); }
};

// Loads alone, with only a compiler barrier between them.
struct SpinWaiter : PlainLoad {
  static constexpr int kLoadsPerClockRead = platform::kLoadsPerClockRead;
  static void Relax() noexcept { asm volatile("" ::: "memory"); }
  static uint64_t Now() noexcept { return ReadCycles(); }
  static void Wait(uint64_t, uint64_t) noexcept { Relax(); }
};

// Callers have checked Supports(m) before.
inline uint32_t Wait(WaitMechanism m, const std::atomic<uint32_t>& word,
                     uint32_t old, uint64_t deadline) noexcept {
  switch (m) {
    case WaitMechanism::kWfet:
      return SpinWhileEqual<EventWaiter</*kTimed=*/true>>(word, old, deadline);
    case WaitMechanism::kWfe:
      return SpinWhileEqual<EventWaiter</*kTimed=*/false>>(word, old, deadline);
    case WaitMechanism::kYield:
      return SpinWhileEqual<YieldWaiter>(word, old, deadline);
    default:
      return SpinWhileEqual<SpinWaiter>(word, old, deadline);
  }
}

}  // namespace haltpool::arch::platform

#endif  // HALTPOOL_ARCH_AARCH64_CPU_WAIT_H_
