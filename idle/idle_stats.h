// Idle statistics per waiter and per state, as cpuidle keeps them in
// /sys/devices/system/cpu/cpuN/cpuidle/stateM/{usage,time,above,below}, plus
// poll timeouts, the current window and the wakes the waiter received.

#ifndef HALTPOOL_IDLE_IDLE_STATS_H_
#define HALTPOOL_IDLE_IDLE_STATS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "idle/governor.h"
#include "idle/idle_state.h"

namespace haltpool::idle {

struct StateStats {
  uint64_t usage = 0;    // Times entered.
  uint64_t time_ns = 0;  // Total residency.
  uint64_t above = 0;    // Too deep: the idle ended before target residency.
  uint64_t below = 0;    // Too shallow: a deeper state would have paid off.
};

// Wakes sent to one waiter, counted by the wakers.
struct WakeStats {
  uint64_t polling = 0;   // Found it polling: a store, no syscall (elided).
  uint64_t not_idle = 0;  // Found it running: a store, no syscall.
  uint64_t syscall = 0;   // Found it asleep: FUTEX_WAKE.

  uint64_t total() const { return polling + not_idle + syscall; }
  uint64_t without_syscall() const { return polling + not_idle; }
};

// A snapshot for printing.
struct IdleStats {
  std::string label;     // Which waiter ("reader", "worker 3").
  std::string driver;    // What it waits on ("parker", "pipe").
  std::string governor;  // Governor name.
  std::string wait;      // Wait mechanism name.
  StateTable states = DefaultStateTable();
  std::array<StateStats, kStateCount> per_state{};
  uint64_t poll_timeouts = 0;  // Polls that ran out their window.
  int64_t window_ns = 0;       // The governor's current poll window.
  WakeStats wakes;
};

// The live counters of one waiter. Account() is called only by the waiting
// thread (relaxed load+store, no atomic read-modify-write); Snapshot() may
// run on any thread and sees each counter tear-free.
class IdleCounters {
 public:
  // Records one stay in `state` of `residency_ns` that ended by `exit`, and
  // classifies it above/below against `states` exactly as the kernel's
  // cpuidle_enter_state() does.
  void Account(int state, int64_t residency_ns, IdleExit exit,
               const StateTable& states) noexcept;

  // Publishes the governor's current window for Snapshot().
  void SetWindow(int64_t window_ns) noexcept {
    window_ns_.store(window_ns, std::memory_order_relaxed);
  }

  // Fills the counter fields of `out`, and window_ns.
  void Snapshot(IdleStats& out) const noexcept;

 private:
  struct State {
    std::atomic<uint64_t> usage{0}, time_ns{0}, above{0}, below{0};
  };
  static void Bump(std::atomic<uint64_t>& c, uint64_t by = 1) noexcept {
    c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

  std::array<State, kStateCount> states_;
  std::atomic<uint64_t> poll_timeouts_{0};
  std::atomic<int64_t> window_ns_{0};
};

// The layout of `cpupower idle-info` (durations in microseconds), followed
// by poll timeouts, the window and the wakes.
std::string FormatCpupower(const IdleStats& stats);

// `s` as a JSON string literal, quotes included, with escapes.
std::string JsonString(absl::string_view s);

// One JSON object with every field of `stats` (durations in nanoseconds).
std::string FormatJson(const IdleStats& stats);

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_IDLE_STATS_H_
