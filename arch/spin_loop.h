// The spin-until-the-word-changes loop, written once for every backend.
//
// A backend (arch/*/cpu_wait.h) describes each wait mechanism as a small
// waiter type and SpinWhileEqual runs it; the waiter holds only what differs
// from one CPU instruction to another. Modelled on folly's
// spin_pause_until(): one loop, and the clock read only every so many loads.
// Included by the backends, which arch/platform.h includes.

#ifndef HALTPOOL_ARCH_SPIN_LOOP_H_
#define HALTPOOL_ARCH_SPIN_LOOP_H_

#include <atomic>
#include <cstdint>

namespace haltpool::arch {

// What a waiter type W provides, all static and noexcept:
//
//   static constexpr int kLoadsPerClockRead;
//       Loads of the word between two clock reads: 1 for an instruction
//       that waits on its own (UMWAIT, WFE), more for a relax hint (PAUSE).
//   uint32_t Load(const std::atomic<uint32_t>& word);
//       An acquire load of the word, arming the CPU's monitor first where
//       the instruction watches the word (UMONITOR, MONITORX, LDAXR).
//   void Relax();
//       Between two loads with no clock read in between.
//   uint64_t Now();
//       The backend's cycle counter (platform::ReadCycles).
//   void Wait(uint64_t now, uint64_t deadline);
//       After a clock read found the deadline ahead: the wait instruction,
//       bounded by `deadline` where it can be, or one more relax.
//   void Done();
//       Before returning: disarms what Load armed (CLREX), or nothing.

// Waits while `word` == `old` until W::Now() reaches `deadline` (cycle
// counter units). Returns the last value read, with acquire ordering: != old
// if the word changed, == old if the deadline passed. Reads the clock once
// every W::kLoadsPerClockRead loads, so may return that many loads late.
// Never blocks in the kernel; allocates nothing; any thread.
template <typename W>
inline uint32_t SpinWhileEqual(const std::atomic<uint32_t>& word, uint32_t old,
                               uint64_t deadline) noexcept {
  static_assert(W::kLoadsPerClockRead >= 1);
  for (;;) {
    uint32_t v = W::Load(word);
    for (int i = 1; i < W::kLoadsPerClockRead && v == old; ++i) {
      W::Relax();
      v = W::Load(word);
    }
    if (v != old) {
      W::Done();
      return v;
    }
    const uint64_t now = W::Now();
    if (now >= deadline) {
      W::Done();
      return v;
    }
    W::Wait(now, deadline);
  }
}

// A waiter whose Load is a plain acquire load and whose Done does nothing;
// backends derive their waiters from it.
struct PlainLoad {
  static uint32_t Load(const std::atomic<uint32_t>& word) noexcept {
    return word.load(std::memory_order_acquire);
  }
  static void Done() noexcept {}
};

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_SPIN_LOOP_H_
