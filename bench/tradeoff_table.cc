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
    "mode,arrivals,contender,gap_us,samples,mean_us,p50_us,p99_us,cpu_pct,"
    "submit_late_us";
constexpr int kCsvFields = 10;

// One contender's point at a gap, for judging.
struct Entry {
  const Curve* curve;
  const WakePoint* point;
};

// The entries of `mode` and `arrivals` at `gap_ns`.
std::vector<Entry> AtGap(const std::vector<Curve>& curves,
                         absl::string_view mode, absl::string_view arrivals,
                         int64_t gap_ns) {
  std::vector<Entry> out;
  for (const Curve& c : curves) {
    if (c.mode != mode || c.arrivals != arrivals) continue;
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
    if (!Judge(AtGap(curves, curve.mode, curve.arrivals, p.gap_ns),
               {&curve, &p})
             .met) {
      return false;
    }
  }
  return !curve.points.empty();
}

// A mode and an arrival process: what a table or a verdict is about.
struct Group {
  std::string mode;
  std::string arrivals;
  bool operator==(const Group&) const = default;
  bool Has(const Curve& c) const {
    return c.mode == mode && c.arrivals == arrivals;
  }
  // "pool" for periodic arrivals, "pool, bursty arrivals" otherwise.
  std::string Title() const {
    return arrivals == "periodic"
               ? mode
               : absl::StrCat(mode, ", ", arrivals, " arrivals");
  }
};

// The groups of `curves`, in the order first seen.
std::vector<Group> Groups(const std::vector<Curve>& curves) {
  std::vector<Group> groups;
  for (const Curve& c : curves) {
    const Group g{c.mode, c.arrivals};
    bool seen = false;
    for (const Group& h : groups) seen = seen || h == g;
    if (!seen) groups.push_back(g);
  }
  return groups;
}

// The gaps any curve of `group` has, in the order first seen.
std::vector<int64_t> Gaps(const std::vector<Curve>& curves,
                          const Group& group) {
  std::vector<int64_t> gaps;
  for (const Curve& c : curves) {
    if (!group.Has(c)) continue;
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

std::string CsvField(absl::string_view field) {
  if (field.find_first_of(",\"\r\n") == absl::string_view::npos) {
    return std::string(field);
  }
  std::string out = "\"";
  for (char ch : field) {
    if (ch == '"') out += '"';
    out += ch;
  }
  out += '"';
  return out;
}

absl::StatusOr<std::vector<std::vector<std::string>>> ParseCsv(
    absl::string_view csv) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false;      // Inside a quoted field.
  bool was_quoted = false;  // The current field was quoted and closed.
  bool any = false;         // The current record has a character.
  auto end_field = [&] {
    record.push_back(std::move(field));
    field.clear();
    was_quoted = false;
  };
  auto end_record = [&] {
    if (any) {
      end_field();
      records.push_back(std::move(record));
    }
    record.clear();
    field.clear();
    was_quoted = false;
    any = false;
  };
  for (size_t i = 0; i < csv.size(); ++i) {
    const char ch = csv[i];
    if (quoted) {
      if (ch != '"') {
        field += ch;
      } else if (i + 1 < csv.size() && csv[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        quoted = false;
        was_quoted = true;
      }
      continue;
    }
    if (ch == '\n' ||
        (ch == '\r' && i + 1 < csv.size() && csv[i + 1] == '\n')) {
      if (ch == '\r') ++i;
      end_record();
      continue;
    }
    any = true;
    if (ch == ',') {
      end_field();
    } else if (was_quoted) {
      return absl::InvalidArgumentError(
          absl::StrCat("CSV record ", records.size() + 1,
                       ": text after a closing quote; accepted: RFC 4180 "
                       "fields (\"a, \"\"b\"\"\" for a, \"b\")"));
    } else if (ch == '"' && field.empty()) {
      quoted = true;
    } else {
      field += ch;
    }
  }
  if (quoted) {
    return absl::InvalidArgumentError(
        absl::StrCat("CSV record ", records.size() + 1,
                     ": a quoted field is not closed; accepted: RFC 4180 "
                     "fields"));
  }
  end_record();
  return records;
}

std::string CurvesCsv(const std::vector<Curve>& curves) {
  std::string out = absl::StrCat(kCsvHeader, "\n");
  for (const Curve& c : curves) {
    for (const WakePoint& p : c.points) {
      absl::StrAppendFormat(
          &out, "%s,%s,%s,%g,%d,%.3f,%.3f,%.3f,%.3f,%.3f\n", CsvField(c.mode),
          CsvField(c.arrivals), CsvField(c.contender),
          static_cast<double>(p.gap_ns) / 1e3, p.samples, p.mean_us, p.p50_us,
          p.p99_us, 100 * p.cpu, p.submit_late_us);
    }
  }
  return out;
}

absl::StatusOr<std::vector<Curve>> ParseCurvesCsv(absl::string_view csv) {
  absl::StatusOr<std::vector<std::vector<std::string>>> records = ParseCsv(csv);
  if (!records.ok()) return records.status();
  const std::vector<std::string> header = absl::StrSplit(kCsvHeader, ',');
  std::vector<Curve> curves;
  int number = 0;
  for (const std::vector<std::string>& f : *records) {
    ++number;
    if (f == header) continue;
    WakePoint p;
    double gap_us = 0, cpu_pct = 0;
    const bool ok = f.size() == kCsvFields && !f[0].empty() && !f[1].empty() &&
                    !f[2].empty() && absl::SimpleAtod(f[3], &gap_us) &&
                    gap_us >= 0 && absl::SimpleAtoi(f[4], &p.samples) &&
                    p.samples > 0 && absl::SimpleAtod(f[5], &p.mean_us) &&
                    absl::SimpleAtod(f[6], &p.p50_us) &&
                    absl::SimpleAtod(f[7], &p.p99_us) &&
                    absl::SimpleAtod(f[8], &cpu_pct) && cpu_pct >= 0 &&
                    absl::SimpleAtod(f[9], &p.submit_late_us) &&
                    p.submit_late_us >= 0;
    if (!ok) {
      std::string shown;
      for (const std::string& field : f) {
        absl::StrAppend(&shown, shown.empty() ? "" : ",", CsvField(field));
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "CSV record ", number, " '", shown, "': accepted: ", kCsvHeader));
    }
    p.gap_ns = static_cast<int64_t>(gap_us * 1e3 + 0.5);
    p.cpu = cpu_pct / 100;
    if (curves.empty() || curves.back().mode != f[0] ||
        curves.back().arrivals != f[1] || curves.back().contender != f[2]) {
      Curve c;
      c.mode = f[0];
      c.arrivals = f[1];
      c.contender = f[2];
      curves.push_back(std::move(c));
    }
    curves.back().points.push_back(p);
  }
  return curves;
}

std::string CurvesMarkdown(const std::vector<Curve>& curves) {
  std::string out;
  for (const Group& group : Groups(curves)) {
    const std::vector<int64_t> gaps = Gaps(curves, group);
    std::string header = "| contender |";
    std::string rule = "| --- |";
    for (int64_t g : gaps) {
      absl::StrAppend(&header, " ", GapLabel(g), " |");
      absl::StrAppend(&rule, " ---: |");
    }
    absl::StrAppend(&out, "#### ", group.Title(),
                    ": mean wake latency, us (p50 / p99)\n\n", header, "\n",
                    rule, "\n");
    std::string cpu_table =
        absl::StrCat("#### ", group.Title(),
                     ": CPU the waiting side burns, % of one CPU\n\n", header,
                     "\n", rule, "\n");
    std::string late_table = absl::StrCat(
        "#### ", group.Title(),
        ": how late the waker sent each wake past its plan, mean us (its "
        "timer, and anything that held its CPU)\n\n",
        header, "\n", rule, "\n");
    for (const Curve& c : curves) {
      if (!group.Has(c)) continue;
      absl::StrAppend(&out, "| ", c.contender, " |");
      absl::StrAppend(&cpu_table, "| ", c.contender, " |");
      absl::StrAppend(&late_table, "| ", c.contender, " |");
      for (int64_t g : gaps) {
        const WakePoint* p = PointAt(c, g);
        if (p == nullptr) {
          absl::StrAppend(&out, " - |");
          absl::StrAppend(&cpu_table, " - |");
          absl::StrAppend(&late_table, " - |");
          continue;
        }
        absl::StrAppendFormat(&out, " %.2f (%.2f / %.1f) |", p->mean_us,
                              p->p50_us, p->p99_us);
        absl::StrAppendFormat(&cpu_table, " %.1f |", 100 * p->cpu);
        absl::StrAppendFormat(&late_table, " %.2f |", p->submit_late_us);
      }
      absl::StrAppend(&out, "\n");
      absl::StrAppend(&cpu_table, "\n");
      absl::StrAppend(&late_table, "\n");
    }
    absl::StrAppend(&out, "\n", cpu_table, "\n", late_table, "\n");
  }
  return out;
}

bool Dominates(const WakePoint& a, const WakePoint& b) {
  return a.mean_us <= kDominantLatencyRatio * b.mean_us &&
         a.cpu <= b.cpu + kDominantCpuMargin;
}

std::vector<DominanceVerdict> JudgeDominance(const std::vector<Curve>& curves) {
  std::vector<DominanceVerdict> out;
  for (const Curve& mine : curves) {
    if (!mine.is_default) continue;
    for (const WakePoint& p : mine.points) {
      DominanceVerdict v;
      v.mode = mine.mode;
      v.arrivals = mine.arrivals;
      v.gap_ns = p.gap_ns;
      v.default_mean_us = p.mean_us;
      v.default_cpu = p.cpu;
      const std::vector<Entry> at_gap =
          AtGap(curves, mine.mode, mine.arrivals, p.gap_ns);
      const Entry* fastest = nullptr;
      for (const Entry& e : at_gap) {
        if (fastest == nullptr || e.point->mean_us < fastest->point->mean_us) {
          fastest = &e;
        }
        if (e.curve != &mine && Dominates(*e.point, p)) {
          v.dominated_by.push_back(e.curve->contender);
        }
      }
      // AtGap finds `mine` itself, so `fastest` is set.
      v.fastest = fastest->curve->contender;
      v.default_to_fastest = fastest->point->mean_us > 0
                                 ? p.mean_us / fastest->point->mean_us
                                 : 1.0;
      out.push_back(std::move(v));
    }
  }
  return out;
}

std::string DominanceMarkdown(const std::vector<DominanceVerdict>& verdicts) {
  std::string out;
  Group group;
  for (const DominanceVerdict& v : verdicts) {
    const Group g{v.mode, v.arrivals};
    if (!(g == group)) {
      group = g;
      absl::StrAppendFormat(
          &out,
          "%s#### %s: who dominates the default (mean <= %.1fx its mean, CPU "
          "<= its CPU + %.0f%% of a CPU)\n\n| gap | default mean, us | "
          "default CPU, %% | fastest | default / fastest | verdict |\n| ---: "
          "| ---: | ---: | --- | ---: | --- |\n",
          out.empty() ? "" : "\n", g.Title(), kDominantLatencyRatio,
          100 * kDominantCpuMargin);
    }
    absl::StrAppendFormat(
        &out, "| %s | %.2f | %.1f | %s | %.2f | %s |\n", GapLabel(v.gap_ns),
        v.default_mean_us, 100 * v.default_cpu, v.fastest, v.default_to_fastest,
        v.dominated_by.empty()
            ? std::string("not dominated")
            : absl::StrCat("dominated by: ",
                           absl::StrJoin(v.dominated_by, ", ")));
  }
  return out;
}

absl::StatusOr<Verdict> JudgeTradeoff(const std::vector<Curve>& curves,
                                      absl::string_view mode,
                                      absl::string_view arrivals) {
  const Group group{std::string(mode), std::string(arrivals)};
  const Curve* mine = nullptr;
  for (const Curve& c : curves) {
    if (group.Has(c) && c.is_default) mine = &c;
  }
  if (mine == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no haltpool default curve in mode '", mode,
                     "' with arrivals '", arrivals, "'"));
  }
  Verdict v;
  v.mode = group.mode;
  v.arrivals = group.arrivals;
  v.default_name = mine->contender;
  v.met_everywhere = !mine->points.empty();
  for (const WakePoint& p : mine->points) {
    v.gaps.push_back(
        Judge(AtGap(curves, mode, arrivals, p.gap_ns), {mine, &p}));
    v.met_everywhere = v.met_everywhere && v.gaps.back().met;
  }
  for (const Curve& c : curves) {
    if (group.Has(c) && !c.haltpool && MeetsEverywhere(curves, c)) {
      v.peers_meeting_everywhere.push_back(c.contender);
    }
  }
  return v;
}

std::string VerdictMarkdown(const Verdict& v) {
  const std::string title = Group{v.mode, v.arrivals}.Title();
  std::string out = absl::StrCat(
      "#### ", title, ": the target for ", v.default_name,
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
      title, v.met_everywhere ? "meets" : "does not meet", kLatencyTolerance,
      kCpuTolerance, 100 * kCpuFloor,
      peer_free ? std::string("none")
                : absl::StrJoin(v.peers_meeting_everywhere, ", "),
      v.met_everywhere && peer_free ? "met" : "not met");
  return out;
}

}  // namespace haltpool::bench
