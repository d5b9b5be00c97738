// bench/tradeoff's results: one curve of wake points per contender and
// arrival process, written as CSV (RFC 4180) and Markdown, and judged two
// ways.
//
// Dominance, per mode, arrival process and gap: a contender dominates
// haltpool's default there if its mean latency is at most
// kDominantLatencyRatio times the default's and its CPU at most the
// default's plus kDominantCpuMargin.
//
// The target, per mode, arrival process and gap: haltpool's default is within
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
// Dominance: at most 0.8x the default's mean latency (a difference the
// noise of one run does not make) at no more than its CPU plus 1 % of a
// CPU (the CPU reading's own error at a 150-250 ms point, wake_harness.h).
inline constexpr double kDominantLatencyRatio = 0.8;
inline constexpr double kDominantCpuMargin = 0.01;
// CPU differences below this fraction of a CPU count as equal: the
// harness's own report of each wake (a store and a notify, about a
// microsecond) costs the waiter this much at the shortest gaps, whatever
// the contender.
inline constexpr double kCpuFloor = 0.005;

struct Curve {
  std::string mode;                   // "pair" or "pool".
  std::string arrivals = "periodic";  // ArrivalsName().
  std::string contender;    // Unique within its mode and arrivals; any text.
  bool haltpool = false;    // One of haltpool's governors.
  bool is_default = false;  // haltpool's default: the one the target is for.
  std::vector<WakePoint> points;  // One per gap, in gap order.
};

// `field` as an RFC 4180 CSV field: in double quotes, with each quote
// doubled, if it holds a comma, a quote, a CR or a LF; as it is otherwise.
std::string CsvField(absl::string_view field);

// Splits RFC 4180 CSV text into records of fields (quoted fields may hold
// commas, doubled quotes and line breaks; a record ends at LF or CRLF; a
// last record without a line break counts; empty lines are skipped).
// InvalidArgument naming the record for a quote left open or text after a
// closing quote.
absl::StatusOr<std::vector<std::vector<std::string>>> ParseCsv(
    absl::string_view csv);

// "mode,arrivals,contender,gap_us,samples,mean_us,p50_us,p99_us,cpu_pct",
// a header line and one line per point, text fields quoted as CsvField
// says.
std::string CurvesCsv(const std::vector<Curve>& curves);

// Parses CSV as CurvesCsv writes it (header optional), appending a curve
// per (mode, arrivals, contender) in order of appearance; used for results
// that come from another process. InvalidArgument naming the record
// otherwise.
absl::StatusOr<std::vector<Curve>> ParseCurvesCsv(absl::string_view csv);

// Per mode and arrival process, a table of mean (p50 / p99) latency in us
// and one of CPU in % of one CPU, a row per contender and a column per gap.
std::string CurvesMarkdown(const std::vector<Curve>& curves);

// Whether `a` dominates `b`: a.mean_us <= kDominantLatencyRatio * b.mean_us
// and a.cpu <= b.cpu + kDominantCpuMargin.
bool Dominates(const WakePoint& a, const WakePoint& b);

// The dominance verdict at one (mode, arrivals, gap).
struct DominanceVerdict {
  std::string mode;
  std::string arrivals;
  int64_t gap_ns = 0;
  double default_mean_us = 0;
  double default_cpu = 0;
  std::string fastest;            // Lowest mean latency, the default included.
  double default_to_fastest = 0;  // Default's mean / fastest's (>= 1).
  std::vector<std::string> dominated_by;  // In curve order; empty: none.
};

// Judges every point of every default curve (Curve::is_default) against
// the other curves of its mode and arrivals at the same gap, in curve and
// gap order.
std::vector<DominanceVerdict> JudgeDominance(const std::vector<Curve>& curves);

// Per mode and arrivals, a table: gap, the default's mean and CPU, the
// fastest contender and the default's ratio to it, and "dominated by: X,
// Y" or "not dominated".
std::string DominanceMarkdown(const std::vector<DominanceVerdict>& verdicts);

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
  std::string arrivals;
  std::string default_name;
  std::vector<GapVerdict> gaps;
  bool met_everywhere = false;
  std::vector<std::string> peers_meeting_everywhere;  // Should stay empty.
};

// Judges the curves of `mode` and `arrivals`. NotFound if they have no
// default curve; curves with missing gaps are compared only where they have
// points.
absl::StatusOr<Verdict> JudgeTradeoff(const std::vector<Curve>& curves,
                                      absl::string_view mode,
                                      absl::string_view arrivals = "periodic");

// The verdict as a Markdown table and a closing line saying whether the
// target is met; the line starts "MODE: the default" for periodic arrivals
// and "MODE, ARRIVALS arrivals: the default" otherwise.
std::string VerdictMarkdown(const Verdict& verdict);

// "0", "5 us", "1 ms": a gap as the tables print it.
std::string GapLabel(int64_t gap_ns);

}  // namespace haltpool::bench

#endif  // HALTPOOL_BENCH_TRADEOFF_TABLE_H_
