#include "bench/wake_harness.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "arch/cpu_wait.h"
#include "arch/cycle_clock.h"
#include "arch/thread_affinity.h"
#include "arch/timer_slack.h"

namespace haltpool::bench {
namespace {

// What one wake costs besides the gap, for sizing a point: a blocked wake
// and its report take about 25 us on a 2-vCPU KVM guest (README.md,
// "Hypervisors and profiles": block wake 26 us).
constexpr int64_t kWakeCostNs = 25000;

int64_t CpuNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void SleepUntil(int64_t t) {
  const timespec ts{static_cast<time_t>(t / 1000000000),
                    static_cast<long>(t % 1000000000)};
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
}

// Waits until monotonic time `t` as `submitter` says (wake_harness.h).
void WaitUntil(int64_t t, Submitter submitter) {
  const int64_t left = t - arch::MonotonicNowNs();
  if (submitter == Submitter::kSleep) {
    if (left > kSleepMarginNs) SleepUntil(t - kSleepMarginNs);
  } else if (left > kSpinGapNs) {
    SleepUntil(t - kSpinSleepMarginNs);
  }
  while (arch::MonotonicNowNs() < t) arch::CpuRelax();
}

// Timed sleeps of the waiting-out threads end as close to time as the
// kernel allows (the default slack is 50 us). Failure only costs accuracy.
void TightenTimerSlack() { (void)arch::SetThreadTimerSlackNs(1); }

// Waits until `counter` reaches `target`: Submitter::kSpin spins
// kDoneSpinNs first; then it sleeps.
void AwaitCount(std::atomic<uint32_t>& counter, uint32_t target,
                Submitter submitter) {
  const int64_t spin_until =
      submitter == Submitter::kSpin ? arch::MonotonicNowNs() + kDoneSpinNs : 0;
  uint32_t seen = counter.load(std::memory_order_acquire);
  while (seen < target && arch::MonotonicNowNs() < spin_until) {
    arch::CpuRelax();
    seen = counter.load(std::memory_order_acquire);
  }
  while (seen < target) {
    counter.wait(seen, std::memory_order_acquire);
    seen = counter.load(std::memory_order_acquire);
  }
}

void Report(std::atomic<uint32_t>& counter) {
  counter.fetch_add(1, std::memory_order_release);
  counter.notify_one();
}

}  // namespace

std::string ArrivalsName(Arrivals arrivals) {
  switch (arrivals) {
    case Arrivals::kPeriodic:
      return "periodic";
    case Arrivals::kPoisson:
      return "poisson";
    case Arrivals::kBursty:
      return "bursty";
  }
  return "?";
}

bool ParseArrivals(absl::string_view text, Arrivals* arrivals) {
  for (Arrivals a :
       {Arrivals::kPeriodic, Arrivals::kPoisson, Arrivals::kBursty}) {
    if (text == ArrivalsName(a)) {
      *arrivals = a;
      return true;
    }
  }
  return false;
}

std::string SweepGapsList() {
  std::string out;
  for (int64_t gap : kSweepGapsNs) {
    absl::StrAppend(&out, out.empty() ? "" : ",",
                    absl::FormatDuration(absl::Nanoseconds(gap)));
  }
  return out;
}

bool ParseGaps(absl::string_view text, std::vector<int64_t>* gaps_ns,
               std::string* error) {
  constexpr int64_t kLongestGapNs = 10'000'000'000;
  std::vector<int64_t> gaps;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    absl::Duration d;
    if (!absl::ParseDuration(item, &d) || d < absl::ZeroDuration() ||
        absl::ToInt64Nanoseconds(d) > kLongestGapNs) {
      *error = absl::StrCat("'", item,
                            "': accepted: a duration from 0 to 10s such as "
                            "0, 50us or 1ms, comma-separated");
      return false;
    }
    const int64_t ns = absl::ToInt64Nanoseconds(d);
    if (!gaps.empty() && ns <= gaps.back()) {
      *error = absl::StrCat("'", item,
                            "': accepted: gaps in ascending order, each once");
      return false;
    }
    gaps.push_back(ns);
  }
  *gaps_ns = std::move(gaps);
  return true;
}

std::string SubmitterName(Submitter submitter) {
  return submitter == Submitter::kSleep ? "sleep" : "spin";
}

bool ParseSubmitter(absl::string_view text, Submitter* submitter) {
  for (Submitter s : {Submitter::kSleep, Submitter::kSpin}) {
    if (text == SubmitterName(s)) {
      *submitter = s;
      return true;
    }
  }
  return false;
}

ArrivalSchedule::ArrivalSchedule(Arrivals arrivals, int64_t gap_ns,
                                 uint64_t seed)
    : arrivals_(arrivals), gap_ns_(gap_ns), state_(seed) {}

ArrivalSchedule::Step ArrivalSchedule::Next() {
  const int64_t i = index_++;
  switch (arrivals_) {
    case Arrivals::kPeriodic:
      return {gap_ns_, false};
    case Arrivals::kPoisson: {
      // splitmix64 (Steele, Lea, Flood 2014): specified to the bit, unlike
      // the standard library's distributions, so a seed gives the same
      // gaps everywhere. The top 53 bits make u in [0, 1).
      uint64_t z = (state_ += 0x9e3779b97f4a7c15u);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
      z ^= z >> 31;
      const double u = static_cast<double>(z >> 11) * 0x1.0p-53;
      return {
          static_cast<int64_t>(-static_cast<double>(gap_ns_) * std::log1p(-u)),
          false};
    }
    case Arrivals::kBursty:
      if (i % kBurstSize == 0) return {gap_ns_, false};
      return {kBurstSpacingNs, true};
  }
  return {gap_ns_, false};
}

int64_t MeanSpacingNs(Arrivals arrivals, int64_t gap_ns) {
  if (arrivals != Arrivals::kBursty) return gap_ns;
  return (gap_ns + (kBurstSize - 1) * kBurstSpacingNs) / kBurstSize;
}

int SamplesFor(int64_t gap_ns, int64_t point_ms, int min_samples,
               int max_samples) {
  const int64_t n = point_ms * 1000000 / (gap_ns + kWakeCostNs);
  return static_cast<int>(
      std::clamp<int64_t>(n, min_samples, std::max(min_samples, max_samples)));
}

WakePoint Summarize(int64_t gap_ns, std::vector<int64_t>& latencies_ns,
                    const std::vector<int64_t>& late_ns, int64_t cpu_ns,
                    int64_t wall_ns) {
  WakePoint p;
  p.gap_ns = gap_ns;
  p.samples = static_cast<int>(latencies_ns.size());
  if (latencies_ns.empty()) return p;
  std::sort(latencies_ns.begin(), latencies_ns.end());
  double sum = 0;
  for (int64_t l : latencies_ns) sum += static_cast<double>(l);
  const size_t n = latencies_ns.size();
  p.mean_us = sum / static_cast<double>(n) / 1e3;
  p.p50_us = static_cast<double>(latencies_ns[n / 2]) / 1e3;
  p.p99_us =
      static_cast<double>(latencies_ns[std::min(n - 1, n * 99 / 100)]) / 1e3;
  double late = 0;
  for (int64_t l : late_ns) late += static_cast<double>(l);
  p.submit_late_us =
      late_ns.empty() ? 0 : late / static_cast<double>(late_ns.size()) / 1e3;
  p.cpu = wall_ns > 0 ? static_cast<double>(std::max<int64_t>(cpu_ns, 0)) /
                            static_cast<double>(wall_ns)
                      : 0;
  return p;
}

PairRun::PairRun(int64_t gap_ns, int samples, const Pacing& pacing)
    : gap_ns_(gap_ns),
      samples_(samples),
      pacing_(pacing),
      signal_ns_(static_cast<size_t>(samples + kWarmupWakes)),
      late_ns_(static_cast<size_t>(samples + kWarmupWakes)),
      wake_ns_(static_cast<size_t>(samples + kWarmupWakes)) {}

void PairRun::WakerSide(WakeChannel& channel) {
  TightenTimerSlack();
  ArrivalSchedule schedule(pacing_.arrivals, gap_ns_, pacing_.seed);
  schedule.Next();  // Wake 0 comes now.
  int64_t next = arch::MonotonicNowNs();
  for (int i = 0; i < samples_ + kWarmupWakes; ++i) {
    WaitUntil(next, pacing_.submitter);
    signal_ns_[i] = arch::MonotonicNowNs();
    late_ns_[i] = signal_ns_[i] - next;
    channel.Signal();
    AwaitCount(reported_, static_cast<uint32_t>(i + 1), pacing_.submitter);
    const ArrivalSchedule::Step step = schedule.Next();
    next = (step.in_burst ? signal_ns_[i] : wake_ns_[i]) + step.wait_ns;
  }
}

void PairRun::WaiterSide(WakeChannel& channel) {
  int64_t cpu0 = 0;
  int64_t wall0 = 0;
  for (int i = 0; i < samples_ + kWarmupWakes; ++i) {
    if (i == kWarmupWakes) {
      cpu0 = CpuNs(CLOCK_THREAD_CPUTIME_ID);
      wall0 = arch::MonotonicNowNs();
    }
    channel.Wait();
    wake_ns_[i] = arch::MonotonicNowNs();
    Report(reported_);
  }
  waiter_wall_ns_ = arch::MonotonicNowNs() - wall0;
  waiter_cpu_ns_ = CpuNs(CLOCK_THREAD_CPUTIME_ID) - cpu0;
}

WakePoint PairRun::Result() {
  std::vector<int64_t> latencies(static_cast<size_t>(samples_));
  for (int i = 0; i < samples_; ++i) {
    latencies[i] = wake_ns_[i + kWarmupWakes] - signal_ns_[i + kWarmupWakes];
  }
  const std::vector<int64_t> late(late_ns_.begin() + kWarmupWakes,
                                  late_ns_.end());
  return Summarize(gap_ns_, latencies, late, waiter_cpu_ns_, waiter_wall_ns_);
}

WakePoint MeasurePair(WakeChannel& channel, int64_t gap_ns, int samples,
                      const Pacing& pacing) {
  PairRun run(gap_ns, samples, pacing);
  std::thread waiter([&] { run.WaiterSide(channel); });
  std::thread waker([&] { run.WakerSide(channel); });
  waker.join();
  waiter.join();
  return run.Result();
}

void Probe::operator()() const noexcept {
  *slot = arch::MonotonicNowNs() - *slot;
  Report(*done);
}

std::string CheckSubmitterCpu(int cpu) {
  if (cpu == -1) return "";
  const std::vector<int> allowed = arch::ThreadCpus();
  if (!std::binary_search(allowed.begin(), allowed.end(), cpu)) {
    return absl::StrCat("CPU ", cpu, " is not one this process may run on");
  }
  return "";
}

WakePoint MeasurePool(const SubmitFn& submit, int64_t gap_ns, int samples,
                      const Pacing& pacing) {
  const arch::ScopedThreadCpu on_cpu(pacing.submitter_cpu);
  TightenTimerSlack();
  const int total = samples + kWarmupWakes;
  std::vector<int64_t> latencies(static_cast<size_t>(total));
  // A probe replaces its latencies[] slot, the submit time, by its latency.
  std::vector<int64_t> submitted(static_cast<size_t>(total));
  std::vector<int64_t> late(static_cast<size_t>(total));
  // Outlives the call: the last probe may still be in notify_one() on it
  // when the count it wrote lets this function return.
  static thread_local std::atomic<uint32_t> done;
  done.store(0, std::memory_order_relaxed);
  ArrivalSchedule schedule(pacing.arrivals, gap_ns, pacing.seed);
  schedule.Next();  // Probe 0 goes now.
  int64_t cpu0 = 0, self0 = 0, wall0 = 0;
  int64_t next = arch::MonotonicNowNs();
  // Probes [first_pending, i) are submitted and maybe not yet run.
  int first_pending = 0;
  for (int i = 0; i < total; ++i) {
    if (i == kWarmupWakes) {
      cpu0 = CpuNs(CLOCK_PROCESS_CPUTIME_ID);
      self0 = CpuNs(CLOCK_THREAD_CPUTIME_ID);
      wall0 = arch::MonotonicNowNs();
    }
    WaitUntil(next, pacing.submitter);
    submitted[i] = arch::MonotonicNowNs();
    late[i] = submitted[i] - next;
    latencies[i] = submitted[i];
    submit(Probe{&latencies[i], &done});
    const ArrivalSchedule::Step step = schedule.Next();
    if (step.in_burst && i + 1 < total) {
      // The next probe of the burst does not wait for this one to run.
      next = submitted[i] + step.wait_ns;
      continue;
    }
    // The gap counts from when the last pending probe ran.
    AwaitCount(done, static_cast<uint32_t>(i + 1), pacing.submitter);
    int64_t ran = 0;
    for (int k = first_pending; k <= i; ++k) {
      ran = std::max(ran, submitted[k] + latencies[k]);
    }
    first_pending = i + 1;
    next = ran + step.wait_ns;
  }
  const int64_t wall = arch::MonotonicNowNs() - wall0;
  const int64_t pool_cpu = (CpuNs(CLOCK_PROCESS_CPUTIME_ID) - cpu0) -
                           (CpuNs(CLOCK_THREAD_CPUTIME_ID) - self0);
  latencies.erase(latencies.begin(), latencies.begin() + kWarmupWakes);
  late.erase(late.begin(), late.begin() + kWarmupWakes);
  return Summarize(gap_ns, latencies, late, pool_cpu, wall);
}

}  // namespace haltpool::bench
