// HALTPOOL_PROTOCOL_STEP(): marks a point between two steps of the wake
// protocol (the parker's handshake, the pool's wake policy) where another
// thread's step may fall. In normal builds it is nothing at all: no call, no
// branch. Built with HALTPOOL_TORTURE defined (the torture test's copies of
// the parker and the pool, tests/torture/), it calls ProtocolStep(), which
// the torture test defines to inject random delays and sched_yield() there,
// so a race that needs an unlucky moment gets one often.

#ifndef HALTPOOL_IDLE_PROTOCOL_STEP_H_
#define HALTPOOL_IDLE_PROTOCOL_STEP_H_

namespace haltpool::idle {

// Defined only by torture tests; called only from HALTPOOL_TORTURE builds.
// Any thread; must be async-signal-safe enough for a futex waker (no locks).
void ProtocolStep() noexcept;

}  // namespace haltpool::idle

#ifdef HALTPOOL_TORTURE
#define HALTPOOL_PROTOCOL_STEP() ::haltpool::idle::ProtocolStep()
#else
#define HALTPOOL_PROTOCOL_STEP() \
  do {                           \
  } while (0)
#endif

#endif  // HALTPOOL_IDLE_PROTOCOL_STEP_H_
