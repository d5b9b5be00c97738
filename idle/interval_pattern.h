// The predictive governor's repeating-interval detector: given the last few
// intervals, is there a regular one, and how far do the intervals stray
// from it?

#ifndef HALTPOOL_IDLE_INTERVAL_PATTERN_H_
#define HALTPOOL_IDLE_INTERVAL_PATTERN_H_

#include <cstdint>

namespace haltpool::idle {

// menu.c accepts a pattern whose deviation is under 20 us whatever its mean;
// a wake that regular is worth polling for.
inline constexpr int64_t kRegularJitterNs = 20000;

// The most intervals RegularInterval looks at (menu.c's INTERVALS).
inline constexpr int kMaxIntervals = 8;

// A regular interval and its spread.
struct IntervalPattern {
  int64_t median_ns;     // The prediction: the median of the kept intervals.
  int64_t deviation_ns;  // Their median absolute deviation.
};

// As menu.c's get_typical_interval(): the `count` intervals (at most
// kMaxIntervals, none negative) are regular if their standard deviation is
// at most 1/6 of their mean or under kRegularJitterNs, after dropping the
// largest while they are not, keeping at least three quarters of them.
// The prediction is a median and the spread a median absolute deviation, so
// that one late interval (and the short one after it, when the source keeps
// a fixed schedule) moves neither. Returns false, leaving `pattern` alone,
// if they are not regular or `count` is 0. Any thread; allocation-free,
// a few hundred nanoseconds at kMaxIntervals.
bool RegularInterval(const int64_t* intervals, int count,
                     IntervalPattern& pattern) noexcept;

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_INTERVAL_PATTERN_H_
