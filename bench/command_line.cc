#include "bench/command_line.h"

#include <stdlib.h>

#include <algorithm>
#include <utility>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "idle/governor_registry.h"

namespace haltpool::bench {
namespace {

// The program's own flags, by name: not absl's (--flagfile, --fromenv...).
std::vector<const absl::CommandLineFlag*> ProgramFlags() {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!absl::StrContains(flag->Filename(), "absl/")) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  return flags;
}

std::string Help(absl::string_view usage) {
  std::string out = absl::StrCat(usage, "\n");
  for (const absl::CommandLineFlag* f : ProgramFlags()) {
    absl::StrAppend(&out, "  --", f->Name(), "  ", f->Help(), " (default '",
                    f->DefaultValue(), "')\n");
  }
  return out;
}

[[noreturn]] void Fail(absl::string_view program, absl::string_view usage,
                       absl::string_view what) {
  absl::FPrintF(stderr, "%s: %s\n%s", program, what, Help(usage));
  exit(2);
}

}  // namespace

void ParseCommandLineOrExit(int argc, char** argv, absl::string_view usage) {
  absl::SetProgramUsageMessage(usage);
  absl::string_view program = argc > 0 ? argv[0] : "";
  if (const size_t slash = program.rfind('/'); slash != program.npos) {
    program.remove_prefix(slash + 1);
  }
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--help" || arg == "-h") {
      absl::FPrintF(stdout, "%s", Help(usage));
      exit(0);
    }
    if (!absl::ConsumePrefix(&arg, "--") && !absl::ConsumePrefix(&arg, "-")) {
      Fail(program, usage,
           absl::StrCat("'", arg, "': accepted: --name=value flags"));
    }
    const std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(arg, absl::MaxSplits('=', 1));
    const bool has_value = absl::StrContains(arg, '=');
    absl::string_view value = kv.second;
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(kv.first);
    if (flag == nullptr && !has_value && absl::StartsWith(kv.first, "no")) {
      // --noname: a bool flag set to false.
      flag = absl::FindCommandLineFlag(kv.first.substr(2));
      if (flag != nullptr && flag->IsOfType<bool>()) continue;
      flag = nullptr;
    }
    if (flag == nullptr) {
      std::vector<std::string> known;
      for (const absl::CommandLineFlag* f : ProgramFlags()) {
        known.push_back(absl::StrCat("--", f->Name()));
      }
      Fail(program, usage,
           absl::StrCat("unknown flag --", kv.first,
                        "; accepted: ", absl::StrJoin(known, ", ")));
    }
    if (!has_value) {
      if (flag->IsOfType<bool>()) continue;
      if (i + 1 == argc) {
        Fail(program, usage, absl::StrCat("--", kv.first, " needs a value"));
      }
      value = argv[++i];
    }
    // Sets the flag as absl::ParseCommandLine below will: once checked
    // here, that parse cannot fail.
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      // absl's parsers of its own types (durations, bools, numbers) say
      // what was wrong but not what is accepted: the default shows it.
      if (!absl::StrContains(error, "accepted")) {
        absl::StrAppend(&error, "; accepted: a value like the default, '",
                        flag->DefaultValue(), "'");
      }
      Fail(program, usage, error);
    }
  }
  const std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    Fail(program, usage,
         absl::StrCat("'", rest[1], "': accepted: --name=value flags"));
  }
}

bool ParseIntInRange(absl::string_view text, int64_t min, int64_t max,
                     int64_t* out, std::string* error) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < min || v > max) {
    *error = absl::StrCat("accepted: a whole number from ", min, " to ", max);
    return false;
  }
  *out = v;
  return true;
}

bool AbslParseFlag(absl::string_view text, GovernorList* out,
                   std::string* error) {
  out->names.clear();
  if (text.empty()) return true;
  for (absl::string_view g : absl::StrSplit(text, ',')) {
    if (!idle::IsGovernorName(g)) {
      *error = absl::StrCat(
          "'", g, "' is not a governor; accepted: ", idle::GovernorNames());
      return false;
    }
    out->names.emplace_back(g);
  }
  return true;
}

std::string AbslUnparseFlag(const GovernorList& list) {
  return absl::StrJoin(list.names, ",");
}

std::vector<std::string> GovernorsOrAll(const GovernorList& list) {
  if (!list.names.empty()) return list.names;
  return absl::StrSplit(idle::GovernorNames(), '|');
}

}  // namespace haltpool::bench
