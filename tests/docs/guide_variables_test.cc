// docs/USING.md tells when to change each HALTPOOL_* variable: its table has
// a row for every variable the runtime reads, and it names no other
// HALTPOOL_* variable (CMake's -DHALTPOOL_* options aside).

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/tunables.h"

namespace haltpool {
namespace {

std::string g_guide_path;

std::string ReadGuide() {
  std::ifstream in(g_guide_path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(GuideVariables, EveryVariableHasARow) {
  const std::string guide = ReadGuide();
  ASSERT_FALSE(guide.empty()) << "cannot read " << g_guide_path;
  for (const Tunable& t : Tunables()) {
    EXPECT_NE(guide.find(absl::StrCat("| `", t.variable, "` |")),
              std::string::npos)
        << "docs/USING.md has no row for " << t.variable;
  }
}

TEST(GuideVariables, GuideNamesNoUnknownVariable) {
  const std::string guide = ReadGuide();
  const std::regex name("HALTPOOL_[A-Z_]+[A-Z]");
  for (auto it = std::sregex_iterator(guide.begin(), guide.end(), name);
       it != std::sregex_iterator(); ++it) {
    // -DHALTPOOL_BUILD_TESTS=OFF and the like are CMake options.
    if (it->position() >= 2 && guide.compare(it->position() - 2, 2, "-D") == 0)
      continue;
    EXPECT_NE(FindTunable(it->str()), nullptr)
        << "docs/USING.md names " << it->str()
        << ", which the runtime does not read";
  }
}

}  // namespace
}  // namespace haltpool

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc > 1) haltpool::g_guide_path = argv[1];
  return RUN_ALL_TESTS();
}
