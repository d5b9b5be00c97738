// The README's table of profiles and idle/profile.cc cannot drift apart:
// every profile has its row with the same values.

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "arch/hypervisor.h"
#include "gtest/gtest.h"
#include "idle/profile.h"

namespace haltpool {
namespace {

std::string g_readme_path;

std::string Us(int64_t ns) { return absl::StrCat(ns / 1000, " us"); }

TEST(ReadmeProfiles, EveryProfileHasItsRow) {
  std::ifstream in(g_readme_path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string readme = ss.str();
  ASSERT_FALSE(readme.empty()) << "cannot read " << g_readme_path;
  for (const idle::Profile& p : idle::AllProfiles()) {
    const std::string row = absl::StrCat(
        "| `", arch::HostEnvironmentName(p.environment), "` | `", p.governor,
        "` | ", Us(p.poll_ns), " | ", Us(p.block_exit_latency_ns), " | ",
        Us(p.block_target_residency_ns), " |\n");
    EXPECT_NE(readme.find(row), std::string::npos)
        << "README.md lacks the row: " << row;
  }
}

}  // namespace
}  // namespace haltpool

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc > 1) haltpool::g_readme_path = argv[1];
  return RUN_ALL_TESTS();
}
