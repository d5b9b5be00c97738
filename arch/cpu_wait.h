// Waiting on a 32-bit word with the cheapest instruction the CPU offers.
//
// The mechanism is a value (WaitMechanism) chosen once at start-up: detected,
// or forced by the caller and checked here so that asking for one the CPU or
// kernel lacks is an error, never a SIGILL.

#ifndef HALTPOOL_ARCH_CPU_WAIT_H_
#define HALTPOOL_ARCH_CPU_WAIT_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "arch/cpu_features.h"
#include "arch/cycle_clock.h"
#include "arch/platform.h"
#include "arch/wait_mechanism.h"

namespace haltpool::arch {

// One spin-loop hint (PAUSE, YIELD, or a compiler barrier). Any thread.
inline void CpuRelax() noexcept { platform::Relax(); }

// OK if `m` can run on a CPU with `features`; otherwise FailedPrecondition
// saying what is missing ("umwait: the CPU lacks WAITPKG ...").
absl::Status CheckWaitMechanism(
    WaitMechanism m, const CpuFeatures& features = HostCpuFeatures());

// The mechanism `auto` picks: umwait > mwaitx > pause on x86-64,
// wfet > wfe > yield on arm64, spin elsewhere.
WaitMechanism BestWaitMechanism(
    const CpuFeatures& features = HostCpuFeatures());

// Waits while `word` == `old`, until CLOCK_MONOTONIC reaches `deadline_ns`
// (kNoDeadline: no limit). Returns the last value read with acquire ordering:
// != old if the word changed, == old if the deadline passed. May return a
// little after the deadline (the clock is read every few iterations) but
// never sleeps in the kernel. Precondition: CheckWaitMechanism(m) is OK.
inline uint32_t WaitWhileEqual(const std::atomic<uint32_t>& word, uint32_t old,
                               int64_t deadline_ns, WaitMechanism m) noexcept {
  uint32_t v = word.load(std::memory_order_acquire);
  if (v != old) return v;
  for (;;) {
    v = platform::Wait(m, word, old, DeadlineToCycles(deadline_ns));
    // The counter may drift from CLOCK_MONOTONIC (seen under qemu-user):
    // the clock decides whether the deadline has really passed.
    if (v != old || deadline_ns == kNoDeadline ||
        MonotonicNowNs() >= deadline_ns) {
      return v;
    }
  }
}

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_CPU_WAIT_H_
