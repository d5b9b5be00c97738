// bench/tradeoff's results: one curve of wake points per contender, written
// as CSV and Markdown, and judged against the tradeoff target.
//
// The target, per mode and gap: haltpool's default is within
// kLatencyTolerance of the best contender's mean latency, while burning no
// more than kCpuTolerance times the CPU of the cheapest contender whose mean
// latency is no worse than the default's; and no single peer (a contender
// that is not haltpool) does both at every gap.

#ifndef HALTPOOL_BENCH_TRADEOFF_TABLE_H_
#define HALTPOOL_BENCH_TRADEOFF_TABLE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bench/wake_harness.h"

namespace haltpool::bench {

// The bounds: 1.5x the best latency, 1.1x the cheapest CPU.
inline constexpr double kLatencyTolerance = 1.5;
inline constexpr double kCpuTolerance = 1.1;
// CPU differences below this fraction of a CPU count as equal: the
// harness's own report of each wake (a store and a notify, about a
// microsecond) costs the waiter this much at the shortest gaps, whatever
// the contender.
inline constexpr double kCpuFloor = 0.005;

struct Curve {
  std::string mode;         // "pair" or "pool".
  std::string contender;    // Unique within its mode; no commas.
  bool haltpool = false;    // One of haltpool's governors.
  bool is_default = false;  // haltpool's default: the one the target is for.
  std::vector<WakePoint> points;  // One per gap, in gap order.
};

// "mode,contender,gap_us,samples,mean_us,p50_us,p99_us,cpu_pct", a header
// line and one line per point.
std::string CurvesCsv(const std::vector<Curve>& curves);

// Parses CSV lines as CurvesCsv writes them (header optional), appending a
// curve per (mode, contender) in order of appearance; used for results that
// come from another process. InvalidArgument naming the line otherwise.
absl::StatusOr<std::vector<Curve>> ParseCurvesCsv(absl::string_view csv);

// Per mode, a table of mean (p50 / p99) latency in us and one of CPU in %
// of one CPU, a row per contender and a column per gap.
std::string CurvesMarkdown(const std::vector<Curve>& curves);

// The target at one gap.
struct GapVerdict {
  int64_t gap_ns = 0;
  std::string best;          // Lowest mean latency at this gap.
  double latency_ratio = 0;  // Default's mean / best's.
  std::string cheapest;      // Least CPU among those as fast as the default.
  double cpu_ratio = 0;      // Default's CPU / cheapest's.
  bool met = false;
};

struct Verdict {
  std::string mode;
  std::string default_name;
  std::vector<GapVerdict> gaps;
  bool met_everywhere = false;
  std::vector<std::string> peers_meeting_everywhere;  // Should stay empty.
};

// Judges the curves of `mode`. NotFound if the mode has no default curve;
// curves with missing gaps are compared only where they have points.
absl::StatusOr<Verdict> JudgeTradeoff(const std::vector<Curve>& curves,
                                      absl::string_view mode);

// The verdict as a Markdown table and a closing line saying whether the
// target is met.
std::string VerdictMarkdown(const Verdict& verdict);

// "0", "5 us", "1 ms": a gap as the tables print it.
std::string GapLabel(int64_t gap_ns);

}  // namespace haltpool::bench

#endif  // HALTPOOL_BENCH_TRADEOFF_TABLE_H_
