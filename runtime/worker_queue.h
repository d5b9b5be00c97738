// A worker's own queue: a bounded lock-free ring that only its owner pushes
// to, and that the owner and thieves take from, oldest first (single
// producer, many consumers; the local queue of Go's and Tokio's schedulers).
// Push is a slot check, a move and a release store; a take is one
// compare-exchange. Neither allocates; a full ring refuses the push and the
// caller sends the job elsewhere (the pool: to its injection queue).
//
// Why oldest first for the owner too, and not a Chase-Lev deque whose owner
// takes the newest: the pool promises each worker's queue is FIFO (timers
// that fall due together run in deadline order; a coroutine that yields with
// Schedule() lets the tasks queued before it run even on a one-worker pool).
// Taking from the top costs the owner one compare-exchange where Chase-Lev's
// take costs a seq_cst fence: the same price on x86-64.
//
// Positions are 64-bit counters that only grow: top_ (next to take) and
// bottom_ (next to push); position p lives in slot p % capacity. Each slot
// carries `free_for`, the position it may next be filled for.
//
//   Push (owner), at position b = bottom_:
//     slot.free_for.load(acquire) == b, else the ring is full: refuse;
//     construct the Job in the slot; bottom_.store(b + 1, release).
//   Take (any thread):
//     t = top_.load(acquire); b = bottom_.load(acquire); t == b: empty;
//     top_.compare_exchange(t, t + 1, acq_rel), lost: start again;
//     won: move the Job out of slot t, destroy it there,
//     slot.free_for.store(t + capacity, release).
//
// Why a Job is never read while written, nor written while read:
// - A taker reads slot t only after winning position t, and it read
//   bottom_ > t (acquire) before: that load synchronizes with the owner's
//   release store of bottom_ made after the Job was constructed, so the
//   construction happens before the move out. Positions are never reused
//   (64-bit counters do not wrap), so exactly one taker wins t, and the slot
//   still holds position t's Job: refilling it needs position t taken first.
// - The owner refills slot t's index only for position t + capacity, after
//   it reads free_for == t + capacity (acquire), which the winner of t
//   stores (release) after its move and destroy: the move happens before the
//   next construction. A taker that has won top but not finished its move
//   keeps the slot unavailable, so the owner refuses rather than overwrite.
// - Takers that lose the compare-exchange read no slot.
//
// Wake protocol (docs/DESIGN.md, "The pool's wake protocol"): Empty() loads
// top_ and bottom_ seq_cst. The pusher stores bottom_ (release), then its
// caller issues a seq_cst fence and reads the idle flags (seq_cst); a worker
// announces itself idle (seq_cst) and then calls Empty(). If the worker's
// load of bottom_ missed the push, it is coherence-ordered before the store,
// which happens before the fence, so by [atomics.order] the load precedes
// the fence in the single total order S; the pusher's read of the idle flag
// follows its fence, and if it too missed the announcement it precedes the
// announcement in S, which precedes the worker's load: a cycle. So one side
// sees the other.

#ifndef HALTPOOL_RUNTIME_WORKER_QUEUE_H_
#define HALTPOOL_RUNTIME_WORKER_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <utility>

#include "runtime/job.h"

namespace haltpool {

class WorkerQueue {
 public:
  // Room for `capacity` jobs (rounded up to a power of two, at least 2).
  // Allocates the ring once, here.
  explicit WorkerQueue(size_t capacity = kDefaultCapacity);
  WorkerQueue(const WorkerQueue&) = delete;
  WorkerQueue& operator=(const WorkerQueue&) = delete;
  // Destroys the jobs still queued, unrun. No other thread may use it.
  ~WorkerQueue();

  // Moves `job` in at the bottom and returns true, or, if the ring is full
  // (or a taker is still moving out of the slot it needs), leaves `job` as
  // it was and returns false. Owner thread only. Release ordering: a taker
  // that takes the job sees everything written before the push. Allocates
  // nothing.
  bool TryPush(Job& job) noexcept {
    const uint64_t b = bottom_.load(std::memory_order_relaxed);
    Slot& s = slots_[b & mask_];
    if (s.free_for.load(std::memory_order_acquire) != b) return false;
    ::new (static_cast<void*>(s.storage)) Job(std::move(job));
    bottom_.store(b + 1, std::memory_order_release);
    return true;
  }

  // Takes the oldest job, if any. Any thread: the owner pops, others steal.
  // Lock-free: a taker retries only when another took the job it aimed at.
  // Acquire ordering on the job it returns.
  std::optional<Job> Take() noexcept {
    uint64_t t = top_.load(std::memory_order_acquire);
    for (;;) {
      const uint64_t b = bottom_.load(std::memory_order_acquire);
      if (t >= b) return std::nullopt;
      if (top_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
        break;
      }
    }
    Slot& s = slots_[t & mask_];
    Job* in_slot = std::launder(reinterpret_cast<Job*>(s.storage));
    std::optional<Job> job(std::move(*in_slot));
    in_slot->~Job();
    s.free_for.store(t + capacity_, std::memory_order_release);
    return job;
  }

  // True if no job is queued. Any thread; seq_cst loads (see the file
  // comment for what the wake protocol draws from them).
  bool Empty() const noexcept {
    const uint64_t t = top_.load(std::memory_order_seq_cst);
    return bottom_.load(std::memory_order_seq_cst) <= t;
  }

  size_t capacity() const noexcept { return capacity_; }

  // 256 jobs of 48 bytes (12 KiB) per worker, as Go's and Tokio's local
  // queues; a fan-out beyond it spills to the injection queue.
  static constexpr size_t kDefaultCapacity = 256;

 private:
  struct Slot {
    std::atomic<uint64_t> free_for;
    alignas(Job) unsigned char storage[sizeof(Job)];
  };

  const size_t capacity_;
  const uint64_t mask_;
  std::unique_ptr<Slot[]> slots_;
  // Takers hammer top_; the owner writes bottom_: separate cache lines.
  alignas(64) std::atomic<uint64_t> top_{0};
  alignas(64) std::atomic<uint64_t> bottom_{0};
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_WORKER_QUEUE_H_
