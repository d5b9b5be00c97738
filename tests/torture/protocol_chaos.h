// The torture tests' ProtocolStep() (idle/protocol_step.h): at each marked
// step of the wake protocol, now and then a sched_yield() or a spin of random
// length, so that other threads' steps fall in between.

#ifndef HALTPOOL_TESTS_TORTURE_PROTOCOL_CHAOS_H_
#define HALTPOOL_TESTS_TORTURE_PROTOCOL_CHAOS_H_

#include <cstdint>

namespace haltpool::torture {

// How many marked steps ran, and how many of them were delayed; any thread.
uint64_t ProtocolSteps();
uint64_t ProtocolDelays();

}  // namespace haltpool::torture

#endif  // HALTPOOL_TESTS_TORTURE_PROTOCOL_CHAOS_H_
