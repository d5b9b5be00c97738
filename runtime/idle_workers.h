// The pool's half of the wake protocol: which workers are idle, how many
// poll, and which one a submission wakes. A worker about to idle announces
// itself, then re-checks for work; a submitter pushes its task, then wakes
// one announced worker, preferring one that polls. Both sides order these
// steps sequentially consistent, so either the worker sees the task or the
// submitter sees the worker: a task never sits queued while every worker
// sleeps. A submitter that finds a worker polling may instead hand it the
// task, in a slot on the cache line the waker takes anyway, before the
// wake. The parker's half (the handshake on one wake word) is
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
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "idle/parker.h"
#include "idle/poll_gate.h"
#include "idle/protocol_step.h"
#include "runtime/job.h"

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
  // Destroys, unrun, a task still in a slot; the pool's shutdown leaves
  // none (its workers take theirs before they exit).
  ~IdleWorkers();

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
    slots_[w].waker_cpu.store(-1, std::memory_order_relaxed);
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

  // Hands `job` straight to an idle worker that polls: takes it (as WakeOne
  // does), moves `job` into its slot, then unparks it, so the worker finds
  // the task on the line it reads to retire, with no queue between. If the
  // slot still holds an earlier task (the worker has not come round to it
  // yet), `push` gets the job instead, before the wake. Returns true if a
  // worker was taken (the job is gone); false if none polled, with `job`
  // untouched: push it and call WakeOne. Needs no fence: the exchange of
  // the worker's idle flag is the claim, and the wake comes after the task
  // is in place (release, through Unpark). Model: `hand_off`. Any thread;
  // no allocation; no system call unless the worker went to sleep
  // meanwhile.
  bool HandOff(Job& job, absl::FunctionRef<void(Job&&)> push) noexcept;

  // The task handed to worker `w`, if there is one; empties the slot.
  // Acquire, pairing with HandOff's release. Model: the `slot[me] == FULL`
  // step. Only worker `w`'s thread.
  std::optional<Job> TakeHandedOff(int w) noexcept;

  // Whether worker `w`'s slot holds a task or is being filled. A snapshot;
  // only worker `w`'s thread, for its last look before it exits.
  bool HasHandedOff(int w) const noexcept {
    return slots_[w].handoff.load(std::memory_order_acquire) != kFree;
  }

  // The CPU the waker that took worker `w` in its current idle period ran
  // on, or -1 if none took it (its park ended by a deadline, or I/O) or the
  // CPU is unknown. A hint, no step of the handshake: the waker stores it,
  // relaxed, after taking the flag and before its Unpark, so the worker
  // sees it once its park has seen the wake. A waker that took the worker
  // in an earlier period, after that park had ended, may store it late;
  // its Unpark then ends this period too. Only worker `w`'s thread, after
  // its park.
  int WakerCpu(int w) const noexcept {
    return slots_[w].waker_cpu.load(std::memory_order_relaxed);
  }
  // Workers holding a polling slot now. A relaxed snapshot; any thread.
  int num_pollers() const noexcept {
    return num_pollers_.load(std::memory_order_relaxed);
  }

  // Announced workers now. A snapshot; any thread.
  int num_idle() const noexcept {
    return num_idle_.load(std::memory_order_seq_cst);
  }

  // Workers whose threads are not asleep on their word: running, polling,
  // about to park, or woken and not yet running. A relaxed snapshot, one
  // load per worker; any thread.
  int num_awake() const noexcept;

  int max_pollers() const noexcept { return max_pollers_; }

 private:
  // A hand-off slot's states. Only a submitter that took the worker's idle
  // flag moves it from kFree (to kWriting, by compare-exchange, then
  // kFull); only the worker moves it back.
  enum : uint32_t { kFree = 0, kWriting = 1, kFull = 2 };

  // One per worker, on its own cache line: the flag is written by its
  // worker and by wakers, and read by every scan; the hand-off slot
  // beside it is written by the waker that took the flag and read by the
  // worker as it retires, so a hand-off moves that one line.
  struct alignas(64) Slot {
    std::atomic<bool> idle{false};  // Model: `idle[w]`.
    // The CPU its last waker ran on (WakerCpu), in the flag's padding;
    // -1 none or unknown, or a CPU above the int16_t range.
    std::atomic<int16_t> waker_cpu{-1};
    std::atomic<uint32_t> handoff{kFree};  // Model: `slot[w]`.
    // When the worker last announced itself, in announcements_'s order; a
    // hint for WakeOne, so relaxed: a stale one picks another idle worker.
    std::atomic<uint64_t> announced{0};
    // The handed-off Job while `handoff` is kFull.
    alignas(Job) unsigned char job[sizeof(Job)];
  };
  static_assert(sizeof(Slot) == 64, "a hand-off moves one cache line");

  // Takes worker `i` if it is still announced and wakes it.
  bool TakeAndWake(size_t i) noexcept;
  // Takes worker `i` if it is still announced; true if taken.
  bool Take(size_t i) noexcept;

  const size_t n_;
  const std::vector<idle::WakeWord*> words_;  // Worker i's is words_[i].
  const int max_pollers_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<int> num_idle_{0};            // Model: `num_idle`.
  std::atomic<uint64_t> announcements_{0};  // Stamps for Slot::announced.
  std::atomic<int> num_pollers_{0};         // Model: `num_pollers`.
  std::atomic<unsigned> wake_cursor_{0};    // Model: `start` in `wake_one`.
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_IDLE_WORKERS_H_
