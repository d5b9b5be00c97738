// bench/wake_channels: every pair contender passes every wake through, at
// a spinning gap, a sleeping gap and no gap at all, so a lost wake hangs
// the test (and ThreadSanitizer sees the handshakes it can instrument).

#include "bench/wake_channels.h"

#include <functional>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "idle/idle_options.h"

namespace haltpool::bench {
namespace {

struct ChannelCase {
  std::string name;
  std::function<std::unique_ptr<WakeChannel>()> make;
  // Abseil's Mutex and oneTBB synchronize inside Debian's uninstrumented
  // libraries, where ThreadSanitizer cannot see it.
  bool uninstrumented = false;
};

std::unique_ptr<WakeChannel> Parker(const std::string& governor) {
  idle::IdleOptions o;
  o.governor = governor;
  absl::StatusOr<std::unique_ptr<WakeChannel>> c = MakeParkerChannel(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

class WakeChannelsTest : public testing::TestWithParam<ChannelCase> {};

TEST_P(WakeChannelsTest, EveryWakeArrives) {
#if defined(__SANITIZE_THREAD__)
  if (GetParam().uninstrumented) {
    GTEST_SKIP() << GetParam().name
                 << " synchronizes where ThreadSanitizer cannot see";
  }
#endif
  std::unique_ptr<WakeChannel> channel = GetParam().make();
  ASSERT_NE(channel, nullptr);
  for (int64_t gap_ns : {int64_t{0}, int64_t{20000}, int64_t{300000}}) {
    const WakePoint p = MeasurePair(*channel, gap_ns, 20);
    EXPECT_EQ(p.samples, 20) << "gap " << gap_ns;
    EXPECT_GT(p.mean_us, 0) << "gap " << gap_ns;
    EXPECT_GE(p.cpu, 0) << "gap " << gap_ns;
  }
}

TEST(WakeChannels, BadParkerOptionsAreAnError) {
  idle::IdleOptions o;
  o.governor = "sometimes";
  absl::StatusOr<std::unique_ptr<WakeChannel>> c = MakeParkerChannel(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("sometimes"), std::string::npos)
      << c.status();
}

INSTANTIATE_TEST_SUITE_P(
    All, WakeChannelsTest,
    testing::Values(
        ChannelCase{"parker_haltpoll", [] { return Parker("haltpoll"); }},
        ChannelCase{"parker_predictive", [] { return Parker("predictive"); }},
        ChannelCase{"parker_block", [] { return Parker("block"); }},
        ChannelCase{"semaphore", MakeSemaphoreChannel},
        ChannelCase{"atomic_wait", MakeAtomicWaitChannel},
        ChannelCase{"absl_condvar", MakeAbslCondVarChannel, true},
        ChannelCase{"std_condvar", MakeStdCondVarChannel},
        ChannelCase{"spin_then_futex",
                    [] { return MakeSpinThenFutexChannel(2000); }},
        ChannelCase{"tbb_queue", MakeTbbQueueChannel, true}),
    [](const testing::TestParamInfo<ChannelCase>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace haltpool::bench
