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
// it apart, or the waker moved). Every kProbeEvery-th such period polls
// anyway, so a placement that changed while the worker blocked (a waker
// the scheduler moved away while the worker held its CPU) is seen. A
// period no waker ended (a deadline, I/O, work found at once) changes
// nothing. One worker's; only its thread.

#ifndef HALTPOOL_RUNTIME_BESIDE_WAKER_H_
#define HALTPOOL_RUNTIME_BESIDE_WAKER_H_

namespace haltpool {

class BesideWaker {
 public:
  // One wake beside the waker can be a moment of the scheduler's; two in a
  // row are how the kernel places the pair.
  static constexpr int kInARow = 2;
  // One probe in 32 periods: at a 1 ms gap, one 50 us poll every 32 ms,
  // under 0.2 % of a CPU.
  static constexpr int kProbeEvery = 32;

  // An idle period ended. `waker_cpu`: the CPU of the thread that woke the
  // worker, -1 if none did or it is unknown; `own_cpu`: the worker's CPU
  // now, -1 if unknown.
  void Woken(int waker_cpu, int own_cpu) noexcept {
    if (waker_cpu < 0 || own_cpu < 0) return;
    if (waker_cpu != own_cpu) {
      in_a_row_ = 0;
      without_poll_ = 0;
    } else if (in_a_row_ < kInARow) {
      ++in_a_row_;
    }
  }

  // Whether the idle period about to start may poll; call once per period
  // that could poll. Counts the periods it refuses, for the probes.
  bool NextMayPoll() noexcept {
    if (in_a_row_ < kInARow) return true;
    if (++without_poll_ < kProbeEvery) return false;
    without_poll_ = 0;
    return true;
  }

 private:
  int in_a_row_ = 0;      // Wakes from the worker's own CPU, up to kInARow.
  int without_poll_ = 0;  // Periods refused a poll since the last probe.
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_BESIDE_WAKER_H_
