// Whether an idle worker may poll, given where its wakes come from.
//
// A worker woken by a thread on its own CPU shares that CPU with its waker.
// A guest that shows no shared cache keeps the two together: the kernel
// wakes each thread on the CPU it last ran on. A poll there holds the CPU
// the waker needs to send the next wake: when the waker's timer fires, it
// waits for the poll to end (up to the poll cap) before it can submit, so
// the task comes late, and lands on a worker that just stopped polling and
// needs a FUTEX_WAKE. Blocking costs such a waker little: it wakes the
// worker on its own CPU, with no IPI, and the worker runs when the waker
// sleeps. docs/BENCHMARKS.md, "A worker that does not poll beside its
// waker", has the measurements.
//
// After kInARow wakes in a row from the worker's own CPU the worker idles
// without polling, until a wake comes from another CPU (the kernel placed
// it apart, or the waker moved). A period no waker ended (a deadline, work
// found at once) changes nothing. One worker's; only its thread.

#ifndef HALTPOOL_RUNTIME_BESIDE_WAKER_H_
#define HALTPOOL_RUNTIME_BESIDE_WAKER_H_

namespace haltpool {

class BesideWaker {
 public:
  // One wake beside the waker can be a moment of the scheduler's; two in a
  // row are how the kernel places the pair.
  static constexpr int kInARow = 2;

  // An idle period ended. `waker_cpu`: the CPU of the thread that woke the
  // worker, -1 if none did or it is unknown; `own_cpu`: the worker's CPU
  // now, -1 if unknown.
  void Woken(int waker_cpu, int own_cpu) noexcept {
    if (waker_cpu < 0 || own_cpu < 0) return;
    in_a_row_ = waker_cpu == own_cpu ? in_a_row_ + (in_a_row_ < kInARow) : 0;
  }

  // Whether the next idle period may poll.
  bool may_poll() const noexcept { return in_a_row_ < kInARow; }

 private:
  int in_a_row_ = 0;  // Wakes from the worker's own CPU, up to kInARow.
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_BESIDE_WAKER_H_
