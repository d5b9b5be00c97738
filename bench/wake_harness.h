// The measurement core of bench/tradeoff (and bench/pool_latency): how long
// a wake takes and how much CPU the waiting side burns, for one gap between
// wakes.
//
// Two kinds of run:
// - A pair: a waiter thread waits on a WakeChannel, a waker thread signals
//   it `gap` after the previous wake was seen. The latency is from just
//   before Signal() to just after Wait() returns; the CPU is the waiter
//   thread's own CPU time over the run's wall time.
// - A pool: one outside thread submits a Probe every `gap`; the probe notes
//   how long it waited. The CPU is the process's CPU time less the
//   submitting thread's: what the idle pool burns.
//
// The gap counts from the moment the previous wake was seen (pair) or the
// previous task ran (pool). Gaps up to kSpinGapNs are waited out spinning;
// longer ones asleep until kSleepMarginNs before the end (with 1 ns of timer
// slack), then spinning. After each wake the waker (or submitter) waits for
// it to be reported: it spins kDoneSpinNs, then sleeps, so that on a 2-CPU
// machine it does not hold the CPU the woken side needs. The first
// kWarmupWakes of every point are not counted (the first comes right after
// the threads start, or after the previous gap). Nothing here depends on a
// contender: the harness is the same for all of them, OpenMP's included.

#ifndef HALTPOOL_BENCH_WAKE_HARNESS_H_
#define HALTPOOL_BENCH_WAKE_HARNESS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

namespace haltpool::bench {

// The gaps the sweep runs, in ns: 0 to 10 ms.
inline constexpr int64_t kSweepGapsNs[] = {0,       1000,    5000,    20000,
                                           50000,   100000,  200000,  500000,
                                           1000000, 5000000, 10000000};

// Gaps up to this are waited out spinning; longer ones asleep.
inline constexpr int64_t kSpinGapNs = 100000;
// How early a sleeping waker wakes up, to spin the rest of the gap: a timed
// sleep on this project's 2-vCPU KVM guest ends 30-100 us late.
inline constexpr int64_t kSleepMarginNs = 100000;
// How long the waker spins for the wake to be reported before it sleeps:
// longer than a polled wake (about 1 us on that guest), shorter than a
// blocked one (20-40 us there).
inline constexpr int64_t kDoneSpinNs = 20000;
// Wakes at the start of each point that are not counted.
inline constexpr int kWarmupWakes = 3;

// One gap's result.
struct WakePoint {
  int64_t gap_ns = 0;
  int samples = 0;
  double mean_us = 0, p50_us = 0, p99_us = 0;
  double cpu = 0;  // The waiting side's CPU, as a fraction of one CPU.
  // CLOCK_PROCESS_CPUTIME_ID brings a thread running on another CPU up to
  // date only at its next tick, so a pool's CPU is within a tick (4 ms)
  // per busy thread at each end of the point: a few % of a 250 ms point.
};

// How many wakes to measure at `gap_ns` so that the point takes about
// `point_ms`, within [min_samples, max_samples].
int SamplesFor(int64_t gap_ns, int64_t point_ms, int min_samples,
               int max_samples);

// Summarizes latencies (ns, reordered in place) into a point; CPU time
// below 0 (two clocks read apart) counts as 0.
WakePoint Summarize(int64_t gap_ns, std::vector<int64_t>& latencies_ns,
                    int64_t cpu_ns, int64_t wall_ns);

// A one-way wake between two threads. Signals are never more than one
// ahead of waits: the harness signals again only after the last wake was
// reported.
class WakeChannel {
 public:
  virtual ~WakeChannel() = default;
  // Returns after a Signal() (one that came earlier included), consuming it,
  // with acquire ordering against it. The waiter thread only.
  virtual void Wait() = 0;
  // Wakes the waiter, release ordering. The waker thread only.
  virtual void Signal() = 0;
};

// One gap of a pair run. Construct it, run WakerSide() and WaiterSide() on
// two threads at once, then read Result().
class PairRun {
 public:
  PairRun(int64_t gap_ns, int samples);
  PairRun(const PairRun&) = delete;
  PairRun& operator=(const PairRun&) = delete;

  // The waker's loop: waits out the gap after each reported wake, stamps
  // the time, signals, waits for the report. Sets the thread's timer slack
  // to 1 ns.
  void WakerSide(WakeChannel& channel);
  // The waiter's loop: waits, stamps the time, reports it (release). Its
  // own CPU time over the loop is the point's CPU.
  void WaiterSide(WakeChannel& channel);
  // After both sides returned.
  WakePoint Result();

 private:
  const int64_t gap_ns_;
  const int samples_;               // Counted wakes; kWarmupWakes more are run.
  std::vector<int64_t> signal_ns_;  // Written by the waker.
  std::vector<int64_t> wake_ns_;    // Written by the waiter.
  std::atomic<uint32_t> reported_{0};  // Wakes the waiter reported.
  int64_t waiter_cpu_ns_ = 0;
  int64_t waiter_wall_ns_ = 0;
};

// Runs one gap of a pair on two new threads (the calling thread waits).
WakePoint MeasurePair(WakeChannel& channel, int64_t gap_ns, int samples);

// The task a pool contender runs: two pointers, so it is stored inline by
// haltpool's tasks and by std::function alike (no allocation per submit).
// `slot` holds the submit time and receives the latency.
struct Probe {
  int64_t* slot;
  std::atomic<uint32_t>* done;
  // Replaces *slot (the submit time) by the time since, then counts the run
  // in *done (release) and wakes a waiter on it.
  void operator()() const noexcept;
};

// Submits a probe to the pool under test. It may run the probe before it
// returns (a fork-join region does).
using SubmitFn = std::function<void(Probe)>;

// One gap of a pool run, on the calling thread (whose timer slack it sets
// to 1 ns).
WakePoint MeasurePool(const SubmitFn& submit, int64_t gap_ns, int samples);

}  // namespace haltpool::bench

#endif  // HALTPOOL_BENCH_WAKE_HARNESS_H_
