#include "bench/pipe_args.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace haltpool::bench {
namespace {

// Largest accepted --loop and --gap-us: far beyond any useful run, far below
// overflow of the microsecond and nanosecond sums.
constexpr int64_t kMaxLoops = 1000000000000;
constexpr int64_t kMaxGapUs = 10000000;

absl::StatusOr<int64_t> Number(absl::string_view option, absl::string_view text,
                               int64_t min, int64_t max) {
  int64_t v = 0;
  if (text.empty() || text[0] == '+' || !absl::SimpleAtoi(text, &v) ||
      v < min || v > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("option `", option, "' expects a whole number from ", min,
                     " to ", max, ", got '", text, "'"));
  }
  return v;
}

}  // namespace

std::string PipeUsage() {
  return "\n Usage: pipe [<options>]\n\n"
         "    -l, --loop <n>        Specify number of loops (default 1000000)\n"
         "    -T, --threaded        Specify threads/process based task setup\n"
         "        --transport <t>   pipe (kernel pipes, as perf) or parker\n"
         "                          (shared-memory ring + parker)\n"
         "        --gap-us <n>      Initiator stays busy n us before each op\n"
         "        --stats[=json]    Print idle statistics at exit\n"
         "    -h, --help            Show this help\n\n"
         " The idle policy comes from HALTPOOL_* variables (see README.md).\n";
}

absl::StatusOr<PipeArgs> ParsePipeArgs(int argc, const char* const* argv) {
  PipeArgs args;
  std::vector<absl::string_view> a(argv, argv + argc);
  for (size_t i = 0; i < a.size(); ++i) {
    absl::string_view opt = a[i];
    absl::string_view value;
    bool has_value = false;
    if (absl::StartsWith(opt, "--")) {
      if (size_t eq = opt.find('='); eq != absl::string_view::npos) {
        value = opt.substr(eq + 1);
        opt = opt.substr(0, eq);
        has_value = true;
      }
    }
    auto take_value = [&]() -> absl::StatusOr<absl::string_view> {
      if (has_value) return value;
      if (i + 1 >= a.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("option `", opt, "' requires a value"));
      }
      return a[++i];
    };
    if (opt == "-l" || opt == "--loop") {
      absl::StatusOr<absl::string_view> v = take_value();
      if (!v.ok()) return v.status();
      absl::StatusOr<int64_t> n = Number(opt, *v, 1, kMaxLoops);
      if (!n.ok()) return n.status();
      args.loops = *n;
    } else if ((opt == "-T" || opt == "--threaded") && !has_value) {
      args.threaded = true;
    } else if (opt == "--transport") {
      absl::StatusOr<absl::string_view> v = take_value();
      if (!v.ok()) return v.status();
      if (*v == "pipe") {
        args.transport = Transport::kPipe;
      } else if (*v == "parker") {
        args.transport = Transport::kParker;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "option `--transport' expects pipe or parker, got '", *v, "'"));
      }
    } else if (opt == "--gap-us") {
      absl::StatusOr<absl::string_view> v = take_value();
      if (!v.ok()) return v.status();
      absl::StatusOr<int64_t> n = Number(opt, *v, 0, kMaxGapUs);
      if (!n.ok()) return n.status();
      args.gap_us = *n;
    } else if (opt == "--stats") {
      if (!has_value) {
        args.stats = StatsFormat::kText;
      } else if (value == "json") {
        args.stats = StatsFormat::kJson;
      } else if (value == "text") {
        args.stats = StatsFormat::kText;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "option `--stats' expects text or json, got '", value, "'"));
      }
    } else if ((opt == "-h" || opt == "--help") && !has_value) {
      args.help = true;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option `", a[i], "'"));
    }
  }
  return args;
}

}  // namespace haltpool::bench
