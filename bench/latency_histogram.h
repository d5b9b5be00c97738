// Lateness figures for bench/cyclic, as cyclictest reports them: min, avg,
// max (and p99) of a run, and a histogram of 1 us buckets up to a cap with
// an overflow count (cyclictest -h).

#ifndef HALTPOOL_BENCH_LATENCY_HISTOGRAM_H_
#define HALTPOOL_BENCH_LATENCY_HISTOGRAM_H_

#include <cstdint>
#include <string>
#include <vector>

namespace haltpool::bench {

// One run's lateness, in nanoseconds. All zero for an empty run.
struct LatencySummary {
  int64_t count = 0;
  int64_t min_ns = 0;
  double avg_ns = 0;
  int64_t p99_ns = 0;  // The sample at rank floor(0.99 * count).
  int64_t max_ns = 0;
};

// Summarizes `lateness_ns` (any order). O(n log n).
LatencySummary Summarize(std::vector<int64_t> lateness_ns);

// Counts per whole microsecond: buckets[u] holds the samples in
// [u, u + 1) us, for u below the cap; overflow holds those at or beyond it.
// Negative samples (a run that started early) count in bucket 0, as
// cyclictest clamps them.
struct LatencyHistogram {
  std::vector<int64_t> buckets;
  int64_t overflow = 0;
};

// The histogram of `lateness_ns` with `cap_us` buckets (cap_us >= 1).
LatencyHistogram MakeHistogram(const std::vector<int64_t>& lateness_ns,
                               int cap_us);

// cyclictest -h's layout, empty buckets left out: "000012 000345" (us,
// count) per line, then "# Histogram Overflows: 00007".
std::string FormatHistogram(const LatencyHistogram& histogram);

}  // namespace haltpool::bench

#endif  // HALTPOOL_BENCH_LATENCY_HISTOGRAM_H_
