// The README's table of HALTPOOL_* variables and the runtime's own table
// cannot drift apart: every variable the runtime reads is in the README with
// its default, and the README names no variable the runtime does not read.

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/config.h"

namespace haltpool {
namespace {

std::string g_readme_path;

std::string ReadReadme() {
  std::ifstream in(g_readme_path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ReadmeVariables, EveryVariableHasARowWithItsDefault) {
  const std::string readme = ReadReadme();
  ASSERT_FALSE(readme.empty()) << "cannot read " << g_readme_path;
  for (const VariableDoc& v : DocumentedVariables()) {
    const std::string row =
        absl::StrCat("| `", v.name, "` | `", v.default_value, "` |");
    EXPECT_NE(readme.find(row), std::string::npos)
        << "README.md lacks the row start: " << row;
  }
}

TEST(ReadmeVariables, ReadmeNamesNoUnknownVariable) {
  std::string readme = ReadReadme();
  // The table of bad inputs names unknown variables on purpose.
  const size_t bad = readme.find("### Bad inputs");
  if (bad != std::string::npos) {
    const size_t next = readme.find("\n#", bad + 1);
    readme.erase(bad, next == std::string::npos ? next : next - bad);
  }
  std::set<std::string> known;
  for (const VariableDoc& v : DocumentedVariables())
    known.insert(std::string(v.name));
  const std::regex name("HALTPOOL_[A-Z_]+[A-Z]");
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), name);
       it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE(known.count(it->str())) << "README.md names " << it->str()
                                        << ", which the runtime does not read";
  }
}

}  // namespace
}  // namespace haltpool

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc > 1) haltpool::g_readme_path = argv[1];
  return RUN_ALL_TESTS();
}
