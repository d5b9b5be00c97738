// The pool's shared queue, for tasks submitted from outside its workers and
// for what overflows a worker's own queue: any number of producers and
// consumers, oldest first. A bounded lock-free ring with a sequence number
// per slot (Dmitry Vyukov's bounded MPMC queue) takes the common case; when
// it is full, jobs go to an overflow TaskQueue (a growable ring under a
// lock) until that has drained, so no job is refused and none is overtaken
// for ever.
//
// Ring positions are 64-bit counters that only grow: head_ (next to take)
// and tail_ (next to fill); position p lives in slot p % capacity, whose
// `seq` says what the slot is ready for:
//   seq == p      empty, ready to be filled for position p;
//   seq == p + 1  holds position p's job, ready to be taken.
// The slots live in zero-filled pages (arch::ZeroPages) and store seq less
// the slot's index, so "slot i empty for position i" is the zero the kernel
// provides: the constructor writes nothing, and a page of the ring becomes
// resident only when the queue first reaches it. An idle pool keeps the
// ring's 768 KiB out of its resident memory.
//
// A producer wins position p by compare-exchange on tail_ when seq == p,
// constructs the Job in the slot and stores seq = p + 1 (release). A
// consumer wins p by compare-exchange on head_ when seq == p + 1 (acquire),
// moves the Job out, destroys it and stores seq = p + capacity (release).
//
// Why a Job is never read while written, nor written while read: each
// position has exactly one winner on each side (positions never repeat). A
// consumer reads the slot only after it saw seq == p + 1 (acquire), which
// the producer stored after constructing; a producer writes the slot for
// p + capacity only after it saw seq == p + capacity (acquire), which the
// consumer of p stored after its move. A slot whose previous job is still
// being moved out reads as full, and the push goes to the overflow.
//
// A consumer that finds position p won by a producer (tail_ > p) but not
// yet filled waits for it, a few instructions unless the producer was
// preempted between its compare-exchange and its store: Empty() already
// says "not empty" then, and the wake protocol must not see a task that no
// Pop can take.
//
// Wake protocol (docs/DESIGN.md, "The pool's wake protocol"): a push writes
// tail_ (its compare-exchange) or the overflow's size (a seq_cst store)
// before it returns; the caller then issues a seq_cst fence and reads the
// idle flags. Empty() loads both seq_cst. As for WorkerQueue (see its file
// comment), a worker that announced itself idle (seq_cst) and then calls
// Empty() sees the push, or the pusher sees the announcement.

#ifndef HALTPOOL_RUNTIME_INJECTION_QUEUE_H_
#define HALTPOOL_RUNTIME_INJECTION_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "arch/zero_pages.h"
#include "runtime/job.h"
#include "runtime/task_queue.h"

namespace haltpool {

class InjectionQueue {
 public:
  // A ring of `ring_capacity` jobs (rounded up to a power of two, at least
  // 2), allocated here, and an overflow that starts small.
  explicit InjectionQueue(size_t ring_capacity = kDefaultRingCapacity);
  InjectionQueue(const InjectionQueue&) = delete;
  InjectionQueue& operator=(const InjectionQueue&) = delete;
  // Destroys the jobs still queued, unrun. No other thread may use it.
  ~InjectionQueue();

  // Appends `job`. Any thread. Lock-free while the ring has room and the
  // overflow is empty; allocates only when the overflow must grow. Release
  // ordering: the consumer that takes the job sees what was written before.
  void Push(Job job);

  // Takes the oldest job in the ring, or else in the overflow, if any. Any
  // thread. Acquire ordering on the job it returns. Allocates nothing.
  std::optional<Job> Pop() noexcept;

  // True if no job is queued or being pushed. Any thread; seq_cst loads
  // (see the file comment for what the wake protocol draws from them).
  bool Empty() const noexcept;

  size_t ring_capacity() const noexcept { return capacity_; }

  // 16384 jobs of 48 bytes (768 KiB) per pool: holds the pool_throughput
  // benchmark's 10,000-task burst from one outside producer. With 1024 the
  // burst spilled to the overflow's lock and the outside producer ran at 2.6M
  // tasks/s against 4.6M (2-vCPU KVM guest, docs/BENCHMARKS.md).
  static constexpr size_t kDefaultRingCapacity = 16384;

 private:
  // seq_from_index is seq less the slot's index (zero: empty for lap 0);
  // accessed only through std::atomic_ref, by Seq() and SetSeq().
  struct Slot {
    alignas(std::atomic_ref<uint64_t>::required_alignment) uint64_t
        seq_from_index;
    alignas(Job) unsigned char storage[sizeof(Job)];
  };

  Slot& SlotFor(uint64_t pos) const noexcept;
  // The slot's seq for `pos`'s slot, acquire; and its release store.
  uint64_t Seq(uint64_t pos) const noexcept;
  void SetSeq(uint64_t pos, uint64_t seq) noexcept;

  // Moves `job` into the ring and returns true, or returns false with `job`
  // untouched if the ring is full.
  bool TryPushRing(Job& job) noexcept;
  std::optional<Job> PopRing() noexcept;

  const size_t capacity_;
  const uint64_t mask_;
  arch::ZeroPages pages_;
  Slot* const slots_;
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) TaskQueue overflow_;
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_INJECTION_QUEUE_H_
