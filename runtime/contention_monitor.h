// The pool's view of CPU contention: samples steal time, runnable threads
// and a worker's involuntary switches every kSampleIntervalNs (one worker
// samples, the others go on), feeds them to idle::PollBackoff, and gives
// every worker's park the resulting poll cap.

#ifndef HALTPOOL_RUNTIME_CONTENTION_MONITOR_H_
#define HALTPOOL_RUNTIME_CONTENTION_MONITOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

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
  idle::ContentionSample last;
  // The cap on each poll now: kUnlimitedPollNs (none), 0 (no polling).
  int64_t poll_cap_ns = idle::kUnlimitedPollNs;
};

// "level 2 of 4 (poll cap now 12500 ns); 57 samples, backed off 3 times,
// recovered 1 times; last: steal 0.0%, 3 runnable on 2 CPUs, 0 preempted",
// or "off".
std::string FormatBackoff(const BackoffStats& stats);

class ContentionMonitor {
 public:
  // 10 ms: steal and procs_running move in USER_HZ ticks of 10 ms, so a
  // shorter interval reads the same numbers twice; one /proc/stat read and
  // one getrusage per interval cost microseconds per 10 ms.
  static constexpr int64_t kSampleIntervalNs = 10000000;

  // Machine readings, or what `probe` returns instead (for tests and for
  // programs that know better; its now_ns is filled in). Backing off
  // shrinks `governor_cap_ns`, the governor's own poll cap. Disabled: never
  // samples and never limits polling.
  ContentionMonitor(bool enabled, int64_t usable_cpus, int64_t governor_cap_ns,
                    std::function<idle::ContentionSample()> probe);

  // Called by a worker about to idle. If a sample is due and no other
  // worker is taking it, takes it: `pollers` is how many workers poll now,
  // `nivcsw_mark` the worker's involuntary switches at its last sample
  // (updated), `polled` whether it polled since (reset). Otherwise returns
  // at once: one atomic load. The sample itself reads /proc/stat into a
  // fixed buffer (12-14 us on a 2-vCPU KVM guest, no allocation) and calls
  // getrusage. Any thread.
  void MaybeSample(int64_t now_ns, int pollers, int64_t& nivcsw_mark,
                   bool& polled);

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
  idle::ContentionSample Read(int pollers, int64_t preempted);

  const bool enabled_;
  const int64_t usable_cpus_;
  std::atomic<int64_t> governor_cap_ns_;
  const std::function<idle::ContentionSample()> probe_;
  std::atomic<int64_t> next_sample_ns_{0};
  std::atomic<int> level_{0};
  mutable std::mutex mu_;  // Guards what follows; the sampler holds it.
  idle::PollBackoff backoff_;
  std::optional<arch::CpuTimes> last_;  // The previous reading.
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_CONTENTION_MONITOR_H_
