// Somewhere other than FUTEX_WAIT that a waiter can block, such as an I/O
// ring, and how wakers end that block. The parker uses it in place of its
// own states when a waiter has other events to watch: while polling it also
// checks Ready(), and its block state waits in Block() and is ended by
// Kick() instead of FUTEX_WAKE.

#ifndef HALTPOOL_IDLE_EXTERNAL_WAIT_H_
#define HALTPOOL_IDLE_EXTERNAL_WAIT_H_

#include <cstdint>

namespace haltpool::idle {

class ExternalWait {
 public:
  virtual ~ExternalWait() = default;

  // True if an event is ready for the waiter. Called over and over in the
  // poll loop, so it should cost a few loads, or at most one cheap system
  // call; it may count what it finds. Only the waiter's thread.
  virtual bool Ready() noexcept = 0;

  // Blocks until an event is ready, Kick() is called (before or during the
  // call), or CLOCK_MONOTONIC reaches `until_ns`. Returns false only at the
  // deadline. Only the waiter's thread.
  virtual bool Block(int64_t until_ns) noexcept = 0;

  // Ends the current or next Block(). Any thread.
  virtual void Kick() noexcept = 0;
};

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_EXTERNAL_WAIT_H_
