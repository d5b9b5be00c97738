// The pool's view of CPU contention: every kSampleIntervalNs one worker
// about to idle samples the runnable count and CPU pressure, now and then
// steal time, and how long it waits for its CPU (its run delay) around the
// poll that follows; it feeds the samples to idle::PollBackoff and gives every
// worker's park the resulting poll cap.
//
// The sample is taken before the worker announces itself idle, never
// between the announcement and the park: a submitter that finds a worker
// announced wakes it and expects it to be parked or polling, not reading
// files. Before the announcement the worker is, for the pool, still busy
// running; a task submitted meanwhile is found by its recheck.

#ifndef HALTPOOL_RUNTIME_CONTENTION_MONITOR_H_
#define HALTPOOL_RUNTIME_CONTENTION_MONITOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "arch/contention_signals.h"
#include "arch/proc_stat.h"
#include "idle/governor.h"
#include "idle/poll_backoff.h"

namespace haltpool {

// A snapshot for the statistics.
struct BackoffStats {
  bool enabled = false;
  int level = 0;  // 0: polling as the governor says; kMaxLevel: no polling.
  uint64_t samples = 0;
  uint64_t backed_off = 0;
  uint64_t recovered = 0;
  // Samples that showed contention, by the rule that said so
  // (idle/poll_backoff.h): steal, a poller preempted, others runnable.
  uint64_t contended_steal = 0;
  uint64_t contended_preempted = 0;
  uint64_t contended_runnable = 0;
  idle::ContentionSample last;
  // The cap on each poll now: kUnlimitedPollNs (none), 0 (no polling).
  int64_t poll_cap_ns = idle::kUnlimitedPollNs;
};

// "level 2 of 4 (poll cap now 12500 ns); 57 samples, backed off 3 times,
// recovered 1 times; contended: steal 0, preempted 3, runnable 0; last: CPU
// wait 0.4%, steal 0.0%, 1 other runnable, 0 us preempted on 2 CPUs", or
// "off". A reading the last
// sample lacked is "-".
std::string FormatBackoff(const BackoffStats& stats);

// What a worker keeps for the monitor between its calls.
struct ContentionMark {
  // The worker's own schedstat, opened by the worker (AttachWorker).
  std::optional<arch::ProcFile> schedstat;
  int64_t run_delay_ns = 0;  // Its run delay when it took a sample.
  bool measuring = false;    // It took one; its next poll is measured.
};

class ContentionMonitor {
 public:
  // 10 ms: steal moves in USER_HZ ticks of 10 ms and CPU pressure is kept
  // to the microsecond but averaged by the kernel over 2 s, so a shorter
  // interval adds cost, not information.
  static constexpr int64_t kSampleIntervalNs = 10000000;
  // Steal is read every 10th sample (100 ms, ten ticks): /proc/stat costs
  // 10 us on a 2-vCPU KVM guest (the micro_contention benchmark), and steal
  // that matters lasts longer than a CFS period anyway.
  static constexpr int kStealEvery = 10;

  // Machine readings, or what `probe` returns instead (for tests and for
  // programs that know better; it stands in for every machine reading,
  // and its now_ns, own_awake and submitters are filled in). Backing off
  // shrinks `governor_cap_ns`, the governor's own poll cap. Disabled: never
  // samples and never limits polling.
  ContentionMonitor(bool enabled, int64_t usable_cpus, int64_t governor_cap_ns,
                    std::function<idle::ContentionSample()> probe);

  ContentionMonitor(const ContentionMonitor&) = delete;
  ContentionMonitor& operator=(const ContentionMonitor&) = delete;

  // Called by each worker on its own thread before it runs tasks: opens its
  // /proc/thread-self/schedstat into `mark` if the monitor reads the
  // machine (enabled, no probe), so its descriptor exists from the pool's
  // start. Setup, not a hot path.
  void AttachWorker(ContentionMark& mark);

  // Called by a worker about to idle, before it announces itself. If a
  // sample is due and no other worker is taking it, takes it: `own_awake`
  // is how many of the pool's workers are not asleep, the caller included
  // (IdleWorkers::num_awake); `mark`
  // starts measuring this worker's next poll (AfterIdle). Otherwise returns
  // at once: one atomic load. The sample reads /proc/loadavg,
  // /proc/pressure/cpu and the worker's schedstat through descriptors kept
  // open (one pread each, a few us), and /proc/stat every kStealEvery-th
  // time (10 us). Allocates nothing. Any worker thread, always with its own
  // `mark`.
  void MaybeSample(int64_t now_ns, int own_awake,
                   ContentionMark& mark) noexcept;

  // Called on each submission from a thread outside the pool: counts the
  // thread once per sample interval as one of the pool's submitters, whose
  // running is no contention. One relaxed load and a thread-local compare;
  // an atomic add the first time in an interval. Any thread.
  void NoteSubmitter() noexcept;

  // Called by a worker after its park, if mark.measuring: with `polled`,
  // counts its run delay since MaybeSample as time preempted while
  // polling, for the next sample. One pread, once per sample interval.
  void AfterIdle(ContentionMark& mark, bool polled) noexcept;

  // The cap for each poll now (kUnlimitedPollNs: none; 0: do not poll).
  // Two relaxed atomic loads. Any thread.
  int64_t PollCapNs() const noexcept;

  // Backing off now shrinks `governor_cap_ns` (the poll cap changed at run
  // time). Relaxed: a park that read the old cap uses it once. Any thread.
  void SetGovernorCapNs(int64_t governor_cap_ns) noexcept {
    governor_cap_ns_.store(governor_cap_ns, std::memory_order_relaxed);
  }

  BackoffStats Stats() const;

 private:
  idle::ContentionSample Read(int64_t now_ns) noexcept;

  const bool enabled_;
  const int64_t usable_cpus_;
  std::atomic<int64_t> governor_cap_ns_;
  const std::function<idle::ContentionSample()> probe_;
  std::atomic<int64_t> next_sample_ns_{0};
  std::atomic<int> level_{0};
  std::atomic<int64_t> preempted_ns_{0};  // Since the last sample.
  // Sample intervals so far, and the outside threads that submitted in
  // this one (each counted once: it keeps the interval it was counted in).
  std::atomic<uint64_t> interval_{1};
  std::atomic<int64_t> submitters_{0};
  mutable std::mutex mu_;  // Guards what follows; the sampler holds it.
  idle::PollBackoff backoff_;
  arch::ProcFile pressure_{arch::kProcPressureCpu};
  arch::ProcFile loadavg_{arch::kProcLoadavg};
  std::optional<int64_t> last_wait_us_;
  int64_t last_wait_ns_ = 0;  // When last_wait_us_ was read.
  int samples_to_steal_ = 0;  // Samples left before the next steal reading.
  std::optional<arch::CpuTimes> last_cpu_;  // The previous steal reading.
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_CONTENTION_MONITOR_H_
