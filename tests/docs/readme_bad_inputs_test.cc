// The README's table of bad inputs is true: every row, fed to the
// configuration, gives exactly the message the README shows, so the table and
// the code cannot drift apart. A row is either environment assignments
// (`HALTPOOL_A=x HALTPOOL_B=y`) or one code option (`options.workers = -1`).

#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "runtime/config.h"

namespace haltpool {
namespace {

std::string g_readme_path;

struct Row {
  std::string input;
  std::string message;
};

// The rows of the table under the "### Bad inputs" heading.
std::vector<Row> BadInputRows() {
  std::ifstream in(g_readme_path);
  std::vector<Row> rows;
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (absl::StartsWith(line, "#")) {
      in_section = line == "### Bad inputs";
      continue;
    }
    if (!in_section || !absl::StartsWith(line, "| `")) continue;
    // | `input` | `message` |
    std::vector<std::string> cells = absl::StrSplit(line, "` | `");
    if (cells.size() != 2) {
      rows.push_back({line, "<row not of the form | `input` | `message` |>"});
      continue;
    }
    absl::string_view input = cells[0], message = cells[1];
    absl::ConsumePrefix(&input, "| `");
    absl::ConsumeSuffix(&message, "` |");
    // A "|" inside a Markdown table cell is written "\\|".
    rows.push_back(
        {std::string(input), absl::StrReplaceAll(message, {{"\\|", "|"}})});
  }
  return rows;
}

// Parses `v` into an optional code field.
template <typename T>
bool SetNumber(absl::string_view v, std::optional<T>& field) {
  T n;
  if (!absl::SimpleAtoi(v, &n)) return false;
  field = n;
  return true;
}

// Code options a row may set, by the name it uses.
const std::map<std::string,
               std::function<bool(absl::string_view, PoolOptions&)>>&
OptionSetters() {
  static const auto* setters =
      new std::map<std::string,
                   std::function<bool(absl::string_view, PoolOptions&)>>{
          {"options.workers",
           [](absl::string_view v, PoolOptions& o) {
             return SetNumber(v, o.workers);
           }},
          {"options.max_pollers",
           [](absl::string_view v, PoolOptions& o) {
             return SetNumber(v, o.max_pollers);
           }},
          {"options.idle.governor",
           [](absl::string_view v, PoolOptions& o) {
             if (!absl::ConsumePrefix(&v, "\"") ||
                 !absl::ConsumeSuffix(&v, "\""))
               return false;
             o.idle.governor = std::string(v);
             return true;
           }},
          {"options.idle.fixed_poll_ns",
           [](absl::string_view v, PoolOptions& o) {
             return SetNumber(v, o.idle.fixed_poll_ns);
           }},
          {"options.idle.haltpoll.poll_ns",
           [](absl::string_view v, PoolOptions& o) {
             return SetNumber(v, o.idle.haltpoll.poll_ns);
           }},
          {"options.idle.haltpoll.grow",
           [](absl::string_view v, PoolOptions& o) {
             return SetNumber(v, o.idle.haltpoll.grow);
           }},
      };
  return *setters;
}

// Feeds one row's input to ResolveConfig; the error message, or a note of
// why the row could not be read.
std::string MessageFor(const std::string& input) {
  PoolOptions code;
  std::map<std::string, std::string> vars;
  if (absl::StartsWith(input, "options.")) {
    std::vector<std::string> parts = absl::StrSplit(input, " = ");
    if (parts.size() != 2) return "<option row not of the form NAME = VALUE>";
    auto setter = OptionSetters().find(parts[0]);
    if (setter == OptionSetters().end())
      return "<unknown option " + parts[0] + ">";
    if (!setter->second(parts[1], code))
      return "<bad option value " + parts[1] + ">";
  } else {
    for (absl::string_view assignment : absl::StrSplit(input, ' ')) {
      std::pair<std::string, std::string> kv =
          absl::StrSplit(assignment, absl::MaxSplits('=', 1));
      if (!absl::StartsWith(kv.first, "HALTPOOL_"))
        return "<not an assignment: " + std::string(assignment) + ">";
      vars[kv.first] = kv.second;
    }
  }
  absl::StatusOr<Config> config = ResolveConfig(code, MapEnvironment(vars));
  if (config.ok()) return "<accepted>";
  return std::string(config.status().message());
}

TEST(ReadmeBadInputs, TableHasAtLeastTwentyRows) {
  EXPECT_GE(BadInputRows().size(), 20u) << "in " << g_readme_path;
}

TEST(ReadmeBadInputs, EveryRowGivesItsMessage) {
  for (const Row& row : BadInputRows()) {
    EXPECT_EQ(MessageFor(row.input), row.message) << "row: " << row.input;
  }
}

}  // namespace
}  // namespace haltpool

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc > 1) haltpool::g_readme_path = argv[1];
  return RUN_ALL_TESTS();
}
