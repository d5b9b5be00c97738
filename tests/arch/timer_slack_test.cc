// SetThreadTimerSlackNs (arch/timer_slack.h): it sets this thread's slack
// and no other's, and refuses 0 and negatives.

#include "arch/timer_slack.h"

#include <thread>

#include "gtest/gtest.h"

namespace haltpool::arch {
namespace {

TEST(TimerSlack, SetsTheCallingThreadsOnly) {
  int64_t other = 0;
  std::thread t([&] {
    ASSERT_TRUE(SetThreadTimerSlackNs(1).ok());
    EXPECT_EQ(ThreadTimerSlackNs(), 1);
  });
  t.join();
  std::thread u([&] { other = ThreadTimerSlackNs(); });
  u.join();
  EXPECT_GT(other, 1) << "a new thread inherits the creator's slack";
}

TEST(TimerSlack, RefusesZeroAndNegative) {
  for (int64_t bad : {int64_t{0}, int64_t{-5}}) {
    const absl::Status s = SetThreadTimerSlackNs(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("accepted: 1 ns or more"), std::string::npos);
  }
}

}  // namespace
}  // namespace haltpool::arch
