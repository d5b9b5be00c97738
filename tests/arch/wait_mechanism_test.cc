// Wait mechanisms by name (arch/wait_mechanism.h): the names operators type
// in HALTPOOL_WAIT.

#include "arch/wait_mechanism.h"

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace haltpool::arch {
namespace {

using ::testing::HasSubstr;

TEST(WaitMechanismNames, EveryNameRoundTrips) {
  std::set<std::string> seen;
  for (WaitMechanism m : kAllWaitMechanisms) {
    const std::string name(WaitMechanismName(m));
    EXPECT_TRUE(seen.insert(name).second) << "duplicate name " << name;
    const std::optional<WaitMechanism> parsed = kWaitMechanisms.Parse(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(*parsed, m) << name;
  }
  EXPECT_EQ(seen.size(), kAllWaitMechanisms.size());
}

TEST(WaitMechanismNames, AreTheDocumentedOnesInDeclarationOrder) {
  std::vector<std::string> names;
  for (WaitMechanism m : kAllWaitMechanisms) {
    names.emplace_back(WaitMechanismName(m));
  }
  EXPECT_THAT(names, ::testing::ElementsAre("spin", "pause", "umwait", "tpause",
                                            "mwaitx", "yield", "wfe", "wfet"));
  EXPECT_EQ(kWaitMechanisms.Names(), absl::StrJoin(names, "|"));
}

TEST(WaitMechanismNames, JunkIsNoName) {
  for (const char* junk : {"", "auto", "SPIN", "Pause", " spin", "spin ",
                           "mwait", "wfe2", "umwait|tpause", "x", "\n"}) {
    EXPECT_FALSE(kWaitMechanisms.Parse(junk).has_value())
        << "'" << junk << "' was accepted";
  }
}

TEST(WaitMechanismNames, AnOutOfRangeValueHasAName) {
  // Defensive: a value outside the enum prints as something, not garbage.
  EXPECT_EQ(WaitMechanismName(static_cast<WaitMechanism>(200)), "unknown");
}

}  // namespace
}  // namespace haltpool::arch
