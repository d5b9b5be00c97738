// What the two idle states really cost on the machine the process runs on: a
// wake of a blocked waiter (FUTEX_WAKE, the scheduler, and under a hypervisor
// an IPI and a VM exit) and a wake of a polling one (a store seen by the poll
// loop). Measured once per process by ping-pong between two threads over the
// same futex and wait-loop paths the parker takes, in about 20 ms, so the
// block state's exit latency in the state table is the host's own and not a
// guess.

#ifndef HALTPOOL_IDLE_CALIBRATION_H_
#define HALTPOOL_IDLE_CALIBRATION_H_

#include <cstdint>
#include <string>

namespace haltpool::idle {

struct Calibration {
  bool measured = false;  // False: no numbers below but `note`.
  // The median one-way wake of a blocked parker (from the waker's time
  // stamp to the woken side, counting only wakes of a side that really
  // slept in FUTEX_WAIT), and of a polling one (half a round trip).
  int64_t block_wake_ns = 0;
  int64_t poll_wake_ns = 0;  // 0 with a single usable CPU (not measured).
  int round_trips = 0;       // Per state.
  bool cross_cpu = false;    // The two sides ran pinned to two CPUs.
  int64_t took_ns = 0;       // Wall time of the whole calibration.
  std::string note;          // Why a part was not measured; else empty.
};

// Round trips per state: enough for a stable median (the spread of a
// FUTEX_WAKE round trip on a 2-vCPU KVM guest is about 2x), few enough to
// stay within tens of milliseconds (a block round trip waits 2 x 30 us
// before its wakes, so that each side is asleep when woken).
inline constexpr int kCalibrationBlockRoundTrips = 200;
inline constexpr int kCalibrationPollRoundTrips = 1000;
// A round trip that takes longer than this is abandoned (a machine too
// loaded to measure): 100 ms, many scheduler slices; the median ignores
// the odd slow trip below it.
inline constexpr int64_t kCalibrationStallNs = 100000000;

// Measures now, on two new threads pinned to the first two CPUs of the
// caller's affinity mask (the caller's own affinity is untouched), so a
// block state's wake crosses CPUs as a worker's does when a submitter on
// another CPU wakes it; blocks the caller for the 20 ms or so it takes. The
// poll state is measured only with at least two CPUs (two pollers on one CPU
// measure the scheduler's slice). Thread-safe; allocates.
Calibration Calibrate();

// Calibrate() the first time it is called in the process, the same result
// after; thread-safe (later callers wait for the first).
const Calibration& ProcessCalibration();

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_CALIBRATION_H_
