// bench/host_noise: the two limits of this host that no idle policy can
// beat, measured without the pool.
//
//  1. Timer lateness: how late a timed sleep ends (clock_nanosleep to an
//     absolute time, 1 ns of timer slack), for each sleep length. A wake
//     ahead of a predicted arrival must start at least this early, so a
//     poll across it costs that much per arrival.
//  2. Stalls: one thread per online CPU, pinned, reads the clock in a loop;
//     every gap between two reads longer than kStallNs is time the CPU was
//     taken away (an interrupt, a VM exit, the host running something
//     else; on a busy machine, other threads of the guest too). A wake
//     that lands in a stall is late by it, whoever waits.
//
// Usage: host_noise [--sleeps=50us,400us,1ms] [--samples=400] [--seconds=5]
// Prints two Markdown tables; exits 2 on a bad flag.

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "arch/cycle_clock.h"
#include "arch/thread_affinity.h"
#include "arch/timer_slack.h"
#include "bench/command_line.h"

using Samples = haltpool::bench::IntIn<10, 100000>;
using Seconds = haltpool::bench::IntIn<1, 600>;

ABSL_FLAG(std::string, sleeps, "50us,400us,1ms",
          "timed sleep lengths to measure, comma-separated (1us to 1s)");
ABSL_FLAG(Samples, samples, 400, "sleeps per length");
ABSL_FLAG(Seconds, seconds, 5, "how long each CPU's thread looks for stalls");

namespace haltpool::bench {
namespace {

// A gap between two clock reads longer than this is a stall: a clock read
// takes tens of ns, and the shortest interrupt seen on a 2-vCPU KVM guest
// took over 20 us with its VM exit (docs/BENCHMARKS.md, "The host").
constexpr int64_t kStallNs = 20000;

int64_t Percentile(std::vector<int64_t>& v, double p) {
  const size_t rank = std::min(
      v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(rank),
                   v.end());
  return v[rank];
}

std::string Us(int64_t ns) { return absl::StrFormat("%.1f", ns / 1000.0); }

void SleepUntil(int64_t t) {
  const timespec ts{static_cast<time_t>(t / 1000000000),
                    static_cast<long>(t % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

void PrintTimerLateness(const std::vector<int64_t>& sleeps_ns, int samples) {
  (void)arch::SetThreadTimerSlackNs(1);
  absl::PrintF(
      "| sleep | p10 us | p50 us | p90 us | p99 us | max us |\n"
      "| ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (int64_t sleep_ns : sleeps_ns) {
    std::vector<int64_t> late;
    late.reserve(samples);
    for (int i = 0; i < samples; ++i) {
      const int64_t due = arch::MonotonicNowNs() + sleep_ns;
      SleepUntil(due);
      late.push_back(arch::MonotonicNowNs() - due);
    }
    const int64_t max = *std::max_element(late.begin(), late.end());
    const std::string p10 = Us(Percentile(late, 0.10));
    const std::string p50 = Us(Percentile(late, 0.50));
    const std::string p90 = Us(Percentile(late, 0.90));
    const std::string p99 = Us(Percentile(late, 0.99));
    absl::PrintF("| %s | %s | %s | %s | %s | %s |\n",
                 absl::FormatDuration(absl::Nanoseconds(sleep_ns)), p10, p50,
                 p90, p99, Us(max));
  }
}

struct Stalls {
  int64_t over_20us = 0, over_100us = 0, over_1ms = 0;
  int64_t max_ns = 0, lost_ns = 0;
  bool pinned = false;
};

Stalls WatchCpu(int cpu, int64_t seconds) {
  Stalls s;
  s.pinned = arch::SetThreadCpus({cpu}).ok();
  int64_t prev = arch::MonotonicNowNs();
  const int64_t end = prev + seconds * 1000000000;
  while (prev < end) {
    const int64_t now = arch::MonotonicNowNs();
    const int64_t gap = now - prev;
    if (gap > kStallNs) {
      ++s.over_20us;
      s.over_100us += gap > 100000;
      s.over_1ms += gap > 1000000;
      s.max_ns = std::max(s.max_ns, gap);
      s.lost_ns += gap;
    }
    prev = now;
  }
  return s;
}

void PrintStalls(int64_t seconds) {
  const int cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<Stalls> stalls(cpus);
  std::vector<std::thread> threads;
  for (int cpu = 0; cpu < cpus; ++cpu) {
    threads.emplace_back(
        [&stalls, cpu, seconds] { stalls[cpu] = WatchCpu(cpu, seconds); });
  }
  for (std::thread& t : threads) t.join();
  absl::PrintF(
      "| CPU | stalls > 20 us, per s | > 100 us, per s | > 1 ms, per s | "
      "longest us | time lost |\n"
      "| ---: | ---: | ---: | ---: | ---: | ---: |\n");
  const double s = static_cast<double>(seconds);
  for (int cpu = 0; cpu < cpus; ++cpu) {
    const Stalls& st = stalls[cpu];
    absl::PrintF("| %d%s | %.1f | %.1f | %.1f | %s | %.2f %% |\n", cpu,
                 st.pinned ? "" : " (not pinned)", st.over_20us / s,
                 st.over_100us / s, st.over_1ms / s, Us(st.max_ns),
                 100.0 * static_cast<double>(st.lost_ns) / (s * 1e9));
  }
}

int Main(int argc, char** argv) {
  ParseCommandLineOrExit(
      argc, argv,
      "usage: host_noise [--sleeps=50us,400us,1ms] [--samples=400] "
      "[--seconds=5]");
  std::vector<int64_t> sleeps_ns;
  for (absl::string_view text :
       absl::StrSplit(absl::GetFlag(FLAGS_sleeps), ',')) {
    absl::Duration d;
    if (!absl::ParseDuration(text, &d) || d < absl::Microseconds(1) ||
        d > absl::Seconds(1)) {
      absl::FPrintF(stderr,
                    "host_noise: '%s' in --sleeps is not a sleep length; "
                    "accepted: durations from 1us to 1s, such as 50us or 1ms\n",
                    text);
      return 2;
    }
    sleeps_ns.push_back(absl::ToInt64Nanoseconds(d));
  }
  const int samples = static_cast<int>(absl::GetFlag(FLAGS_samples).value);
  const int64_t seconds = absl::GetFlag(FLAGS_seconds).value;
  absl::PrintF(
      "# host_noise: timed sleeps' lateness (1 ns timer slack, %d samples "
      "each)\n\n",
      samples);
  PrintTimerLateness(sleeps_ns, samples);
  absl::PrintF(
      "\n# host_noise: stalls seen by a thread spinning on each CPU, %d s\n\n",
      static_cast<int>(seconds));
  PrintStalls(seconds);
  return 0;
}

}  // namespace
}  // namespace haltpool::bench

int main(int argc, char** argv) { return haltpool::bench::Main(argc, argv); }
