#include "idle/interval_pattern.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace haltpool::idle {

bool RegularInterval(const int64_t* intervals, int count,
                     IntervalPattern& pattern) noexcept {
  count = std::min(count, kMaxIntervals);
  if (count <= 0) return false;
  int64_t ceiling = std::numeric_limits<int64_t>::max();
  for (;;) {
    int kept_count = 0;
    int64_t sum = 0;
    int64_t max = 0;
    for (int i = 0; i < count; ++i) {
      if (intervals[i] > ceiling) continue;
      ++kept_count;
      sum += intervals[i];
      max = std::max(max, intervals[i]);
    }
    if (kept_count * 4 < count * 3 || kept_count == 0) return false;
    const double mean = static_cast<double>(sum) / kept_count;
    double variance = 0;
    for (int i = 0; i < count; ++i) {
      if (intervals[i] > ceiling) continue;
      variance += (intervals[i] - mean) * (intervals[i] - mean);
    }
    const double deviation = std::sqrt(variance / kept_count);
    if (mean > 6 * deviation || deviation <= kRegularJitterNs) {
      std::array<int64_t, kMaxIntervals> kept{};
      int n = 0;
      for (int i = 0; i < count; ++i) {
        if (intervals[i] <= ceiling) kept[n++] = intervals[i];
      }
      std::sort(kept.begin(), kept.begin() + n);
      const int64_t median = kept[n / 2];
      for (int i = 0; i < n; ++i) kept[i] = std::abs(kept[i] - median);
      std::sort(kept.begin(), kept.begin() + n);
      pattern = {median, kept[n / 2]};
      return true;
    }
    ceiling = max - 1;
  }
}

}  // namespace haltpool::idle
