// The pool's half of the wake protocol: which workers are idle, how many
// poll, and which one a submission wakes. A worker about to idle announces
// itself, then re-checks for work; a submitter pushes its task, then wakes
// one announced worker, preferring one that polls. Both sides order these
// steps sequentially consistent, so either the worker sees the task or the
// submitter sees the worker: a task never sits queued while every worker
// sleeps. The parker's half (the handshake on one wake word) is
// idle/parker.h.
//
// Each step maps onto one step of the model in
// tests/model/wake_protocol.pml; tests/model/README.md names the function
// for each. Change the model, its README and this file together.

#ifndef HALTPOOL_RUNTIME_IDLE_WORKERS_H_
#define HALTPOOL_RUNTIME_IDLE_WORKERS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "idle/parker.h"
#include "idle/poll_gate.h"
#include "idle/protocol_step.h"

namespace haltpool {

class IdleWorkers;

// A worker's pass to the polling slots, asked by its idle loop before each
// poll (idle::PollGate): a worker holds a slot only while it polls, so one
// whose governor blocks until it expects a task leaves the slot to another.
// Owned by one worker; only its thread.
class PollSlotGate final : public idle::PollGate {
 public:
  explicit PollSlotGate(IdleWorkers& workers) noexcept : workers_(&workers) {}

  bool TryEnter() noexcept override;
  void Leave() noexcept override;

  // Whether the worker polled since the last call, and resets it: the
  // back-off counts preemptions only around polls (contention_monitor.h).
  bool TakePolled() noexcept {
    const bool polled = polled_;
    polled_ = false;
    return polled;
  }

 private:
  IdleWorkers* workers_;
  bool polled_ = false;
};

class IdleWorkers {
 public:
  // Tracks one idle flag per word in `words` (worker i owns words[i]); at
  // most `max_pollers` of them poll at once. The words must
  // outlive this object. Setup, before any worker runs.
  IdleWorkers(std::vector<idle::WakeWord*> words, int max_pollers);

  IdleWorkers(const IdleWorkers&) = delete;
  IdleWorkers& operator=(const IdleWorkers&) = delete;

  // Worker `w` announces that it is about to idle, then calls `has_work()`
  // (which must look at every queue and return true if a task or a due
  // timer waits). If there is work, `w` retires at once and this returns
  // false; else it returns true and `w` stays announced until Retire (or a
  // WakeOne takes it). Model: `idle[me] = 1`, `num_idle++`, then the
  // `queued > 0` re-check. The announcement is seq_cst and comes before
  // every load in `has_work`; WakeOne's fence pairs with it. Only worker
  // `w`'s thread.
  template <typename HasWork>
  bool AnnounceThenRecheck(int w, HasWork&& has_work) noexcept {
    slots_[w].announced.store(
        announcements_.fetch_add(1, std::memory_order_relaxed),
        std::memory_order_relaxed);
    slots_[w].idle.store(true, std::memory_order_seq_cst);
    num_idle_.fetch_add(1, std::memory_order_seq_cst);
    HALTPOOL_PROTOCOL_STEP();  // A submitter may look for idle workers now.
    if (has_work()) {
      Retire(w);
      return false;
    }
    return true;
  }

  // Takes a polling slot if fewer than max_pollers() workers hold one;
  // true if taken (give it back with StopPolling). Model: `allow`. Relaxed:
  // the cap bounds CPU use and no wake depends on it. Any announced worker.
  bool TryStartPolling() noexcept {
    if (num_pollers_.fetch_add(1, std::memory_order_relaxed) < max_pollers_) {
      return true;
    }
    num_pollers_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }

  // Gives back a slot TryStartPolling took. Model: `parked`.
  void StopPolling() noexcept {
    num_pollers_.fetch_sub(1, std::memory_order_relaxed);
  }

  // Worker `w` ends its idle period: clears its flag unless a WakeOne took
  // it first, and counts itself out. Model: `retire`. seq_cst. Only worker
  // `w`'s thread.
  void Retire(int w) noexcept {
    if (slots_[w].idle.exchange(false, std::memory_order_seq_cst)) {
      num_idle_.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  // Wakes one announced worker: a polling one if any (its wake costs no
  // system call), else the one that announced itself last. That worker
  // idled least, so its caches are warmest, and a steady stream of tasks
  // keeps going to the same worker: its governor sees the stream's own
  // gaps, not a share of them, and the others stay blocked (the LIFO order
  // of Go's idle Ps). Scans start at a rotating index, so wakes among
  // pollers spread.
  // Call after pushing a task: a seq_cst fence orders the push before the
  // idle flags are read. Returns true if it woke one; false if none was
  // announced. Model: `wake_one`. Any thread; no allocation; a FUTEX_WAKE
  // only if the worker it takes sleeps.
  bool WakeOne() noexcept;

  // Workers holding a polling slot now. A relaxed snapshot; any thread.
  int num_pollers() const noexcept {
    return num_pollers_.load(std::memory_order_relaxed);
  }

  // Announced workers now. A snapshot; any thread.
  int num_idle() const noexcept {
    return num_idle_.load(std::memory_order_seq_cst);
  }

  int max_pollers() const noexcept { return max_pollers_; }

 private:
  // One per worker, on its own cache line: the flag is written by its
  // worker and by wakers, and read by every scan.
  struct alignas(64) Slot {
    std::atomic<bool> idle{false};  // Model: `idle[w]`.
    // When the worker last announced itself, in announcements_'s order; a
    // hint for WakeOne, so relaxed: a stale one picks another idle worker.
    std::atomic<uint64_t> announced{0};
    idle::WakeWord* word = nullptr;
  };

  // Takes `s`'s worker if it is still announced and wakes it.
  bool TakeAndWake(Slot& s) noexcept;

  const size_t n_;
  const int max_pollers_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<int> num_idle_{0};            // Model: `num_idle`.
  std::atomic<uint64_t> announcements_{0};  // Stamps for Slot::announced.
  std::atomic<int> num_pollers_{0};         // Model: `num_pollers`.
  std::atomic<unsigned> wake_cursor_{0};    // Model: `start` in `wake_one`.
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_IDLE_WORKERS_H_
