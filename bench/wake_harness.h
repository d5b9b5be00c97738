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
// Both also note how late each wake was signalled or submitted past its
// planned time: the waker's own timer, past the margin it wakes early by,
// and anything that kept it from its CPU, such as a waiter polling there.
// The latency does not count it, so a contender that delays its waker
// shows it there.
//
// When the wakes come is a Pacing: the arrival process and how the waker
// (or submitter) waits. Arrivals::kPeriodic waits `gap` after each wake;
// kPoisson an exponential time of mean `gap`, drawn from a seeded generator
// (the same seed gives the same gaps on every machine); kBursty sends
// kBurstSize wakes kBurstSpacingNs apart, then waits `gap`. A gap counts
// from the moment the previous wake was seen (pair) or the previous task
// ran (pool); inside a burst the spacing counts from the previous wake's
// Signal() or Submit() (a pair still waits for each wake to be reported
// first; a pool's burst tasks may be queued together).
//
// Submitter::kSleep, the default, waits as a server's I/O thread would:
// asleep (clock_nanosleep, 1 ns of timer slack) until kSleepMarginNs before
// the target, then spinning; gaps under the margin are spun; after each
// wake it sleeps until the wake is reported. Submitter::kSpin is the
// harness as it was: gaps up to kSpinGapNs spun, longer ones asleep until
// kSpinSleepMarginNs before the end; after each wake it spins kDoneSpinNs
// for the report, then sleeps. On a 2-CPU machine the spinning waker is a
// third runnable thread beside a polling waiter and the woken one.
//
// The first kWarmupWakes of every point are not counted (the first comes
// right after the threads start, or after the previous gap). Nothing here
// depends on a contender: the harness is the same for all of them, OpenMP's
// included.

#ifndef HALTPOOL_BENCH_WAKE_HARNESS_H_
#define HALTPOOL_BENCH_WAKE_HARNESS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace haltpool::bench {

// The gaps the sweep runs, in ns: 0 to 10 ms.
inline constexpr int64_t kSweepGapsNs[] = {0,       1000,    5000,    20000,
                                           50000,   100000,  200000,  500000,
                                           1000000, 5000000, 10000000};

// "0,1us,...,10ms": kSweepGapsNs as --gaps takes them.
std::string SweepGapsList();
// Parses --gaps: durations as absl::ParseDuration reads them ("0", "50us",
// "1ms"), comma-separated, ascending, each from 0 to 10 s. On failure
// returns false and says in `error` which one was wrong and what is
// accepted.
bool ParseGaps(absl::string_view text, std::vector<int64_t>* gaps_ns,
               std::string* error);

// Submitter::kSleep: how early the sleeping waker wakes up, to spin the
// rest of the gap; shorter gaps are spun whole. A timed sleep on this
// project's 2-vCPU KVM guest ends 30-100 us late; 80 us is what
// bench/io_wake's sender uses too.
inline constexpr int64_t kSleepMarginNs = 80000;
// Submitter::kSpin: gaps up to this are waited out spinning; longer ones
// asleep until kSpinSleepMarginNs before the end.
inline constexpr int64_t kSpinGapNs = 100000;
inline constexpr int64_t kSpinSleepMarginNs = 100000;
// Submitter::kSpin: how long the waker spins for the wake to be reported
// before it sleeps: longer than a polled wake (about 1 us on that guest),
// shorter than a blocked one (20-40 us there).
inline constexpr int64_t kDoneSpinNs = 20000;
// Arrivals::kBursty: wakes per burst and the time between them, a request
// burst on one connection (a guess, not a measurement).
inline constexpr int kBurstSize = 8;
inline constexpr int64_t kBurstSpacingNs = 5000;

// When the wakes of a point come (see the file comment).
enum class Arrivals { kPeriodic, kPoisson, kBursty };
// How the waker waits between wakes and for a wake's report.
enum class Submitter { kSleep, kSpin };

// "periodic", "poisson", "bursty".
std::string ArrivalsName(Arrivals arrivals);
// The inverse of ArrivalsName; false for any other text.
bool ParseArrivals(absl::string_view text, Arrivals* arrivals);
// "sleep", "spin".
std::string SubmitterName(Submitter submitter);
// The inverse of SubmitterName; false for any other text.
bool ParseSubmitter(absl::string_view text, Submitter* submitter);

struct Pacing {
  Arrivals arrivals = Arrivals::kPeriodic;
  Submitter submitter = Submitter::kSleep;
  uint64_t seed = 1;  // Arrivals::kPoisson's generator.
  // >= 0: MeasurePool's submitting thread runs on this CPU alone during the
  // point, and gets its affinity back after it; -1: where the kernel puts
  // it. A server pins its I/O thread so, and keeps the pool off that CPU
  // (HALTPOOL_CPUS).
  int submitter_cpu = -1;
};

// Empty if `cpu` is -1 or a CPU the calling thread may run on; otherwise
// what is wrong, for the caller's error message.
std::string CheckSubmitterCpu(int cpu);

// The waits before each wake of one point, in order. Not thread-safe.
class ArrivalSchedule {
 public:
  ArrivalSchedule(Arrivals arrivals, int64_t gap_ns, uint64_t seed);

  struct Step {
    int64_t wait_ns;  // How long after the reference point.
    bool in_burst;    // Counts from the previous wake's Signal()/Submit()
                      // rather than from when it was seen or ran.
  };
  // The wait before the next wake. The first call is for wake 0.
  Step Next();

 private:
  const Arrivals arrivals_;
  const int64_t gap_ns_;
  uint64_t state_;  // splitmix64's.
  int64_t index_ = 0;
};

// The mean time from one wake to the next under `arrivals` with `gap_ns`,
// besides the wakes themselves: for sizing a point.
int64_t MeanSpacingNs(Arrivals arrivals, int64_t gap_ns);
// Wakes at the start of each point that are not counted.
inline constexpr int kWarmupWakes = 3;

// One gap's result.
struct WakePoint {
  int64_t gap_ns = 0;
  int samples = 0;
  double mean_us = 0, p50_us = 0, p99_us = 0;
  double cpu = 0;  // The waiting side's CPU, as a fraction of one CPU.
  // Mean of how late the waker signalled or submitted past each planned
  // time (the harness header's second paragraph), in us.
  double submit_late_us = 0;
  // CLOCK_PROCESS_CPUTIME_ID brings a thread running on another CPU up to
  // date only at its next tick, so a pool's CPU is within a tick (4 ms)
  // per busy thread at each end of the point: a few % of a 250 ms point.
};

// How many wakes to measure at a mean spacing of `gap_ns` (MeanSpacingNs)
// so that the point takes about `point_ms`, within [min_samples,
// max_samples].
int SamplesFor(int64_t gap_ns, int64_t point_ms, int min_samples,
               int max_samples);

// Summarizes latencies (ns, reordered in place) and how late each wake was
// sent (ns) into a point; CPU time below 0 (two clocks read apart) counts
// as 0.
WakePoint Summarize(int64_t gap_ns, std::vector<int64_t>& latencies_ns,
                    const std::vector<int64_t>& late_ns, int64_t cpu_ns,
                    int64_t wall_ns);

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
  PairRun(int64_t gap_ns, int samples, const Pacing& pacing = {});
  PairRun(const PairRun&) = delete;
  PairRun& operator=(const PairRun&) = delete;

  // The waker's loop: waits out the pacing's wait after each reported wake,
  // stamps the time, signals, waits for the report. Sets the thread's timer
  // slack to 1 ns.
  void WakerSide(WakeChannel& channel);
  // The waiter's loop: waits, stamps the time, reports it (release). Its
  // own CPU time over the loop is the point's CPU.
  void WaiterSide(WakeChannel& channel);
  // After both sides returned.
  WakePoint Result();

 private:
  const int64_t gap_ns_;
  const int samples_;  // Counted wakes; kWarmupWakes more are run.
  const Pacing pacing_;
  std::vector<int64_t> signal_ns_;     // Written by the waker.
  std::vector<int64_t> late_ns_;       // Written by the waker.
  std::vector<int64_t> wake_ns_;       // Written by the waiter.
  std::atomic<uint32_t> reported_{0};  // Wakes the waiter reported.
  int64_t waiter_cpu_ns_ = 0;
  int64_t waiter_wall_ns_ = 0;
};

// Runs one gap of a pair on two new threads (the calling thread waits).
WakePoint MeasurePair(WakeChannel& channel, int64_t gap_ns, int samples,
                      const Pacing& pacing = {});

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
// to 1 ns). The point's CPU is the process's CPU time less this thread's:
// the submitter's waiting, asleep or spinning, never counts as the pool's.
WakePoint MeasurePool(const SubmitFn& submit, int64_t gap_ns, int samples,
                      const Pacing& pacing = {});

}  // namespace haltpool::bench

#endif  // HALTPOOL_BENCH_WAKE_HARNESS_H_
