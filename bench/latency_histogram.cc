#include "bench/latency_histogram.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace haltpool::bench {

LatencySummary Summarize(std::vector<int64_t> lateness_ns) {
  LatencySummary s;
  if (lateness_ns.empty()) return s;
  std::sort(lateness_ns.begin(), lateness_ns.end());
  const size_t n = lateness_ns.size();
  double sum = 0;
  for (int64_t v : lateness_ns) sum += v;
  s.count = static_cast<int64_t>(n);
  s.min_ns = lateness_ns.front();
  s.avg_ns = sum / n;
  s.p99_ns = lateness_ns[n * 99 / 100];
  s.max_ns = lateness_ns.back();
  return s;
}

LatencyHistogram MakeHistogram(const std::vector<int64_t>& lateness_ns,
                               int cap_us) {
  LatencyHistogram h;
  h.buckets.assign(std::max(cap_us, 1), 0);
  for (int64_t v : lateness_ns) {
    const int64_t us = std::max<int64_t>(0, v / 1000);
    if (us < static_cast<int64_t>(h.buckets.size())) {
      ++h.buckets[us];
    } else {
      ++h.overflow;
    }
  }
  return h;
}

std::string FormatHistogram(const LatencyHistogram& histogram) {
  std::string out;
  for (size_t us = 0; us < histogram.buckets.size(); ++us) {
    if (histogram.buckets[us] == 0) continue;
    absl::StrAppendFormat(&out, "%06d %06d\n", us, histogram.buckets[us]);
  }
  absl::StrAppendFormat(&out, "# Histogram Overflows: %05d\n",
                        histogram.overflow);
  return out;
}

}  // namespace haltpool::bench
