// A limit on how many waiters poll at once, asked before each poll rather
// than once per idle period: a waiter whose governor blocks holds no
// permission, so another may poll meanwhile. A thread pool implements it
// with its polling slots; no wake depends on a gate.

#ifndef HALTPOOL_IDLE_POLL_GATE_H_
#define HALTPOOL_IDLE_POLL_GATE_H_

namespace haltpool::idle {

class PollGate {
 public:
  virtual ~PollGate() = default;
  // True if the caller may poll now; it calls Leave() when that poll ends.
  // False: it enters the block state instead. Only the waiting thread;
  // noexcept, allocation-free, a few atomics at most.
  virtual bool TryEnter() noexcept = 0;
  // Ends the poll a TryEnter() that returned true allowed.
  virtual void Leave() noexcept = 0;
};

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_POLL_GATE_H_
