#include "runtime/contention_monitor.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "arch/contention_signals.h"
#include "arch/proc_stat.h"

namespace haltpool {

std::string FormatBackoff(const BackoffStats& s) {
  if (!s.enabled) return "off";
  const std::string cap = s.poll_cap_ns == idle::kUnlimitedPollNs ? "none"
                          : s.poll_cap_ns == 0
                              ? "0, no polling"
                              : absl::StrFormat("%d ns", s.poll_cap_ns);
  return absl::StrFormat(
      "level %d of %d (poll cap now %s); %u samples, backed off %u times, "
      "recovered %u times; last: steal %.1f%%, %d runnable on %d CPUs, %d "
      "preempted",
      s.level, idle::PollBackoff::kMaxLevel, cap, s.samples, s.backed_off,
      s.recovered, 100 * s.last.steal_fraction, s.last.runnable,
      s.last.usable_cpus, s.last.preempted);
}

ContentionMonitor::ContentionMonitor(
    bool enabled, int64_t usable_cpus, int64_t governor_cap_ns,
    std::function<idle::ContentionSample()> probe)
    : enabled_(enabled),
      usable_cpus_(usable_cpus),
      governor_cap_ns_(governor_cap_ns),
      probe_(std::move(probe)) {}

idle::ContentionSample ContentionMonitor::Read(int pollers, int64_t preempted) {
  if (probe_) return probe_();
  idle::ContentionSample s;
  s.usable_cpus = usable_cpus_;
  s.preempted = preempted;
  // One read of /proc/stat gives both steal and procs_running, into a fixed
  // buffer: the sampler is a worker about to idle, a path that allocates
  // nothing. Unreadable (a sandbox without /proc) or without procs_running:
  // no signal from it, polling goes on.
  arch::ProcStat now;
  if (!arch::ReadProcStatNoAlloc(now) || !now.procs_running) return s;
  if (last_) s.steal_fraction = arch::StealFraction(*last_, now.cpu);
  last_ = now.cpu;
  s.runnable = std::max<int64_t>(0, *now.procs_running - pollers);
  return s;
}

void ContentionMonitor::MaybeSample(int64_t now_ns, int pollers,
                                    int64_t& nivcsw_mark, bool& polled) {
  if (!enabled_) return;
  int64_t due = next_sample_ns_.load(std::memory_order_relaxed);
  if (now_ns < due) return;
  if (!next_sample_ns_.compare_exchange_strong(due, now_ns + kSampleIntervalNs,
                                               std::memory_order_relaxed)) {
    return;  // Another worker took this sample.
  }
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  const int64_t nivcsw = arch::ThreadInvoluntarySwitches();
  const int64_t preempted = polled ? nivcsw - nivcsw_mark : 0;
  nivcsw_mark = nivcsw;
  polled = false;
  idle::ContentionSample sample = Read(pollers, preempted);
  sample.now_ns = now_ns;
  backoff_.Update(sample);
  level_.store(backoff_.level(), std::memory_order_relaxed);
}

int64_t ContentionMonitor::PollCapNs() const noexcept {
  return idle::PollBackoff::CapAtLevel(
      level_.load(std::memory_order_relaxed),
      governor_cap_ns_.load(std::memory_order_relaxed));
}

BackoffStats ContentionMonitor::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  BackoffStats s;
  s.enabled = enabled_;
  s.level = backoff_.level();
  s.samples = backoff_.samples();
  s.backed_off = backoff_.backed_off();
  s.recovered = backoff_.recovered();
  s.last = backoff_.last();
  s.poll_cap_ns = idle::PollBackoff::CapAtLevel(
      s.level, governor_cap_ns_.load(std::memory_order_relaxed));
  return s;
}

}  // namespace haltpool
