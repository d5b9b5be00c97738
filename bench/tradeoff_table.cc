#include "bench/tradeoff_table.h"

#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace haltpool::bench {
namespace {

constexpr char kCsvHeader[] =
    "mode,contender,gap_us,samples,mean_us,p50_us,p99_us,cpu_pct";

// One contender's point at a gap, for judging.
struct Entry {
  const Curve* curve;
  const WakePoint* point;
};

// The entries of `mode` at `gap_ns`.
std::vector<Entry> AtGap(const std::vector<Curve>& curves,
                         absl::string_view mode, int64_t gap_ns) {
  std::vector<Entry> out;
  for (const Curve& c : curves) {
    if (c.mode != mode) continue;
    for (const WakePoint& p : c.points) {
      if (p.gap_ns == gap_ns) out.push_back({&c, &p});
    }
  }
  return out;
}

// Judges `self` against everyone at its gap.
GapVerdict Judge(const std::vector<Entry>& all, const Entry& self) {
  GapVerdict v;
  v.gap_ns = self.point->gap_ns;
  const Entry* best = &self;
  const Entry* cheapest = &self;
  for (const Entry& e : all) {
    if (e.point->mean_us < best->point->mean_us) best = &e;
    if (e.point->mean_us <= self.point->mean_us &&
        e.point->cpu < cheapest->point->cpu) {
      cheapest = &e;
    }
  }
  v.best = best->curve->contender;
  v.cheapest = cheapest->curve->contender;
  v.latency_ratio = best->point->mean_us > 0
                        ? self.point->mean_us / best->point->mean_us
                        : 1.0;
  v.cpu_ratio =
      cheapest->point->cpu > 0 ? self.point->cpu / cheapest->point->cpu : 1.0;
  v.met = self.point->mean_us <= kLatencyTolerance * best->point->mean_us &&
          self.point->cpu <= kCpuTolerance * cheapest->point->cpu + kCpuFloor;
  return v;
}

// Whether `curve` meets the target at every gap it has.
bool MeetsEverywhere(const std::vector<Curve>& curves, const Curve& curve) {
  for (const WakePoint& p : curve.points) {
    if (!Judge(AtGap(curves, curve.mode, p.gap_ns), {&curve, &p}).met) {
      return false;
    }
  }
  return !curve.points.empty();
}

std::vector<std::string> Modes(const std::vector<Curve>& curves) {
  std::vector<std::string> modes;
  for (const Curve& c : curves) {
    bool seen = false;
    for (const std::string& m : modes) seen = seen || m == c.mode;
    if (!seen) modes.push_back(c.mode);
  }
  return modes;
}

// The gaps any curve of `mode` has, in the order first seen.
std::vector<int64_t> Gaps(const std::vector<Curve>& curves,
                          absl::string_view mode) {
  std::vector<int64_t> gaps;
  for (const Curve& c : curves) {
    if (c.mode != mode) continue;
    for (const WakePoint& p : c.points) {
      bool seen = false;
      for (int64_t g : gaps) seen = seen || g == p.gap_ns;
      if (!seen) gaps.push_back(p.gap_ns);
    }
  }
  return gaps;
}

const WakePoint* PointAt(const Curve& c, int64_t gap_ns) {
  for (const WakePoint& p : c.points) {
    if (p.gap_ns == gap_ns) return &p;
  }
  return nullptr;
}

}  // namespace

std::string GapLabel(int64_t gap_ns) {
  if (gap_ns == 0) return "0";
  if (gap_ns % 1000000 == 0) return absl::StrCat(gap_ns / 1000000, " ms");
  return absl::StrCat(absl::SixDigits(static_cast<double>(gap_ns) / 1e3),
                      " us");
}

std::string CurvesCsv(const std::vector<Curve>& curves) {
  std::string out = absl::StrCat(kCsvHeader, "\n");
  for (const Curve& c : curves) {
    for (const WakePoint& p : c.points) {
      absl::StrAppendFormat(&out, "%s,%s,%g,%d,%.3f,%.3f,%.3f,%.3f\n", c.mode,
                            c.contender, static_cast<double>(p.gap_ns) / 1e3,
                            p.samples, p.mean_us, p.p50_us, p.p99_us,
                            100 * p.cpu);
    }
  }
  return out;
}

absl::StatusOr<std::vector<Curve>> ParseCurvesCsv(absl::string_view csv) {
  std::vector<Curve> curves;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(csv, '\n')) {
    ++line_number;
    if (line.empty() || line == kCsvHeader) continue;
    const std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    WakePoint p;
    double gap_us = 0, cpu_pct = 0;
    const bool ok = f.size() == 8 && !f[0].empty() && !f[1].empty() &&
                    absl::SimpleAtod(f[2], &gap_us) && gap_us >= 0 &&
                    absl::SimpleAtoi(f[3], &p.samples) && p.samples > 0 &&
                    absl::SimpleAtod(f[4], &p.mean_us) &&
                    absl::SimpleAtod(f[5], &p.p50_us) &&
                    absl::SimpleAtod(f[6], &p.p99_us) &&
                    absl::SimpleAtod(f[7], &cpu_pct) && cpu_pct >= 0;
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CSV line ", line_number, " '", line, "': accepted: ", kCsvHeader));
    }
    p.gap_ns = static_cast<int64_t>(gap_us * 1e3 + 0.5);
    p.cpu = cpu_pct / 100;
    if (curves.empty() || curves.back().mode != f[0] ||
        curves.back().contender != f[1]) {
      Curve c;
      c.mode = std::string(f[0]);
      c.contender = std::string(f[1]);
      curves.push_back(std::move(c));
    }
    curves.back().points.push_back(p);
  }
  return curves;
}

std::string CurvesMarkdown(const std::vector<Curve>& curves) {
  std::string out;
  for (const std::string& mode : Modes(curves)) {
    const std::vector<int64_t> gaps = Gaps(curves, mode);
    std::string header = "| contender |";
    std::string rule = "| --- |";
    for (int64_t g : gaps) {
      absl::StrAppend(&header, " ", GapLabel(g), " |");
      absl::StrAppend(&rule, " ---: |");
    }
    absl::StrAppend(&out, "#### ", mode,
                    ": mean wake latency, us (p50 / p99)\n\n", header, "\n",
                    rule, "\n");
    std::string cpu_table = absl::StrCat(
        "#### ", mode, ": CPU the waiting side burns, % of one CPU\n\n", header,
        "\n", rule, "\n");
    for (const Curve& c : curves) {
      if (c.mode != mode) continue;
      absl::StrAppend(&out, "| ", c.contender, " |");
      absl::StrAppend(&cpu_table, "| ", c.contender, " |");
      for (int64_t g : gaps) {
        const WakePoint* p = PointAt(c, g);
        if (p == nullptr) {
          absl::StrAppend(&out, " - |");
          absl::StrAppend(&cpu_table, " - |");
          continue;
        }
        absl::StrAppendFormat(&out, " %.2f (%.2f / %.1f) |", p->mean_us,
                              p->p50_us, p->p99_us);
        absl::StrAppendFormat(&cpu_table, " %.1f |", 100 * p->cpu);
      }
      absl::StrAppend(&out, "\n");
      absl::StrAppend(&cpu_table, "\n");
    }
    absl::StrAppend(&out, "\n", cpu_table, "\n");
  }
  return out;
}

absl::StatusOr<Verdict> JudgeTradeoff(const std::vector<Curve>& curves,
                                      absl::string_view mode) {
  const Curve* mine = nullptr;
  for (const Curve& c : curves) {
    if (c.mode == mode && c.is_default) mine = &c;
  }
  if (mine == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no haltpool default curve in mode '", mode, "'"));
  }
  Verdict v;
  v.mode = std::string(mode);
  v.default_name = mine->contender;
  v.met_everywhere = !mine->points.empty();
  for (const WakePoint& p : mine->points) {
    v.gaps.push_back(Judge(AtGap(curves, mode, p.gap_ns), {mine, &p}));
    v.met_everywhere = v.met_everywhere && v.gaps.back().met;
  }
  for (const Curve& c : curves) {
    if (c.mode == mode && !c.haltpool && MeetsEverywhere(curves, c)) {
      v.peers_meeting_everywhere.push_back(c.contender);
    }
  }
  return v;
}

std::string VerdictMarkdown(const Verdict& v) {
  std::string out = absl::StrCat(
      "#### ", v.mode, ": the target for ", v.default_name,
      "\n\n| gap | fastest | default / fastest mean | cheapest as fast | "
      "default / cheapest CPU | met |\n| ---: | --- | ---: | --- | ---: | "
      "--- |\n");
  for (const GapVerdict& g : v.gaps) {
    absl::StrAppendFormat(&out, "| %s | %s | %.2f | %s | %.2f | %s |\n",
                          GapLabel(g.gap_ns), g.best, g.latency_ratio,
                          g.cheapest, g.cpu_ratio, g.met ? "yes" : "no");
  }
  const bool peer_free = v.peers_meeting_everywhere.empty();
  absl::StrAppendFormat(
      &out,
      "\n%s: the default %s the target at every gap (latency <= %.1fx the "
      "fastest, CPU <= %.1fx the cheapest as fast, +%.1f%% of a CPU); peers "
      "meeting it at every gap: %s. Target %s.\n",
      v.mode, v.met_everywhere ? "meets" : "does not meet", kLatencyTolerance,
      kCpuTolerance, 100 * kCpuFloor,
      peer_free ? std::string("none")
                : absl::StrJoin(v.peers_meeting_everywhere, ", "),
      v.met_everywhere && peer_free ? "met" : "not met");
  return out;
}

}  // namespace haltpool::bench
