// The pool's statistics (PoolStats) in the OpenMetrics 1.0 text format, the
// Prometheus exposition format, for a scrape endpoint such as
// examples/metrics_endpoint.h. Every family is named haltpool_*, with its
// unit in the name; docs/POOL.md lists them.

#ifndef HALTPOOL_RUNTIME_POOL_METRICS_H_
#define HALTPOOL_RUNTIME_POOL_METRICS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "runtime/pool_stats.h"

namespace haltpool {

// The media type of FormatPoolStatsOpenMetrics's text, for an HTTP
// Content-Type header.
inline constexpr absl::string_view kOpenMetricsContentType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

// `stats` as one OpenMetrics exposition, ending with "# EOF\n": per worker
// (label worker="N") its idle states (label state="POLL", "BLOCK"), wakes,
// tasks, exceptions and I/O as counters, its poll window as a gauge, its
// governor, wait mechanism and I/O backend as an info metric; per pool the
// timers cancelled, the back-off and max_pollers. Durations in seconds as
// floats; an unlimited window or cap is +Inf. Label values are escaped
// (\\, \", \n). Allocates; any thread.
std::string FormatPoolStatsOpenMetrics(const PoolStats& stats);

// `value` escaped for an OpenMetrics label value: backslash, double quote
// and newline as \\, \" and \n; everything else as is.
std::string EscapeOpenMetricsLabel(absl::string_view value);

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_POOL_METRICS_H_
