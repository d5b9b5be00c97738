// HaltpollGovernor against the rules of the kernel's
// drivers/cpuidle/governors/haltpoll.c (haltpoll_select, haltpoll_reflect,
// adjust_poll_limit) and poll_state.c (dev->poll_time_limit), rule by rule
// and then against a line-by-line model of the kernel code on random
// sequences of idle periods.

#include "idle/haltpoll_governor.h"

#include <cstdint>
#include <random>
#include <string>

#include "arch/cycle_clock.h"
#include "gtest/gtest.h"
#include "idle/governor.h"
#include "idle/idle_state.h"

namespace haltpool::idle {
namespace {

constexpr IdleContext kContext{1000000, arch::kNoDeadline};

// The kernel's defaults, spelled out so a change of the port's defaults is
// caught here (module_param defaults in haltpoll.c).
constexpr int64_t kKernelPollNs = 200000;
constexpr int64_t kKernelGrow = 2;
constexpr int64_t kKernelGrowStart = 50000;
constexpr int64_t kKernelShrink = 2;

// One block of `ns` reported to `g`, as the idle loop would: Select must
// have chosen the block state first.
void Block(HaltpollGovernor& g, int64_t ns, IdleExit exit = IdleExit::kWoken) {
  g.Reflect(kBlockState, ns, exit);
}

// Drives `g` from window 0 to `window` using only block periods; `window`
// must be reachable (0, grow_start, grow_start*grow, ... capped).
void GrowTo(HaltpollGovernor& g, const HaltpollParams& p, int64_t window) {
  for (int i = 0; i < 64 && g.poll_limit_ns() < window; ++i) {
    Block(g, p.poll_ns);  // Longer than any window below the cap, <= cap.
  }
  ASSERT_EQ(g.poll_limit_ns(), window);
}

TEST(HaltpollGovernorRules, DefaultsAreTheKernels) {
  const HaltpollParams p;
  EXPECT_EQ(p.poll_ns, kKernelPollNs);
  EXPECT_EQ(p.grow, kKernelGrow);
  EXPECT_EQ(p.grow_start, kKernelGrowStart);
  EXPECT_EQ(p.shrink, kKernelShrink);
  EXPECT_TRUE(p.allow_shrink);
}

TEST(HaltpollGovernorRules, NameIsHaltpoll) {
  HaltpollGovernor g{HaltpollParams{}};
  EXPECT_EQ(g.name(), "haltpoll");
}

TEST(HaltpollGovernorRules, WindowStartsAtZeroAndFirstSelectBlocks) {
  HaltpollGovernor g{HaltpollParams{}};
  EXPECT_EQ(g.poll_limit_ns(), 0);
  EXPECT_EQ(g.Select(kContext).state, kBlockState);
  // Selecting does not change anything by itself.
  EXPECT_EQ(g.Select(kContext).state, kBlockState);
  EXPECT_EQ(g.poll_limit_ns(), 0);
}

TEST(HaltpollGovernorRules, WindowZeroBlocksEvenAfterAWokenPoll) {
  // dev->poll_limit_ns == 0 returns state 1 before looking at the last state.
  HaltpollGovernor g{HaltpollParams{}};
  g.Reflect(kPollState, 10, IdleExit::kWoken);
  EXPECT_EQ(g.Select(kContext).state, kBlockState);
}

TEST(HaltpollGovernorRules, FirstGrowthIsGrowStart) {
  HaltpollGovernor g{HaltpollParams{}};
  Block(g, 1);  // > window 0, <= cap.
  EXPECT_EQ(g.poll_limit_ns(), kKernelGrowStart);
}

TEST(HaltpollGovernorRules, GrowthMultipliesByGrow) {
  HaltpollGovernor g{HaltpollParams{}};
  Block(g, 60000);
  ASSERT_EQ(g.poll_limit_ns(), 50000);
  Block(g, 50001);  // Just longer than the window.
  EXPECT_EQ(g.poll_limit_ns(), 100000);
}

TEST(HaltpollGovernorRules, GrowthIsCappedAtPollNs) {
  HaltpollGovernor g{HaltpollParams{}};
  GrowTo(g, HaltpollParams{}, 100000);
  Block(g, 150000);  // 100000 * 2 = 200000 == cap.
  EXPECT_EQ(g.poll_limit_ns(), 200000);
  HaltpollParams p;
  p.grow = 3;
  HaltpollGovernor g3{p};
  GrowTo(g3, p, 150000);
  Block(g3, 160000);  // 150000 * 3 = 450000, capped.
  EXPECT_EQ(g3.poll_limit_ns(), p.poll_ns);
}

TEST(HaltpollGovernorRules, BlockExactlyAtTheCapStillGrows) {
  // block_ns <= guest_halt_poll_ns: the cap itself is inside the grow band.
  HaltpollGovernor g{HaltpollParams{}};
  GrowTo(g, HaltpollParams{}, 50000);
  Block(g, kKernelPollNs);
  EXPECT_EQ(g.poll_limit_ns(), 100000);
}

TEST(HaltpollGovernorRules, GrowIsAtLeastGrowStart) {
  // grow = 1 never multiplies the window past grow_start, but the first
  // growth still jumps to grow_start.
  HaltpollParams p;
  p.grow = 1;
  HaltpollGovernor g{p};
  Block(g, 1000);
  EXPECT_EQ(g.poll_limit_ns(), p.grow_start);
  Block(g, p.grow_start + 1);
  EXPECT_EQ(g.poll_limit_ns(), p.grow_start);
}

TEST(HaltpollGovernorRules, GrowStartAboveCapIsCapped) {
  HaltpollParams p;
  p.poll_ns = 30000;
  p.grow_start = 50000;
  HaltpollGovernor g{p};
  Block(g, 20000);
  EXPECT_EQ(g.poll_limit_ns(), 30000);
}

TEST(HaltpollGovernorRules, BlockNoLongerThanTheWindowChangesNothing) {
  HaltpollGovernor g{HaltpollParams{}};
  GrowTo(g, HaltpollParams{}, 100000);
  Block(g, 100000);  // Equal: not longer.
  EXPECT_EQ(g.poll_limit_ns(), 100000);
  Block(g, 1);
  EXPECT_EQ(g.poll_limit_ns(), 100000);
  Block(g, 0);
  EXPECT_EQ(g.poll_limit_ns(), 100000);
}

TEST(HaltpollGovernorRules, WindowAtTheCapStaysForBlocksUpToTheCap) {
  HaltpollGovernor g{HaltpollParams{}};
  GrowTo(g, HaltpollParams{}, 200000);
  Block(g, 200000);
  EXPECT_EQ(g.poll_limit_ns(), 200000);
}

TEST(HaltpollGovernorRules, BlockLongerThanTheCapShrinks) {
  HaltpollGovernor g{HaltpollParams{}};
  GrowTo(g, HaltpollParams{}, 200000);
  Block(g, 200001);
  EXPECT_EQ(g.poll_limit_ns(), 100000);
  Block(g, 5000000);
  EXPECT_EQ(g.poll_limit_ns(), 50000);  // == grow_start: kept.
  Block(g, 5000000);
  EXPECT_EQ(g.poll_limit_ns(), 0);  // 25000 < grow_start: reset.
  EXPECT_EQ(g.Select(kContext).state, kBlockState);
}

TEST(HaltpollGovernorRules, ShrinkOfZeroWindowStaysZero) {
  HaltpollGovernor g{HaltpollParams{}};
  Block(g, 1000000000);
  EXPECT_EQ(g.poll_limit_ns(), 0);
}

TEST(HaltpollGovernorRules, ShrinkZeroResetsTheWindow) {
  HaltpollParams p;
  p.shrink = 0;
  HaltpollGovernor g{p};
  GrowTo(g, p, 200000);
  Block(g, 200001);
  EXPECT_EQ(g.poll_limit_ns(), 0);
}

TEST(HaltpollGovernorRules, DisallowedShrinkKeepsTheWindow) {
  HaltpollParams p;
  p.allow_shrink = false;
  HaltpollGovernor g{p};
  GrowTo(g, p, 200000);
  Block(g, 10000000);
  EXPECT_EQ(g.poll_limit_ns(), 200000);
  // Growth still works.
  HaltpollGovernor g2{p};
  Block(g2, 1000);
  EXPECT_EQ(g2.poll_limit_ns(), p.grow_start);
}

TEST(HaltpollGovernorRules, BlockEndedByTheDeadlineAdjustsToo) {
  // The kernel adjusts on every exit from state 1, whatever ended it.
  HaltpollGovernor g{HaltpollParams{}};
  Block(g, 1000, IdleExit::kDeadline);
  EXPECT_EQ(g.poll_limit_ns(), kKernelGrowStart);
}

TEST(HaltpollGovernorRules, AfterABlockItPollsTheWindow) {
  HaltpollGovernor g{HaltpollParams{}};
  Block(g, 1000);
  const Selection s = g.Select(kContext);
  EXPECT_EQ(s.state, kPollState);
  EXPECT_EQ(s.poll_limit_ns, kKernelGrowStart);
}

TEST(HaltpollGovernorRules, PollEndedByAWakeChangesNothingAndPollsAgain) {
  HaltpollGovernor g{HaltpollParams{}};
  GrowTo(g, HaltpollParams{}, 100000);
  for (int64_t residency :
       {int64_t{0}, int64_t{99999}, int64_t{100000}, int64_t{5000000}}) {
    ASSERT_EQ(g.Select(kContext).state, kPollState);
    g.Reflect(kPollState, residency, IdleExit::kWoken);
    EXPECT_EQ(g.poll_limit_ns(), 100000) << "poll of " << residency << " ns";
    const Selection s = g.Select(kContext);
    EXPECT_EQ(s.state, kPollState);
    EXPECT_EQ(s.poll_limit_ns, 100000);
  }
}

TEST(HaltpollGovernorRules, PollThatRanOutItsWindowIsFollowedByABlock) {
  HaltpollGovernor g{HaltpollParams{}};
  GrowTo(g, HaltpollParams{}, 100000);
  ASSERT_EQ(g.Select(kContext).state, kPollState);
  g.Reflect(kPollState, 100000, IdleExit::kTimeout);
  EXPECT_EQ(g.poll_limit_ns(), 100000) << "a poll never adjusts the window";
  EXPECT_EQ(g.Select(kContext).state, kBlockState);
  // Asking again (the loop re-selects) still blocks.
  EXPECT_EQ(g.Select(kContext).state, kBlockState);
  // The block that follows ends the poll_time_limit episode: poll again.
  Block(g, 10);
  EXPECT_EQ(g.Select(kContext).state, kPollState);
}

TEST(HaltpollGovernorRules, PollEndedByTheCallersDeadlineIsNotATimeout) {
  // Only running out the window sets poll_time_limit (poll_state.c).
  HaltpollGovernor g{HaltpollParams{}};
  GrowTo(g, HaltpollParams{}, 100000);
  g.Reflect(kPollState, 30000, IdleExit::kDeadline);
  EXPECT_EQ(g.Select(kContext).state, kPollState);
  EXPECT_EQ(g.poll_limit_ns(), 100000);
}

TEST(HaltpollGovernorRules, WokenPollAfterATimedOutPollPollsAgain) {
  HaltpollGovernor g{HaltpollParams{}};
  GrowTo(g, HaltpollParams{}, 50000);
  g.Reflect(kPollState, 50000, IdleExit::kTimeout);
  ASSERT_EQ(g.Select(kContext).state, kBlockState);
  // A poll reported after all (the flag is per poll, not sticky).
  g.Reflect(kPollState, 10, IdleExit::kWoken);
  EXPECT_EQ(g.Select(kContext).state, kPollState);
}

TEST(HaltpollGovernorRules, SelectionIgnoresTheDeadline) {
  // haltpoll looks at no timer: a near deadline does not change the choice
  // (the idle loop clips the poll to the deadline instead).
  HaltpollGovernor g{HaltpollParams{}};
  GrowTo(g, HaltpollParams{}, 50000);
  const Selection s = g.Select({1000, 1001});
  EXPECT_EQ(s.state, kPollState);
  EXPECT_EQ(s.poll_limit_ns, 50000);
}

TEST(HaltpollGovernorRules, CustomParameters) {
  HaltpollParams p;
  p.poll_ns = 1000000;
  p.grow = 4;
  p.grow_start = 10000;
  p.shrink = 8;
  HaltpollGovernor g{p};
  Block(g, 5);
  EXPECT_EQ(g.poll_limit_ns(), 10000);
  Block(g, 10001);
  EXPECT_EQ(g.poll_limit_ns(), 40000);
  Block(g, 40001);
  EXPECT_EQ(g.poll_limit_ns(), 160000);
  Block(g, 1000000);
  EXPECT_EQ(g.poll_limit_ns(), 640000);
  Block(g, 700000);
  EXPECT_EQ(g.poll_limit_ns(), 1000000);  // 2560000 capped.
  Block(g, 1000001);
  EXPECT_EQ(g.poll_limit_ns(), 125000);
  Block(g, 1000001);
  EXPECT_EQ(g.poll_limit_ns(), 15625);  // >= grow_start: kept.
  Block(g, 1000001);
  EXPECT_EQ(g.poll_limit_ns(), 0);  // 1953 < grow_start.
}

TEST(HaltpollGovernorRules, ZeroCapNeverPolls) {
  HaltpollParams p;
  p.poll_ns = 0;
  HaltpollGovernor g{p};
  for (int64_t ns : {int64_t{0}, int64_t{1}, int64_t{100000}}) {
    Block(g, ns);
    EXPECT_EQ(g.poll_limit_ns(), 0);
    EXPECT_EQ(g.Select(kContext).state, kBlockState);
  }
}

// The kernel's code, transcribed: struct cpuidle_device's three fields and
// the module parameters, with poll_idle()'s setting of poll_time_limit.
class KernelHaltpollModel {
 public:
  explicit KernelHaltpollModel(const HaltpollParams& p) : p_(p) {}

  // haltpoll_select()
  int Select() const {
    if (poll_limit_ns_ == 0) return 1;
    if (last_state_idx_ == 0) {
      if (poll_time_limit_) return 1;
      return 0;
    }
    return 0;
  }

  // poll_idle() sets poll_time_limit; haltpoll_reflect() then adjusts.
  void Reflect(int index, int64_t residency_ns, IdleExit exit) {
    if (index == 0) poll_time_limit_ = exit == IdleExit::kTimeout;
    last_state_idx_ = index;
    if (index != 0) AdjustPollLimit(residency_ns);
  }

  int64_t poll_limit_ns() const { return poll_limit_ns_; }

 private:
  void AdjustPollLimit(int64_t block_ns) {
    int64_t val;
    if (block_ns > poll_limit_ns_ && block_ns <= p_.poll_ns) {
      val = poll_limit_ns_ * p_.grow;
      if (val < p_.grow_start) val = p_.grow_start;
      if (val > p_.poll_ns) val = p_.poll_ns;
      poll_limit_ns_ = val;
    } else if (block_ns > p_.poll_ns && p_.allow_shrink) {
      const int64_t shrink = p_.shrink;
      val = poll_limit_ns_;
      if (shrink == 0) {
        val = 0;
      } else {
        val /= shrink;
        if (val < p_.grow_start) val = 0;
      }
      poll_limit_ns_ = val;
    }
  }

  HaltpollParams p_;
  int64_t poll_limit_ns_ = 0;  // haltpoll_enable_device()
  int last_state_idx_ = 0;     // The device struct starts zeroed.
  bool poll_time_limit_ = false;
};

struct ModelCase {
  std::string name;
  HaltpollParams params;
};

class HaltpollGovernorModel : public ::testing::TestWithParam<ModelCase> {};

// Block lengths that sit on every boundary the rules test, plus noise.
int64_t PickBlockNs(std::mt19937_64& rng, int64_t window, int64_t cap) {
  switch (rng() % 8) {
    case 0:
      return window;
    case 1:
      return window + 1;
    case 2:
      return cap;
    case 3:
      return cap + 1;
    case 4:
      return window > 0 ? static_cast<int64_t>(rng() % window) : 0;
    default:
      return static_cast<int64_t>(rng() % (3 * cap + 2));
  }
}

TEST_P(HaltpollGovernorModel, MatchesTheKernelOnRandomSequences) {
  const HaltpollParams& p = GetParam().params;
  HaltpollGovernor g{p};
  KernelHaltpollModel k{p};
  std::mt19937_64 rng(42);
  int polls = 0, blocks = 0;
  for (int step = 0; step < 20000; ++step) {
    const Selection s = g.Select(kContext);
    ASSERT_EQ(s.state, k.Select()) << "step " << step;
    ASSERT_EQ(g.poll_limit_ns(), k.poll_limit_ns()) << "step " << step;
    if (s.state == kPollState) {
      ++polls;
      ASSERT_EQ(s.poll_limit_ns, k.poll_limit_ns()) << "step " << step;
      const IdleExit exit = static_cast<IdleExit>(rng() % 3);
      const int64_t ns =
          exit == IdleExit::kTimeout
              ? s.poll_limit_ns
              : static_cast<int64_t>(rng() % (s.poll_limit_ns + 1));
      g.Reflect(kPollState, ns, exit);
      k.Reflect(0, ns, exit);
    } else {
      ++blocks;
      const int64_t ns = PickBlockNs(rng, g.poll_limit_ns(), p.poll_ns);
      const IdleExit exit = rng() % 4 ? IdleExit::kWoken : IdleExit::kDeadline;
      g.Reflect(kBlockState, ns, exit);
      k.Reflect(1, ns, exit);
    }
    ASSERT_EQ(g.poll_limit_ns(), k.poll_limit_ns()) << "step " << step;
  }
  // The sequence must have exercised both states, or it proved little.
  if (p.grow_start == 0) {
    // 0 * grow is never below grow_start: the window stays 0, as in the
    // kernel with guest_halt_poll_grow_start=0.
    EXPECT_EQ(polls, 0);
  } else {
    EXPECT_GT(polls, 1000);
  }
  EXPECT_GT(blocks, 1000);
}

HaltpollParams Params(int64_t poll_ns, int64_t grow, int64_t grow_start,
                      int64_t shrink, bool allow_shrink) {
  HaltpollParams p;
  p.poll_ns = poll_ns;
  p.grow = grow;
  p.grow_start = grow_start;
  p.shrink = shrink;
  p.allow_shrink = allow_shrink;
  return p;
}

INSTANTIATE_TEST_SUITE_P(
    Params, HaltpollGovernorModel,
    ::testing::Values(
        ModelCase{"KernelDefaults", HaltpollParams{}},
        ModelCase{"Grow3Shrink3", Params(1000000, 3, 7000, 3, true)},
        ModelCase{"ShrinkZero", Params(200000, 2, 50000, 0, true)},
        ModelCase{"NoShrink", Params(200000, 2, 50000, 2, false)},
        ModelCase{"GrowOne", Params(400000, 1, 100000, 2, true)},
        ModelCase{"GrowStartZero", Params(200000, 2, 0, 2, true)},
        ModelCase{"GrowStartAboveCap", Params(30000, 2, 50000, 2, true)},
        ModelCase{"BigFactors", Params(1000000000, 1024, 1, 1024, true)}),
    [](const ::testing::TestParamInfo<ModelCase>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace haltpool::idle
