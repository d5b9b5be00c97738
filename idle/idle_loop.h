// The core idle loop: select -> enter -> reflect, as cpuidle_idle_call().
//
// The loop is written once for every kind of waiter. What "poll" and "block"
// mean is given by two callables, so the parker (a futex word), a pipe reader
// or an I/O ring share the same governor, statistics and accounting.

#ifndef HALTPOOL_IDLE_IDLE_LOOP_H_
#define HALTPOOL_IDLE_IDLE_LOOP_H_

#include <algorithm>
#include <cstdint>

#include "idle/clock.h"
#include "idle/governor.h"
#include "idle/idle_state.h"
#include "idle/idle_stats.h"
#include "idle/poll_gate.h"

namespace haltpool::idle {

enum class IdleResult { kWoken, kTimedOut };

// What the loop needs besides the two states: a governor, the state table,
// the counters to fill, and the clock. All owned by the one waiter.
struct IdleDevice {
  Governor* governor;
  const StateTable* states;
  IdleCounters* counters;
  const Clock* clock;
};

// Idles until a state reports a wake (kWoken) or `deadline_ns` passes
// (kTimedOut). `poll(until_ns)` and `block(until_ns)` enter the states; each
// returns true if a wake ended it and false if `until_ns` passed first.
// `poll_cap_ns` is the longest poll allowed (a back-off under contention),
// and `allow_poll` false allows none, as a cpuidle latency constraint
// would; the governor sees the cap in its IdleContext, and the loop
// shortens a longer poll to it, or blocks (until woken or the deadline) in
// place of a poll where none is allowed. The governor reflects on the
// state it really got. A block the governor limited
// (Selection::block_until_ns) that runs out is a kTimeout, and the loop
// asks the governor again; a call that enters a state ends with a Reflect
// of kWoken or kDeadline, so the governor always sees its period end. With
// `gate` set, each
// poll the governor selects first asks gate->TryEnter(); refused, the loop
// blocks instead (until woken or the deadline), and an allowed poll calls
// gate->Leave() when it ends. Called only by the waiting thread; allocates
// nothing.
template <typename PollFn, typename BlockFn>
IdleResult RunIdle(const IdleDevice& dev, int64_t deadline_ns, PollFn&& poll,
                   BlockFn&& block, bool allow_poll = true,
                   int64_t poll_cap_ns = kUnlimitedPollNs,
                   PollGate* gate = nullptr) noexcept {
  // Each state starts where the last one ended, by the same clock read: a
  // second read could pass the deadline after a kTimeout, and the period
  // would end without the governor reflecting its end.
  int64_t start = dev.clock->NowNs();
  if (start >= deadline_ns) return IdleResult::kTimedOut;
  for (;;) {
    const int64_t cap_ns = allow_poll ? poll_cap_ns : 0;
    Selection sel = dev.governor->Select({start, deadline_ns, cap_ns});
    if (sel.state == kPollState &&
        (cap_ns == 0 || (gate != nullptr && !gate->TryEnter()))) {
      sel = {kBlockState, 0};
    }
    if (sel.state == kPollState) {
      sel.poll_limit_ns = std::min(sel.poll_limit_ns, cap_ns);
    }
    bool woken;
    if (sel.state == kPollState) {
      const bool window_first = sel.poll_limit_ns < deadline_ns - start;
      woken = poll(window_first ? start + sel.poll_limit_ns : deadline_ns);
      if (gate != nullptr) gate->Leave();
    } else {
      woken = block(std::min(deadline_ns, sel.block_until_ns));
    }
    const int64_t end = dev.clock->NowNs();
    const int64_t residency = end - start;
    // Judged by the clock, not by which limit the state was given: a poll
    // that ends a hair early is a timeout, and the loop goes on.
    const IdleExit exit = woken                ? IdleExit::kWoken
                          : end >= deadline_ns ? IdleExit::kDeadline
                                               : IdleExit::kTimeout;
    dev.counters->Account(sel.state, residency, exit, *dev.states);
    dev.governor->Reflect(sel.state, residency, exit);
    dev.counters->SetWindow(dev.governor->poll_limit_ns());
    if (exit == IdleExit::kWoken) return IdleResult::kWoken;
    if (exit == IdleExit::kDeadline) return IdleResult::kTimedOut;
    start = end;
  }
}

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_IDLE_LOOP_H_
