#include "bench/wake_harness.h"

#include <time.h>

#include <algorithm>
#include <thread>

#include "arch/cpu_wait.h"
#include "arch/cycle_clock.h"
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

void WaitUntil(int64_t t) {
  const int64_t left = t - arch::MonotonicNowNs();
  if (left > kSpinGapNs) {
    const int64_t wake = t - kSleepMarginNs;
    timespec ts{static_cast<time_t>(wake / 1000000000),
                static_cast<long>(wake % 1000000000)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
  }
  while (arch::MonotonicNowNs() < t) arch::CpuRelax();
}

// Timed sleeps of the waiting-out threads end as close to time as the
// kernel allows (the default slack is 50 us). Failure only costs accuracy.
void TightenTimerSlack() { (void)arch::SetThreadTimerSlackNs(1); }

// Waits until `counter` reaches `target`: spins kDoneSpinNs, then sleeps.
void AwaitCount(std::atomic<uint32_t>& counter, uint32_t target) {
  const int64_t spin_until = arch::MonotonicNowNs() + kDoneSpinNs;
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

int SamplesFor(int64_t gap_ns, int64_t point_ms, int min_samples,
               int max_samples) {
  const int64_t n = point_ms * 1000000 / (gap_ns + kWakeCostNs);
  return static_cast<int>(
      std::clamp<int64_t>(n, min_samples, std::max(min_samples, max_samples)));
}

WakePoint Summarize(int64_t gap_ns, std::vector<int64_t>& latencies_ns,
                    int64_t cpu_ns, int64_t wall_ns) {
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
  p.cpu = wall_ns > 0 ? static_cast<double>(std::max<int64_t>(cpu_ns, 0)) /
                            static_cast<double>(wall_ns)
                      : 0;
  return p;
}

PairRun::PairRun(int64_t gap_ns, int samples)
    : gap_ns_(gap_ns),
      samples_(samples),
      signal_ns_(static_cast<size_t>(samples + kWarmupWakes)),
      wake_ns_(static_cast<size_t>(samples + kWarmupWakes)) {}

void PairRun::WakerSide(WakeChannel& channel) {
  TightenTimerSlack();
  int64_t next = arch::MonotonicNowNs();
  for (int i = 0; i < samples_ + kWarmupWakes; ++i) {
    WaitUntil(next);
    signal_ns_[i] = arch::MonotonicNowNs();
    channel.Signal();
    AwaitCount(reported_, static_cast<uint32_t>(i + 1));
    next = wake_ns_[i] + gap_ns_;
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
  return Summarize(gap_ns_, latencies, waiter_cpu_ns_, waiter_wall_ns_);
}

WakePoint MeasurePair(WakeChannel& channel, int64_t gap_ns, int samples) {
  PairRun run(gap_ns, samples);
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

WakePoint MeasurePool(const SubmitFn& submit, int64_t gap_ns, int samples) {
  TightenTimerSlack();
  std::vector<int64_t> latencies(static_cast<size_t>(samples + kWarmupWakes));
  // Outlives the call: the last probe may still be in notify_one() on it
  // when the count it wrote lets this function return.
  static thread_local std::atomic<uint32_t> done;
  done.store(0, std::memory_order_relaxed);
  int64_t cpu0 = 0, self0 = 0, wall0 = 0;
  int64_t next = arch::MonotonicNowNs();
  for (int i = 0; i < samples + kWarmupWakes; ++i) {
    if (i == kWarmupWakes) {
      cpu0 = CpuNs(CLOCK_PROCESS_CPUTIME_ID);
      self0 = CpuNs(CLOCK_THREAD_CPUTIME_ID);
      wall0 = arch::MonotonicNowNs();
    }
    WaitUntil(next);
    const int64_t t0 = arch::MonotonicNowNs();
    latencies[i] = t0;
    submit(Probe{&latencies[i], &done});
    // One at a time: the next submission waits for this task to have run,
    // and the gap counts from when it ran.
    AwaitCount(done, static_cast<uint32_t>(i + 1));
    next = t0 + latencies[i] + gap_ns;
  }
  const int64_t wall = arch::MonotonicNowNs() - wall0;
  const int64_t pool_cpu = (CpuNs(CLOCK_PROCESS_CPUTIME_ID) - cpu0) -
                           (CpuNs(CLOCK_THREAD_CPUTIME_ID) - self0);
  latencies.erase(latencies.begin(), latencies.begin() + kWarmupWakes);
  return Summarize(gap_ns, latencies, pool_cpu, wall);
}

}  // namespace haltpool::bench
