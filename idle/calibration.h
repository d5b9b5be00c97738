// What the two idle states really cost on the machine the process runs on: a
// wake of a blocked waiter (FUTEX_WAKE, the scheduler, and under a hypervisor
// an IPI and a VM exit), a wake of a polling one (a store seen by the poll
// loop), and how late a timed block ends. Measured once per process, in
// about 25 ms: by ping-pong between two threads over the same futex and
// wait-loop paths the parker takes, and by timed FUTEX_WAITs that nobody
// wakes. So the block state's exit latency in the state table and the first
// wake margin are the host's own and not a guess.

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
  // How late a timed FUTEX_WAIT of kCalibrationTimedWaitNs ended, with a
  // pool worker's timer slack (kTimedBlockSlackNs): the 90th
  // percentile of kCalibrationTimedWaits (the timer's slack, the host's
  // timer path and, under a hypervisor, the halted vCPU's wake). 0 if not
  // measured.
  int64_t timed_wait_late_ns = 0;
  bool cross_cpu = false;  // The two sides ran pinned to two CPUs.
  int64_t took_ns = 0;     // Wall time of the whole calibration.
  std::string note;        // Why a part was not measured; else empty.
};

// Round trips per state: enough for a stable median (the spread of a
// FUTEX_WAKE round trip on a 2-vCPU KVM guest is about 2x), few enough to
// stay within tens of milliseconds (a block round trip waits 2 x 30 us
// before its wakes, so that each side is asleep when woken).
inline constexpr int kCalibrationBlockRoundTrips = 200;
inline constexpr int kCalibrationPollRoundTrips = 1000;
// Timed waits for the lateness: as many as the predictive governor's
// lateness history (kLatenessHistory), whose 90th percentile this stands in
// for until its own limited blocks have run out.
inline constexpr int kCalibrationTimedWaits = 16;
// Each of them: 200 us, a block ahead of a wake at the short end of the gaps
// blocking pays off for; a timed sleep on a 2-vCPU guest ends 18 us late at
// 50 us and 45 us late at 5 ms (docs/BENCHMARKS.md, bench/host_noise), so
// this sits between. 16 of them take about 4 ms.
inline constexpr int64_t kCalibrationTimedWaitNs = 200000;
// The timer slack of a waiter whose governor blocks until a time: 1 ns, the
// least the kernel takes, so a timed block ends when asked and not up to the
// default 50 us later (a timed FUTEX_WAIT on a 2-vCPU KVM guest ends 98 us
// late on average with the default slack and 49 us with 1 ns;
// docs/CONFIGURATION.md). The pool's workers run with it, and the timed
// waits are measured with it.
inline constexpr int64_t kTimedBlockSlackNs = 1;
// A round trip that takes longer than this is abandoned (a machine too
// loaded to measure): 100 ms, many scheduler slices; the median ignores
// the odd slow trip below it.
inline constexpr int64_t kCalibrationStallNs = 100000000;

// Measures now, on two new threads pinned to the first two CPUs of the
// caller's affinity mask (the caller's own affinity is untouched), so a
// block state's wake crosses CPUs as a worker's does when a submitter on
// another CPU wakes it, and the timed waits on a new thread pinned to the
// second; blocks the caller for the 25 ms or so it takes. The
// poll state is measured only with at least two CPUs (two pollers on one CPU
// measure the scheduler's slice). Thread-safe; allocates.
Calibration Calibrate();

// Calibrate() the first time it is called in the process, the same result
// after; thread-safe (later callers wait for the first).
const Calibration& ProcessCalibration();

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_CALIBRATION_H_
