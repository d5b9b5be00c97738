// A thread outside the pool that waits for a task group (ThreadPool::Wait)
// idles as a worker does: it polls its own wake word for its governor's
// window, then sleeps in FUTEX_WAIT, and the task that ends the group wakes
// it (TaskGroup::Done) with a store alone while it still polls. A waiter
// that went straight to sleep cost every such wait a FUTEX_WAKE, and on a
// VM an IPI and a VM exit: a ping-pong through a pool from an outside
// thread ran at 42k round trips/s instead of 866k whenever the task ended
// after its submitter began to wait (bench/oversubscription's idle row on
// a 2-vCPU KVM guest).
//
// Each thread keeps one waiter, so its governor learns across waits. It is
// made for one pool's idle options and made anew when the thread waits on
// another pool or the pool's options change (ThreadPool::SetIdleOptions).
// A waiter never polls when the process may use one CPU: its poll would
// hold off the very task it waits for (a ping-pong under taskset -c 0 fell
// from 130k to 80k round trips/s in bench/oversubscription, and under the
// poll governor from 44k to 4.7k). With the back-off on, it does not poll
// beside the worker that wakes it either (runtime/beside_waker.h), as a
// worker does not.

#ifndef HALTPOOL_RUNTIME_OUTSIDE_WAITER_H_
#define HALTPOOL_RUNTIME_OUTSIDE_WAITER_H_

#include <atomic>
#include <cstdint>
#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "idle/idle_options.h"
#include "idle/parker.h"
#include "runtime/beside_waker.h"
#include "runtime/pool_stats.h"

namespace haltpool {

// A pool's counts of its outside waits (PoolStats::outside_waits), on a
// cache line of their own: outside waiters add to them on every wait, and
// nothing on a worker's path shares the line.
class alignas(64) OutsideWaitCounters {
 public:
  // One wait's idle period (`parked`) and the wakes its group's last task
  // sent to the word, by kind. Relaxed adds, only those that are not 0.
  // Any thread.
  void Add(bool parked, const idle::WakeStats& wakes) noexcept;
  // Any thread; each count may be one wait behind.
  OutsideWaitStats Snapshot() const noexcept;

 private:
  std::atomic<uint64_t> parks_{0};
  std::atomic<uint64_t> polling_{0};
  std::atomic<uint64_t> not_idle_{0};
  std::atomic<uint64_t> syscall_{0};
};

class OutsideWaiter {
 public:
  // The calling thread's waiter for the pool numbered `pool_serial`, whose
  // newest idle options are generation `generation`. `options` gives those
  // options; it is called only when the thread's waiter was made for
  // another pool or generation, and then the waiter is made anew (its
  // governor starts afresh). Fails as idle::Parker::Create. Only the
  // calling thread; allocates only when it makes the waiter.
  static absl::StatusOr<OutsideWaiter*> ForThisThread(
      uint64_t pool_serial, uint64_t generation,
      absl::FunctionRef<idle::IdleOptions()> options);

  OutsideWaiter(const OutsideWaiter&) = delete;
  OutsideWaiter& operator=(const OutsideWaiter&) = delete;

  // What wakers unpark (register it with the group) and what the thread
  // parks on. Only the owning thread parks.
  idle::WakeWord& word() noexcept { return word_; }
  idle::Parker& parker() noexcept { return *parker_; }
  // Where its wakes come from, as a worker keeps it: a waiter woken from
  // its own CPU shares that CPU with the worker that runs its tasks, and a
  // poll there would hold the CPU the task needs. Kept across pools.
  BesideWaker& beside_waker() noexcept { return beside_waker_; }

 private:
  OutsideWaiter() = default;

  idle::WakeWord word_;
  BesideWaker beside_waker_;
  std::optional<idle::Parker> parker_;
  uint64_t pool_serial_ = 0;  // 0: made for no pool yet.
  uint64_t generation_ = 0;
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_OUTSIDE_WAITER_H_
