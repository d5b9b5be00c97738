#include "bench/bench_flags.h"

#include <stdio.h>
#include <stdlib.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "idle/governor_registry.h"

namespace haltpool::bench {

absl::StatusOr<BenchFlags> ParseBenchFlags(BenchFlags flags, int argc,
                                           const char* const* argv) {
  for (int i = 0; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      flags.help = true;
      continue;
    }
    if (!absl::ConsumePrefix(&arg, "--") || !absl::StrContains(arg, '=')) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", argv[i], "': accepted: --name=value flags"));
    }
    const std::pair<std::string, std::string> kv =
        absl::StrSplit(arg, absl::MaxSplits('=', 1));
    if (kv.first == "governors") {
      flags.governors.clear();
      for (absl::string_view g : absl::StrSplit(kv.second, ',')) {
        if (!idle::IsGovernorName(g)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "--governors: '", g,
              "' is not a governor; accepted: ", idle::GovernorNames()));
        }
        flags.governors.emplace_back(g);
      }
      continue;
    }
    if (auto text = flags.strings.find(kv.first); text != flags.strings.end()) {
      if (kv.second.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", kv.first, "='': accepted: ", text->second.help));
      }
      text->second.value = kv.second;
      continue;
    }
    auto it = flags.ints.find(kv.first);
    if (it == flags.ints.end()) {
      std::string known = "--governors";
      for (const auto& [name, f] : flags.ints)
        absl::StrAppend(&known, ", --", name);
      for (const auto& [name, f] : flags.strings)
        absl::StrAppend(&known, ", --", name);
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", kv.first, "; accepted: ", known));
    }
    IntFlag& f = it->second;
    int64_t v = 0;
    if (!absl::SimpleAtoi(kv.second, &v) || v < f.min || v > f.max) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", kv.first, "='", kv.second, "': accepted: a whole number from ",
          f.min, " to ", f.max));
    }
    f.value = v;
  }
  if (flags.governors.empty()) {
    for (absl::string_view g : absl::StrSplit(idle::GovernorNames(), '|')) {
      flags.governors.emplace_back(g);
    }
  }
  return flags;
}

std::string BenchUsage(const char* name, const BenchFlags& defaults) {
  std::string out = absl::StrCat("usage: ", name, " [flags]\n");
  for (const auto& [flag, f] : defaults.ints) {
    absl::StrAppend(&out, "  --", flag, "=N  ", f.help, " (default ", f.value,
                    ", ", f.min, " to ", f.max, ")\n");
  }
  for (const auto& [flag, f] : defaults.strings) {
    absl::StrAppend(&out, "  --", flag, "=TEXT  ", f.help);
    if (!f.value.empty()) absl::StrAppend(&out, " (default ", f.value, ")");
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "  --governors=a,b  governors to run (default all: ",
                  idle::GovernorNames(), ")\n");
  return out;
}

BenchFlags ParseBenchFlagsOrExit(const char* name, const BenchFlags& defaults,
                                 int argc, const char* const* argv) {
  absl::StatusOr<BenchFlags> flags = ParseBenchFlags(defaults, argc, argv);
  if (!flags.ok()) {
    fprintf(stderr, "%s: %s\n%s", name,
            std::string(flags.status().message()).c_str(),
            BenchUsage(name, defaults).c_str());
    exit(2);
  }
  if (flags->help) {
    fputs(BenchUsage(name, defaults).c_str(), stdout);
    exit(0);
  }
  return *std::move(flags);
}

}  // namespace haltpool::bench
