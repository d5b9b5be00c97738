// The calling thread's timer slack: how much later than asked the kernel
// may end a timed sleep, so it can batch timer interrupts. A timed
// FUTEX_WAIT ends up to the slack late (50 us for ordinary threads, the
// kernel's default); a waiter that blocks until a deadline it must meet
// wants it small.

#ifndef HALTPOOL_ARCH_TIMER_SLACK_H_
#define HALTPOOL_ARCH_TIMER_SLACK_H_

#include <cstdint>

#include "absl/status/status.h"

namespace haltpool::arch {

// prctl(PR_SET_TIMERSLACK, ns) for the calling thread; ns >= 1 (0 would
// mean "the default" to the kernel). An error names the errno.
absl::Status SetThreadTimerSlackNs(int64_t ns);

// prctl(PR_GET_TIMERSLACK) for the calling thread, in ns.
int64_t ThreadTimerSlackNs();

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_TIMER_SLACK_H_
