// The thread's involuntary switches (arch/contention_signals.h).

#include "arch/contention_signals.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace haltpool::arch {
namespace {

TEST(ContentionSignals, InvoluntarySwitchesNeverGoBack) {
  const int64_t a = ThreadInvoluntarySwitches();
  const int64_t b = ThreadInvoluntarySwitches();
  EXPECT_GE(a, 0);
  EXPECT_GE(b, a);
}

}  // namespace
}  // namespace haltpool::arch
