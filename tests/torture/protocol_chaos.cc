#include "tests/torture/protocol_chaos.h"

#include <sched.h>

#include <atomic>

#include "arch/cpu_wait.h"
#include "idle/protocol_step.h"

namespace haltpool {
namespace {

std::atomic<uint64_t> g_steps{0};
std::atomic<uint64_t> g_delays{0};

// xorshift64: a fast per-thread generator, seeded from the thread's address.
uint64_t NextRandom() noexcept {
  thread_local uint64_t state =
      reinterpret_cast<uintptr_t>(&state) * 0x9E3779B97F4A7C15ull | 1;
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

}  // namespace

namespace idle {

// One step in 16 yields, one in 16 spins up to 1023 relax instructions
// (about 0 to 20 us on x86-64), the rest go straight on.
void ProtocolStep() noexcept {
  g_steps.fetch_add(1, std::memory_order_relaxed);
  const uint64_t r = NextRandom();
  switch (r & 15) {
    case 0:
      g_delays.fetch_add(1, std::memory_order_relaxed);
      sched_yield();
      break;
    case 1:
      g_delays.fetch_add(1, std::memory_order_relaxed);
      for (uint64_t i = (r >> 8) & 1023; i > 0; --i) arch::CpuRelax();
      break;
    default:
      break;
  }
}

}  // namespace idle

namespace torture {

uint64_t ProtocolSteps() { return g_steps.load(std::memory_order_relaxed); }
uint64_t ProtocolDelays() { return g_delays.load(std::memory_order_relaxed); }

}  // namespace torture
}  // namespace haltpool
