// The contention readers (arch/contention_signals.h): procs_running parsed
// from /proc/stat contents, refused when missing or malformed; the thread's
// involuntary switches read from the kernel.

#include "arch/contention_signals.h"

#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace haltpool::arch {
namespace {

constexpr char kProcStat[] =
    "cpu  4705 356 584 3699 23 23 0 0 0 0\n"
    "cpu0 1393 280 283 1847 3 0 0 0 0 0\n"
    "intr 114930548 113199788 3 0 5 263 0 4 [... 23 more]\n"
    "ctxt 1990473\n"
    "btime 1062191376\n"
    "processes 2915\n"
    "procs_running 3\n"
    "procs_blocked 0\n";

TEST(ContentionSignals, ProcsRunningFromProcStat) {
  absl::StatusOr<int64_t> n = ParseProcsRunning(kProcStat);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 3);
}

TEST(ContentionSignals, MissingOrBadProcsRunningIsAnError) {
  for (const std::string& bad :
       {std::string("cpu  1 2 3 4 5 6 7 8\n"), std::string("procs_running x\n"),
        std::string("procs_running -2\n"), std::string("")}) {
    absl::StatusOr<int64_t> n = ParseProcsRunning(bad);
    ASSERT_FALSE(n.ok()) << bad;
    EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(n.status().message().find("/proc/stat"), std::string::npos);
  }
}

TEST(ContentionSignals, TheRealProcStatHasIt) {
  absl::StatusOr<std::string> stat = RealSystemFiles().Read("/proc/stat");
  ASSERT_TRUE(stat.ok()) << stat.status();
  absl::StatusOr<int64_t> n = ParseProcsRunning(*stat);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_GE(*n, 1);  // This thread is running.
}

TEST(ContentionSignals, InvoluntarySwitchesNeverGoBack) {
  const int64_t a = ThreadInvoluntarySwitches();
  const int64_t b = ThreadInvoluntarySwitches();
  EXPECT_GE(a, 0);
  EXPECT_GE(b, a);
}

}  // namespace
}  // namespace haltpool::arch
