#include "runtime/contention_monitor.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/contention_signals.h"
#include "arch/proc_stat.h"

namespace haltpool {

namespace {

// The monitor and interval a thread was last counted as a submitter in.
thread_local const ContentionMonitor* tls_counted_by = nullptr;
thread_local uint64_t tls_counted_in = 0;

std::string Percent(const std::optional<double>& fraction) {
  return fraction ? absl::StrFormat("%.1f%%", 100 * *fraction) : "-";
}

}  // namespace

std::string FormatBackoff(const BackoffStats& s) {
  if (!s.enabled) return "off";
  const std::string cap = s.poll_cap_ns == idle::kUnlimitedPollNs ? "none"
                          : s.poll_cap_ns == 0
                              ? "0, no polling"
                              : absl::StrFormat("%d ns", s.poll_cap_ns);
  const std::optional<int64_t> others =
      idle::PollBackoff::RunnableOthers(s.last);
  return absl::StrFormat(
      "level %d of %d (poll cap now %s); %u samples, backed off %u times, "
      "recovered %u times; contended: steal %u, preempted %u, runnable %u; "
      "last: CPU wait %s, steal %s, %s other runnable, %d us preempted on "
      "%d CPUs",
      s.level, idle::PollBackoff::kMaxLevel, cap, s.samples, s.backed_off,
      s.recovered, s.contended_steal, s.contended_preempted,
      s.contended_runnable, Percent(s.last.cpu_wait_fraction),
      Percent(s.last.steal_fraction),
      others ? absl::StrCat(*others) : std::string("-"),
      s.last.preempted_ns / 1000, s.last.usable_cpus);
}

ContentionMonitor::ContentionMonitor(
    bool enabled, int64_t usable_cpus, int64_t governor_cap_ns,
    std::function<idle::ContentionSample()> probe)
    : enabled_(enabled),
      usable_cpus_(usable_cpus),
      governor_cap_ns_(governor_cap_ns),
      probe_(std::move(probe)) {}

idle::ContentionSample ContentionMonitor::Read(int64_t now_ns) noexcept {
  if (probe_) return probe_();
  idle::ContentionSample s;
  s.usable_cpus = usable_cpus_;
  // Both kept open, one pread each. Either unreadable (a sandbox without
  // /proc, a kernel without pressure information): no signal from it.
  s.runnable = arch::ReadLoadavgRunning(loadavg_);
  if (const std::optional<int64_t> wait_us =
          arch::ReadCpuPressureSomeUs(pressure_)) {
    if (last_wait_us_ && now_ns > last_wait_ns_ && *wait_us >= *last_wait_us_) {
      s.cpu_wait_fraction = std::min(
          1.0, 1000.0 * static_cast<double>(*wait_us - *last_wait_us_) /
                   static_cast<double>(now_ns - last_wait_ns_));
    }
    last_wait_us_ = wait_us;
    last_wait_ns_ = now_ns;
  }
  // Steal every kStealEvery-th sample, over the span since the last one.
  if (--samples_to_steal_ <= 0) {
    samples_to_steal_ = kStealEvery;
    arch::ProcStat now;
    if (arch::ReadProcStatNoAlloc(now)) {
      if (last_cpu_)
        s.steal_fraction = arch::StealFraction(*last_cpu_, now.cpu);
      last_cpu_ = now.cpu;
    }
  }
  return s;
}

void ContentionMonitor::NoteSubmitter() noexcept {
  if (!enabled_) return;
  const uint64_t interval = interval_.load(std::memory_order_relaxed);
  if (tls_counted_by == this && tls_counted_in == interval) return;
  tls_counted_by = this;
  tls_counted_in = interval;
  submitters_.fetch_add(1, std::memory_order_relaxed);
}

void ContentionMonitor::MaybeSample(int64_t now_ns, int own_awake,
                                    ContentionMark& mark) noexcept {
  if (!enabled_) return;
  int64_t due = next_sample_ns_.load(std::memory_order_relaxed);
  if (now_ns < due) return;
  if (!next_sample_ns_.compare_exchange_strong(due, now_ns + kSampleIntervalNs,
                                               std::memory_order_relaxed)) {
    return;  // Another worker took this sample.
  }
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  idle::ContentionSample sample = Read(now_ns);
  sample.now_ns = now_ns;
  sample.own_awake = own_awake;
  // A submitter counted just before the exchange lands in the next
  // interval's count as well: counted twice at most, and only then.
  sample.submitters = submitters_.exchange(0, std::memory_order_relaxed);
  interval_.fetch_add(1, std::memory_order_relaxed);
  // The probe stands in for every machine reading, this one included.
  const int64_t preempted_ns =
      preempted_ns_.exchange(0, std::memory_order_relaxed);
  if (!probe_) sample.preempted_ns = preempted_ns;
  backoff_.Update(sample);
  level_.store(backoff_.level(), std::memory_order_relaxed);
  if (probe_) {
    mark.measuring = true;
    return;
  }
  if (!mark.schedstat) return;
  const std::optional<int64_t> run_delay_ns =
      arch::ReadRunDelayNs(*mark.schedstat);
  mark.measuring = run_delay_ns.has_value();
  if (run_delay_ns) mark.run_delay_ns = *run_delay_ns;
}

void ContentionMonitor::AttachWorker(ContentionMark& mark) {
  // Opened by the worker itself: thread-self is the opening thread.
  if (enabled_ && !probe_) mark.schedstat.emplace(arch::kProcThreadSchedstat);
}

void ContentionMonitor::AfterIdle(ContentionMark& mark, bool polled) noexcept {
  mark.measuring = false;
  if (!polled || !mark.schedstat) return;
  const std::optional<int64_t> run_delay_ns =
      arch::ReadRunDelayNs(*mark.schedstat);
  if (run_delay_ns && *run_delay_ns > mark.run_delay_ns) {
    preempted_ns_.fetch_add(*run_delay_ns - mark.run_delay_ns,
                            std::memory_order_relaxed);
  }
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
  using Cause = idle::PollBackoff::Cause;
  s.contended_steal = backoff_.contended(Cause::kSteal);
  s.contended_preempted = backoff_.contended(Cause::kPreempted);
  s.contended_runnable = backoff_.contended(Cause::kRunnable);
  s.last = backoff_.last();
  s.poll_cap_ns = idle::PollBackoff::CapAtLevel(
      s.level, governor_cap_ns_.load(std::memory_order_relaxed));
  return s;
}

}  // namespace haltpool
