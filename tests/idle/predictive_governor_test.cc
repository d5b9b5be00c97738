// PredictiveGovernor (idle/predictive_governor.h) rule by rule, first by its
// selections and then driven through the real idle loop (RunIdle) on a fake
// clock, with wakes at chosen times and blocks that end late by a chosen
// lateness, as a timed FUTEX_WAIT does under timer slack and a hypervisor.

#include "idle/predictive_governor.h"

#include <cstdint>
#include <memory>

#include "arch/cycle_clock.h"
#include "gtest/gtest.h"
#include "idle/governor.h"
#include "idle/governor_registry.h"
#include "idle/idle_loop.h"
#include "idle/idle_options.h"
#include "idle/idle_state.h"
#include "idle/idle_stats.h"
#include "tests/idle/fake_clock.h"

namespace haltpool::idle {
namespace {

using fakes::FakeClock;

constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1000000;
constexpr int64_t kNever = arch::kNoDeadline;

// Rule 0 is off, so that the tests of rules 1 to 5 see each rule alone;
// rule 0's tests turn it on.
PredictiveParams Params() {
  return PredictiveParams{.poll_ns = 200 * kUs,
                          .block_exit_latency_ns = 6 * kUs,
                          .block_target_residency_ns = 12 * kUs,
                          .wake_margin_ns = 6 * kUs,
                          .dense_poll_ns = 0};
}

// One idle period through RunIdle: a wake comes at `wake_at_ns` (kNever:
// none); a block that reaches its limit ends `lateness_ns` after it (a
// timer's lateness), a wake during a block (its lateness included) is seen
// the block state's exit latency after it comes (a FUTEX_WAKE's cost), and
// polls see it at once.
struct Waiter {
  explicit Waiter(const PredictiveParams& params = Params())
      : governor(params),
        states(MakeStateTable(params.block_exit_latency_ns,
                              params.block_target_residency_ns)) {}

  IdleResult Idle(int64_t deadline_ns, int64_t wake_at_ns,
                  int64_t lateness_ns = 0,
                  int64_t poll_cap_ns = kUnlimitedPollNs) {
    last_state = -1;
    const IdleDevice dev{&governor, &states, &counters, &clock};
    auto poll = [&](int64_t until_ns) {
      last_state = kPollState;
      if (wake_at_ns <= until_ns) {
        clock.AdvanceTo(wake_at_ns);
        return true;
      }
      clock.AdvanceTo(until_ns);
      return false;
    };
    auto block = [&](int64_t until_ns) {
      last_state = kBlockState;
      // The block sleeps until its limit plus the lateness: a wake before
      // that ends it, even one after the limit.
      const int64_t sleeps_until =
          until_ns > kNever - lateness_ns ? kNever : until_ns + lateness_ns;
      if (wake_at_ns <= sleeps_until) {
        clock.AdvanceTo(wake_at_ns + states[kBlockState].exit_latency_ns);
        return true;
      }
      clock.AdvanceTo(sleeps_until);
      return false;
    };
    return RunIdle(dev, deadline_ns, poll, block, /*allow_poll=*/true,
                   poll_cap_ns);
  }

  IdleStats Stats() const {
    IdleStats s;
    counters.Snapshot(s);
    return s;
  }

  PredictiveGovernor governor;
  StateTable states;
  IdleCounters counters;
  FakeClock clock;
  int last_state = -1;  // The state the last period ended in.
};

TEST(PredictiveGovernorRules, TheRegistryMakesItFromTheOptions) {
  IdleOptions o;
  o.governor = "predictive";
  absl::StatusOr<std::unique_ptr<Governor>> g = MakeGovernor(o);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->name(), "predictive");
}

TEST(PredictiveGovernorRules, TheRegistryGivesItTheFirstWakeMargin) {
  IdleOptions o;
  o.governor = "predictive";
  o.wake_margin_ns = 33 * kUs;
  absl::StatusOr<std::unique_ptr<Governor>> g = MakeGovernor(o);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(static_cast<PredictiveGovernor&>(**g).wake_margin_ns(), 33 * kUs);
}

TEST(PredictiveGovernorRules, WithNothingToGoOnItBlocksUntilWoken) {
  PredictiveGovernor g(Params());
  const Selection s = g.Select({1 * kMs, kNever});
  EXPECT_EQ(s.state, kBlockState);
  EXPECT_EQ(s.block_until_ns, kBlockUntilDeadline);
}

TEST(PredictiveGovernorRules, AFarTimerBlocksUntilTheMarginBeforeIt) {
  PredictiveGovernor g(Params());
  const Selection s = g.Select({1 * kMs, 2 * kMs});
  EXPECT_EQ(s.state, kBlockState);
  EXPECT_EQ(g.wake_margin_ns(), 6 * kUs);  // The first margin, as given.
  EXPECT_EQ(s.block_until_ns, 2 * kMs - 6 * kUs);
}

TEST(PredictiveGovernorRules, TheFirstMarginHoldsUntilABlockRunsOut) {
  PredictiveParams params = Params();
  params.wake_margin_ns = 45 * kUs;  // A calibration's measured lateness.
  Waiter w(params);
  constexpr int64_t kLate = 30 * kUs;
  // The first far timer: the block ends 45 us before it and, 30 us late,
  // still 15 us before it; the poll after it meets the timer.
  const int64_t deadline = w.clock.NowNs() + 1 * kMs;
  const Selection s = w.governor.Select({w.clock.NowNs(), deadline});
  EXPECT_EQ(s.block_until_ns, deadline - 45 * kUs);
  w.governor.Reflect(s.state, s.block_until_ns + kLate - w.clock.NowNs(),
                     IdleExit::kTimeout);
  // From its first lateness sample on, the margin is learned.
  EXPECT_EQ(w.governor.wake_margin_ns(), kLate);
}

TEST(PredictiveGovernorRules, AfterTheLimitedBlockItPollsUntilTheTimer) {
  PredictiveGovernor g(Params());
  const Selection b = g.Select({1 * kMs, 2 * kMs});
  g.Reflect(kBlockState, b.block_until_ns - 1 * kMs, IdleExit::kTimeout);
  const Selection p = g.Select({b.block_until_ns, 2 * kMs});
  EXPECT_EQ(p.state, kPollState);
  EXPECT_EQ(p.poll_limit_ns, 2 * kMs - b.block_until_ns);
  EXPECT_EQ(g.poll_limit_ns(), p.poll_limit_ns);
}

TEST(PredictiveGovernorRules, ATimerTooCloseToBlockForIsPolledFor) {
  PredictiveGovernor g(Params());
  // 15 us away: the block would last 9 us, under the 12 us residency.
  const Selection s = g.Select({1 * kMs, 1 * kMs + 15 * kUs});
  EXPECT_EQ(s.state, kPollState);
  EXPECT_EQ(s.poll_limit_ns, 15 * kUs);
}

TEST(PredictiveGovernorRules, APollIsCapped) {
  PredictiveParams p = Params();
  p.poll_ns = 5 * kUs;
  PredictiveGovernor g(p);
  const Selection s = g.Select({1 * kMs, 1 * kMs + 15 * kUs});
  EXPECT_EQ(s.state, kPollState);
  EXPECT_EQ(s.poll_limit_ns, 5 * kUs);
}

TEST(PredictiveGovernorRules, ItLearnsHowLateABlockEndsAndWakesEarlierByIt) {
  Waiter w;
  constexpr int64_t kLate = 80 * kUs;  // Timer slack plus a VM exit.
  // The first timer is missed: the block ends 80 us late, past the timer.
  int64_t deadline = w.clock.NowNs() + 1 * kMs;
  EXPECT_EQ(w.Idle(deadline, kNever, kLate), IdleResult::kTimedOut);
  EXPECT_GT(w.clock.NowNs(), deadline);
  EXPECT_EQ(w.governor.wake_margin_ns(), kLate);
  for (int i = 0; i < 20; ++i) {
    deadline = w.clock.NowNs() + 1 * kMs;
    w.Idle(deadline, kNever, kLate);
  }
  // Now it blocks until the margin before the timer: the block ends no
  // later than the timer, not 80 us after it.
  EXPECT_EQ(w.governor.wake_margin_ns(), kLate);
  deadline = w.clock.NowNs() + 1 * kMs;
  EXPECT_EQ(w.Idle(deadline, kNever, kLate), IdleResult::kTimedOut);
  EXPECT_EQ(w.clock.NowNs(), deadline);
  EXPECT_EQ(w.governor.hits(), 22u);
  EXPECT_EQ(w.governor.intercepts(), 0u);
}

TEST(PredictiveGovernorRules, TheMarginIsTheNinetiethPercentileOfLateness) {
  Waiter w;
  // Sixteen timers: fourteen blocks 40 us late, one 5 ms (a preempted
  // vCPU), one 60 us. (An outlier among fewer than ten samples would be
  // the margin for a while, and a margin longer than the poll cap makes
  // more blocks, which add samples of their own.)
  for (int i = 0; i < PredictiveGovernor::kLatenessHistory; ++i) {
    const int64_t late = i == 12 ? 5 * kMs : i == 13 ? 60 * kUs : 40 * kUs;
    w.Idle(w.clock.NowNs() + 10 * kMs, kNever, late);
  }
  EXPECT_EQ(w.governor.wake_margin_ns(), 60 * kUs);
  // Blocks that end on time bring it down once they are most of the
  // history.
  for (int i = 0; i < PredictiveGovernor::kLatenessHistory; ++i) {
    w.Idle(w.clock.NowNs() + 10 * kMs, kNever, 0);
  }
  EXPECT_EQ(w.governor.wake_margin_ns(), 0);
}

// Wakes every `period` with no timer, each seen at once if polling.
void RunPeriodic(Waiter& w, int64_t period, int n, int64_t lateness) {
  for (int i = 0; i < n; ++i) {
    const int64_t start = w.clock.NowNs();
    w.Idle(kNever, start + period, lateness);
  }
}

TEST(PredictiveGovernorRules, ItNoticesARegularWakeAndPollsAcrossTheNext) {
  Waiter w;
  constexpr int64_t kLate = 60 * kUs;
  RunPeriodic(w, 1 * kMs, PredictiveGovernor::kHistory, kLate);
  // While learning, each wake came during a block and was seen a FUTEX_WAKE
  // late; the history takes that off.
  EXPECT_EQ(w.governor.predicted_interval_ns(), 1 * kMs);
  EXPECT_EQ(w.last_state, kBlockState);
  RunPeriodic(w, 1 * kMs, 30, kLate);
  // The pattern now has no lateness in it: the wake is met while polling.
  EXPECT_EQ(w.last_state, kPollState);
  // Within a percent: a wake that comes just as a block runs out is
  // counted as seen late.
  EXPECT_NEAR(w.governor.predicted_interval_ns(), 1 * kMs, 10 * kUs);
  const int64_t start = w.clock.NowNs();
  EXPECT_EQ(w.Idle(kNever, start + 1 * kMs, kLate), IdleResult::kWoken);
  EXPECT_EQ(w.clock.NowNs(), start + 1 * kMs);
  EXPECT_EQ(w.last_state, kPollState);
  // It polled only around the wake, not the whole millisecond.
  const IdleStats s = w.Stats();
  EXPECT_GT(s.per_state[kBlockState].time_ns,
            5 * s.per_state[kPollState].time_ns);
}

// Timers later than the margin before a regular wake: every wake finds the
// limited block still asleep past its limit, so no block ever runs out. The
// wakes teach the margin; without that it stays the exit latency and every
// wake costs a FUTEX_WAKE.
TEST(PredictiveGovernorRules, WakesThatFindTheBlockPastItsLimitTeachTheMargin) {
  Waiter w;
  constexpr int64_t kLate = 150 * kUs;  // A bhyve guest's p90 (DESIGN.md).
  constexpr int64_t kPeriod = 500 * kUs;
  RunPeriodic(w, kPeriod, PredictiveGovernor::kHistory, kLate);
  EXPECT_EQ(w.governor.predicted_interval_ns(), kPeriod);
  RunPeriodic(w, kPeriod, 40, kLate);
  EXPECT_GE(w.governor.wake_margin_ns(), kLate);
  const int64_t start = w.clock.NowNs();
  EXPECT_EQ(w.Idle(kNever, start + kPeriod, kLate), IdleResult::kWoken);
  EXPECT_EQ(w.clock.NowNs(), start + kPeriod);  // Met while polling.
  EXPECT_EQ(w.last_state, kPollState);
}

// A margin longer than the wait for a regular wake (taught here by late
// timers, on a host by one bad moment) left no room to block, and the poll
// across the wake, capped, ran out before it: every period ended in an
// unlimited block, and since only a limited block that runs out teaches
// the margin, it stayed. Now it blocks until the cap before the wake, and
// those blocks bring the margin down to the host's real lateness.
TEST(PredictiveGovernorRules, AMarginLongerThanTheWaitIsLearnedAgain) {
  PredictiveParams p = Params();
  p.poll_ns = 50 * kUs;
  Waiter w(p);
  for (int i = 0; i < PredictiveGovernor::kLatenessHistory; ++i) {
    w.Idle(w.clock.NowNs() + 1 * kMs, kNever, 120 * kUs);
  }
  ASSERT_EQ(w.governor.wake_margin_ns(), 120 * kUs);
  constexpr int64_t kPeriod = 100 * kUs;
  constexpr int64_t kLate = 20 * kUs;
  RunPeriodic(w, kPeriod, PredictiveGovernor::kHistory, kLate);
  ASSERT_EQ(w.governor.predicted_interval_ns(), kPeriod);
  RunPeriodic(w, kPeriod, 2 * PredictiveGovernor::kLatenessHistory, kLate);
  // The blocks that run out say 20 us; a wake that comes as the timer
  // fires counts its overrun twice (WakesThatFindTheBlockPastItsLimit...).
  EXPECT_GE(w.governor.wake_margin_ns(), kLate);
  EXPECT_LE(w.governor.wake_margin_ns(), 2 * kLate);
  const int64_t start = w.clock.NowNs();
  EXPECT_EQ(w.Idle(kNever, start + kPeriod, kLate), IdleResult::kWoken);
  EXPECT_EQ(w.clock.NowNs(), start + kPeriod);  // Met while polling.
  EXPECT_EQ(w.last_state, kPollState);
}

// A caller's cap (the pool's back-off) shorter than the poll across a
// wake: the governor plans with it, as rule 3 does with its own cap, and
// blocks until the cap before the wake. Cut short by the loop instead, the
// poll would run out before the wake and the period end in a block.
TEST(PredictiveGovernorRules, ACallersCapIsPlannedWith) {
  Waiter w;
  constexpr int64_t kLate = 80 * kUs;
  for (int i = 0; i < PredictiveGovernor::kLatenessHistory; ++i) {
    w.Idle(w.clock.NowNs() + 1 * kMs, kNever, kLate);
  }
  ASSERT_EQ(w.governor.wake_margin_ns(), kLate);
  // This block is on time, so the margin before the timer is left to poll.
  const int64_t deadline = w.clock.NowNs() + 1 * kMs;
  EXPECT_EQ(
      w.Idle(deadline, kNever, /*lateness_ns=*/0, /*poll_cap_ns=*/10 * kUs),
      IdleResult::kTimedOut);
  EXPECT_EQ(w.clock.NowNs(), deadline);
  EXPECT_EQ(w.last_state, kPollState) << "polling when the timer came";
  EXPECT_EQ(w.governor.poll_limit_ns(), 10 * kUs);
}

// With no poll allowed, a regular wake is waited for in one block: a block
// ahead of it would only end early, and an unlimited block the governor
// took for a limited one would teach it a lateness no timer had.
TEST(PredictiveGovernorRules,
     WithNoPollAllowedItBlocksOnceAndLearnsNothingWrong) {
  Waiter w;
  constexpr int64_t kLate = 60 * kUs;
  constexpr int64_t kPeriod = 1 * kMs;
  RunPeriodic(w, kPeriod, PredictiveGovernor::kHistory + 30, kLate);
  ASSERT_EQ(w.governor.predicted_interval_ns(), kPeriod);
  const int64_t margin = w.governor.wake_margin_ns();
  const uint64_t blocks = w.Stats().per_state[kBlockState].usage;
  const uint64_t polls = w.Stats().per_state[kPollState].usage;
  constexpr int kPeriods = 40;
  for (int i = 0; i < kPeriods; ++i) {
    const int64_t start = w.clock.NowNs();
    EXPECT_EQ(w.Idle(kNever, start + kPeriod, kLate, /*poll_cap_ns=*/0),
              IdleResult::kWoken);
  }
  EXPECT_EQ(w.Stats().per_state[kBlockState].usage, blocks + kPeriods);
  EXPECT_EQ(w.Stats().per_state[kPollState].usage, polls);
  EXPECT_EQ(w.governor.wake_margin_ns(), margin);
  EXPECT_EQ(w.governor.predicted_interval_ns(), kPeriod);
}

TEST(PredictiveGovernorRules, AnIrregularHistoryPredictsNothing) {
  PredictiveGovernor g(Params());
  int64_t now = 1 * kMs;
  for (int i = 0; i < 2 * PredictiveGovernor::kHistory; ++i) {
    const int64_t length = i % 2 ? 100 * kUs : 5 * kMs;
    g.Select({now, kNever});
    g.Reflect(kBlockState, length, IdleExit::kWoken);
    now += length;
  }
  EXPECT_EQ(g.predicted_interval_ns(), 0);
  const Selection s = g.Select({now, kNever});
  EXPECT_EQ(s.state, kBlockState);
  EXPECT_EQ(s.block_until_ns, kBlockUntilDeadline);
}

TEST(PredictiveGovernorRules, AFewOutliersDoNotHideThePattern) {
  PredictiveGovernor g(Params());
  int64_t now = 1 * kMs;
  for (int i = 0; i < PredictiveGovernor::kHistory; ++i) {
    // Two of eight periods are long (a quarter, menu's limit).
    const int64_t length = (i == 2 || i == 5) ? 50 * kMs : 500 * kUs;
    g.Select({now, kNever});
    g.Reflect(kPollState, length, IdleExit::kWoken);  // Seen at once.
    now += length;
  }
  EXPECT_EQ(g.predicted_interval_ns(), 500 * kUs);
}

TEST(PredictiveGovernorRules, ThreeOutliersInEightAreNoPattern) {
  PredictiveGovernor g(Params());
  int64_t now = 1 * kMs;
  for (int i = 0; i < PredictiveGovernor::kHistory; ++i) {
    const int64_t length = (i == 1 || i == 3 || i == 6) ? 50 * kMs : 500 * kUs;
    g.Select({now, kNever});
    g.Reflect(kBlockState, length, IdleExit::kWoken);
    now += length;
  }
  EXPECT_EQ(g.predicted_interval_ns(), 0);
}

TEST(PredictiveGovernorRules, AnEarlierTimerWinsOverThePattern) {
  PredictiveGovernor g(Params());
  int64_t now = 1 * kMs;
  for (int i = 0; i < PredictiveGovernor::kHistory; ++i) {
    g.Select({now, kNever});
    g.Reflect(kBlockState, 1 * kMs, IdleExit::kWoken);
    now += 1 * kMs;
  }
  const Selection s = g.Select({now, now + 300 * kUs});
  EXPECT_EQ(s.state, kBlockState);
  EXPECT_EQ(s.block_until_ns, now + 300 * kUs - g.wake_margin_ns());
}

TEST(PredictiveGovernorRules, APredictedWakeThatDoesNotComeEndsInABlock) {
  Waiter w;
  RunPeriodic(w, 1 * kMs, 3 * PredictiveGovernor::kHistory, 0);
  ASSERT_GT(w.governor.predicted_interval_ns(), 0);
  // This time the wake is 5 ms away: the poll across the expected wake
  // runs out and the waiter blocks until it comes.
  const int64_t start = w.clock.NowNs();
  const uint64_t timeouts = w.Stats().poll_timeouts;
  EXPECT_EQ(w.Idle(kNever, start + 5 * kMs), IdleResult::kWoken);
  EXPECT_EQ(w.last_state, kBlockState);
  EXPECT_EQ(w.Stats().poll_timeouts, timeouts + 1);
}

// A source on its own schedule, a wake every `period` from the start: each
// wake is handled for 10 us before the next idle period begins, and one
// that found the waiter blocked first waits `blocked_cost` for its vCPU
// (the wake's real cost, beyond the exit latency the history takes off).
// Blocks that run out end 20 us late, and every third 40 us. Returns how
// many of the `n` wakes a poll met.
int RunOnSchedule(Waiter& w, int64_t period, int64_t blocked_cost, int n) {
  int met = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t wake = (w.clock.NowNs() / period + 1) * period;
    const int64_t lateness = i % 3 == 0 ? 40 * kUs : 20 * kUs;
    EXPECT_EQ(w.Idle(kNever, wake, lateness), IdleResult::kWoken);
    met += w.last_state == kPollState;
    w.clock.AdvanceTo(w.clock.NowNs() + 10 * kUs +
                      (w.last_state == kBlockState ? blocked_cost : 0));
  }
  return met;
}

// The periods of such a source take on each wake's cost: 990 us after a
// wake met while polling, 934 us after one met while blocked. Predicted
// from the periods, the wake after a quick one comes late and the one
// after a slow one early; predicted from the wakes themselves, each is met.
TEST(PredictiveGovernorRules, AWakeOnItsOwnScheduleIsPredictedFromTheWakes) {
  PredictiveParams p = Params();
  p.poll_ns = 50 * kUs;
  Waiter w(p);
  constexpr int64_t kPeriod = 1 * kMs;
  constexpr int64_t kCost = 50 * kUs;
  RunOnSchedule(w, kPeriod, kCost, 60);
  // Blocks 40 us late end at the wake itself (the margin, their 90th
  // percentile, is 40 us) and some of those miss it; predicted from the
  // periods, 36 of 100 were met.
  EXPECT_GE(RunOnSchedule(w, kPeriod, kCost, 100), 80);
  // The polls are short: it still blocks through most of each period.
  const IdleStats s = w.Stats();
  EXPECT_GT(s.per_state[kBlockState].time_ns,
            10 * s.per_state[kPollState].time_ns);
}

// The source slows by 4 % (less than the eighth that starts a new rhythm):
// the beat follows it, and the wakes are met while polling again. Had the
// rhythm kept the old beat, its polls would have ended before each wake.
TEST(PredictiveGovernorRules, ABeatThatSlowsIsFollowed) {
  PredictiveParams p = Params();
  p.poll_ns = 50 * kUs;
  Waiter w(p);
  constexpr int64_t kCost = 50 * kUs;
  RunOnSchedule(w, 1 * kMs, kCost, 100);
  RunOnSchedule(w, 1040 * kUs, kCost, 100);
  EXPECT_GE(RunOnSchedule(w, 1040 * kUs, kCost, 100), 80);
}

// Two blocks in sixteen end 150 us late, the rest 30 us: the margin, the
// 90th percentile, is 150 us, but a block that early would leave a 50 us
// poll that runs out 70 us before the timer. The margin is cut to the 10th
// percentile plus the cap.
TEST(PredictiveGovernorRules, TheMarginLeavesTheCapItsPoll) {
  PredictiveParams p = Params();
  p.poll_ns = 50 * kUs;
  Waiter w(p);
  for (int i = 0; i < PredictiveGovernor::kLatenessHistory; ++i) {
    const int64_t late = i % 8 == 3 ? 150 * kUs : 30 * kUs;
    w.Idle(w.clock.NowNs() + 10 * kMs, kNever, late);
  }
  ASSERT_EQ(w.governor.wake_margin_ns(), 150 * kUs);
  const int64_t deadline = w.clock.NowNs() + 1 * kMs;
  const Selection s = w.governor.Select({w.clock.NowNs(), deadline});
  EXPECT_EQ(s.state, kBlockState);
  EXPECT_EQ(s.block_until_ns, deadline - 80 * kUs);
}

// Bursts of seven short periods, then one of `gap`: the pattern is the
// short period, and the gap is the history's longest. Blocks that run out
// end `lateness_ns` late.
void RunBursts(Waiter& w, int64_t gap, int bursts, int64_t lateness_ns = 0) {
  for (int i = 0; i < bursts * 8; ++i) {
    const int64_t length = i % 8 == 7 ? gap : 5 * kUs;
    w.Idle(kNever, w.clock.NowNs() + length, lateness_ns);
  }
}

TEST(PredictiveGovernorRules, TheGapBetweenBurstsIsPolledAcrossAfterTheBurst) {
  Waiter w;
  RunBursts(w, 20 * kUs, 4);
  ASSERT_EQ(w.governor.predicted_interval_ns(), 5 * kUs);
  // The burst's first task after its gap: the poll across the short period
  // runs out, and the waiter polls on across the longest one.
  const uint64_t timeouts = w.Stats().poll_timeouts;
  EXPECT_EQ(w.Idle(kNever, w.clock.NowNs() + 20 * kUs), IdleResult::kWoken);
  EXPECT_EQ(w.last_state, kPollState);
  EXPECT_EQ(w.Stats().poll_timeouts, timeouts + 1);
}

TEST(PredictiveGovernorRules, AFarGapBetweenBurstsIsBlockedForThenPolled) {
  Waiter w;
  // Timed blocks end 10 us late: the margin is learned from the blocks
  // ahead of the gaps.
  RunBursts(w, 1 * kMs, 4, 10 * kUs);
  ASSERT_EQ(w.governor.predicted_interval_ns(), 5 * kUs);
  ASSERT_GE(w.governor.wake_margin_ns(), 10 * kUs);
  const int64_t start = w.clock.NowNs();
  // The short poll runs out: block until the margin before the longest
  // period, then poll across it.
  Selection s = w.governor.Select({start, kNever});
  ASSERT_EQ(s.state, kPollState);
  w.governor.Reflect(kPollState, s.poll_limit_ns, IdleExit::kTimeout);
  const int64_t now = start + s.poll_limit_ns;
  s = w.governor.Select({now, kNever});
  EXPECT_EQ(s.state, kBlockState);
  EXPECT_EQ(s.block_until_ns, start + 1 * kMs - w.governor.wake_margin_ns());
  w.governor.Reflect(kBlockState, s.block_until_ns - now, IdleExit::kTimeout);
  s = w.governor.Select({s.block_until_ns, kNever});
  EXPECT_EQ(s.state, kPollState);
  EXPECT_EQ(s.poll_limit_ns,
            w.governor.wake_margin_ns() + PredictiveGovernor::kMinToleranceNs);
}

TEST(PredictiveGovernorRules, ALatePeriodIsNoSecondRhythm) {
  Waiter w;
  // The longest period is under twice the pattern's: the pattern running
  // late, not a gap between bursts.
  RunBursts(w, 9 * kUs, 4);
  ASSERT_EQ(w.governor.predicted_interval_ns(), 5 * kUs);
  EXPECT_EQ(w.Idle(kNever, w.clock.NowNs() + 9 * kUs), IdleResult::kWoken);
  EXPECT_EQ(w.last_state, kBlockState);
}

TEST(PredictiveGovernorRules, ALongPatternHasNoSecondWake) {
  Waiter w;
  // Periods of 1 ms, too long to be a burst, and one of 3 ms (a task
  // another worker took) in every eight.
  for (int i = 0; i < 32; ++i) {
    const int64_t length = i % 8 == 7 ? 3 * kMs : 1 * kMs;
    w.Idle(kNever, w.clock.NowNs() + length, 0);
  }
  ASSERT_EQ(w.governor.predicted_interval_ns(), 1 * kMs);
  // Once the poll across the regular period runs out, it blocks until woken.
  const int64_t start = w.clock.NowNs();
  Selection s = w.governor.Select({start, kNever});
  ASSERT_EQ(s.state, kBlockState);
  w.governor.Reflect(kBlockState, s.block_until_ns - start, IdleExit::kTimeout);
  int64_t now = s.block_until_ns;
  s = w.governor.Select({now, kNever});
  ASSERT_EQ(s.state, kPollState);
  w.governor.Reflect(kPollState, s.poll_limit_ns, IdleExit::kTimeout);
  now += s.poll_limit_ns;
  s = w.governor.Select({now, kNever});
  EXPECT_EQ(s.state, kBlockState);
  EXPECT_EQ(s.block_until_ns, kBlockUntilDeadline);
}

TEST(PredictiveGovernorRules, ATimerBeforeTheGapLeavesNoSecondWake) {
  Waiter w;
  RunBursts(w, 1 * kMs, 4);
  // The caller's timer comes before the gap ends: once the poll across the
  // short period runs out, the block lasts until the timer.
  const int64_t start = w.clock.NowNs();
  const int64_t deadline = start + 500 * kUs;
  Selection s = w.governor.Select({start, deadline});
  ASSERT_EQ(s.state, kPollState);
  w.governor.Reflect(kPollState, s.poll_limit_ns, IdleExit::kTimeout);
  s = w.governor.Select({start + s.poll_limit_ns, deadline});
  EXPECT_EQ(s.state, kBlockState);
  EXPECT_EQ(s.block_until_ns, kBlockUntilDeadline);
}

TEST(PredictiveGovernorRules, ASecondWakeThatDoesNotComeEndsInABlock) {
  Waiter w;
  RunBursts(w, 20 * kUs, 4);
  const uint64_t timeouts = w.Stats().poll_timeouts;
  EXPECT_EQ(w.Idle(kNever, w.clock.NowNs() + 5 * kMs), IdleResult::kWoken);
  EXPECT_EQ(w.last_state, kBlockState);
  // The poll across the short period, then the one across the gap.
  EXPECT_EQ(w.Stats().poll_timeouts, timeouts + 2);
}

TEST(PredictiveGovernorRules, RegularShortPeriodsArePolledAcross) {
  Waiter w;
  for (int i = 0; i < 20; ++i) w.Idle(kNever, w.clock.NowNs() + 3 * kUs, 0);
  const Selection s = w.governor.Select({w.clock.NowNs(), kNever});
  EXPECT_EQ(s.state, kPollState);
  // Until the predicted wake plus the least tolerance.
  EXPECT_EQ(s.poll_limit_ns, 3 * kUs + PredictiveGovernor::kMinToleranceNs);
}

TEST(PredictiveGovernorRules, MostlyShortIrregularPeriodsArePolledFor) {
  Waiter w;
  // Five short periods in every eight, three long: no pattern (three
  // outliers in eight), but short periods are the rule.
  for (int i = 0; i < 40; ++i) {
    const int64_t length = i % 8 >= 3 ? 3 * kUs : 50 * kMs;
    w.Idle(kNever, w.clock.NowNs() + length, 0);
  }
  ASSERT_EQ(w.governor.predicted_interval_ns(), 0);
  const Selection s = w.governor.Select({w.clock.NowNs(), kNever});
  EXPECT_EQ(s.state, kPollState);
  // The block state's target residency: every short period fits in it.
  EXPECT_EQ(s.poll_limit_ns, 12 * kUs);
}

TEST(PredictiveGovernorRules, MostlyLongIrregularPeriodsAreBlockedFor) {
  Waiter w;
  for (int i = 0; i < 40; ++i) {
    const int64_t length = i % 8 < 3 ? 3 * kUs : 50 * kMs + i * kMs;
    w.Idle(kNever, w.clock.NowNs() + length, 0);
  }
  ASSERT_EQ(w.governor.predicted_interval_ns(), 0);
  EXPECT_EQ(w.governor.Select({w.clock.NowNs(), kNever}).state, kBlockState);
}

// Rule 0's tests: the dense poll is 420 us, so periods averaging 70 us or
// less are dense.
PredictiveParams DenseParams() {
  PredictiveParams p = Params();
  p.dense_poll_ns = 420 * kUs;
  return p;
}

// Idle periods of `mean` on average, as irregular as exponential gaps (no
// regular interval): the `i`-th of a cycle of 8, and `count` of them.
constexpr int64_t kPercentOfMean[] = {10, 180, 40, 150, 20, 90, 230, 80};
int64_t IrregularPeriod(int64_t mean, int i) {
  return mean * kPercentOfMean[i % 8] / 100;
}
void RunIrregular(Waiter& w, int64_t mean, int count) {
  for (int i = 0; i < count; ++i) {
    w.Idle(kNever, w.clock.NowNs() + IrregularPeriod(mean, i));
  }
}

TEST(PredictiveGovernorRules, DenseWakesArePolledThroughForTheDensePoll) {
  Waiter w(DenseParams());
  RunIrregular(w, 60 * kUs, 4 * PredictiveGovernor::kHistory);
  ASSERT_EQ(w.governor.predicted_interval_ns(), 0) << "no regular interval";
  const Selection s = w.governor.Select({w.clock.NowNs(), kNever});
  EXPECT_EQ(s.state, kPollState);
  EXPECT_EQ(s.poll_limit_ns, 420 * kUs);
}

TEST(PredictiveGovernorRules, ALateDenseWakeIsPolledForWithoutABlock) {
  // A wake 180 us into the period, three times the mean: without rule 0 the
  // worker blocks at once (the next test), as few periods are short.
  Waiter w(DenseParams());
  RunIrregular(w, 60 * kUs, 4 * PredictiveGovernor::kHistory);
  const uint64_t blocks = w.Stats().per_state[kBlockState].usage;
  EXPECT_EQ(w.Idle(kNever, w.clock.NowNs() + 180 * kUs), IdleResult::kWoken);
  EXPECT_EQ(w.last_state, kPollState);
  EXPECT_EQ(w.Stats().per_state[kBlockState].usage, blocks);
}

TEST(PredictiveGovernorRules, WithoutRuleZeroTheLateWakeFindsItBlocked) {
  // The same history and wake with rule 0 off: the test above would fail
  // without it.
  Waiter w;
  RunIrregular(w, 60 * kUs, 4 * PredictiveGovernor::kHistory);
  w.Idle(kNever, w.clock.NowNs() + 180 * kUs);
  EXPECT_EQ(w.last_state, kBlockState);
}

TEST(PredictiveGovernorRules, WakesLessDenseThanASixthOfTheDensePollAreNot) {
  // Periods of 90 us on average: the mean stays within 78-87 us, over the
  // 70 us bound, whichever period of the cycle comes last.
  Waiter w(DenseParams());
  RunIrregular(w, 90 * kUs, 2 * PredictiveGovernor::kHistory);
  for (int i = 0; i < PredictiveGovernor::kHistory; ++i) {
    const int64_t start = w.clock.NowNs();
    const Selection s = w.governor.Select({start, kNever});
    EXPECT_FALSE(s.state == kPollState && s.poll_limit_ns == 420 * kUs) << i;
    w.governor.Reflect(s.state, 0, IdleExit::kTimeout);
    w.Idle(kNever, start + IrregularPeriod(90 * kUs, i));
  }
}

TEST(PredictiveGovernorRules, TheCallersCapShortensTheDensePoll) {
  Waiter w(DenseParams());
  RunIrregular(w, 60 * kUs, 4 * PredictiveGovernor::kHistory);
  const Selection s = w.governor.Select({w.clock.NowNs(), kNever, 30 * kUs});
  EXPECT_EQ(s.state, kPollState);
  EXPECT_EQ(s.poll_limit_ns, 30 * kUs);
}

TEST(PredictiveGovernorRules, LongPeriodsEndTheDensePolls) {
  // Once the wakes thin out to one every 2 ms, the decaying mean passes
  // 70 us within a few periods and rule 0 stops polling through them.
  Waiter w(DenseParams());
  RunIrregular(w, 60 * kUs, 4 * PredictiveGovernor::kHistory);
  ASSERT_EQ(w.governor.Select({w.clock.NowNs(), kNever}).poll_limit_ns,
            420 * kUs);
  w.governor.Reflect(kPollState, 0, IdleExit::kWoken);
  RunIrregular(w, 2 * kMs, 8);
  const Selection s = w.governor.Select({w.clock.NowNs(), kNever});
  EXPECT_EQ(s.state, kBlockState);
}

TEST(PredictiveGovernorRules, PeriodsATimerEndedAreNotDenseWakes) {
  // A worker paced only by a 50 us timer blocks until the margin before
  // each, as rule 1 plans; it does not poll through them.
  Waiter w(DenseParams());
  for (int i = 0; i < 4 * PredictiveGovernor::kHistory; ++i) {
    w.Idle(w.clock.NowNs() + 50 * kUs, kNever);
  }
  const Selection s =
      w.governor.Select({w.clock.NowNs(), w.clock.NowNs() + 50 * kUs});
  EXPECT_EQ(s.state, kBlockState);
}

TEST(PredictiveGovernorRules, OneShortFirstPeriodDoesNotMakeLongOnesDense) {
  // A wake found at once, then periods of 100 us, over the 70 us bound:
  // the mean is their average from the start, and rule 0 never polls.
  Waiter w(DenseParams());
  w.Idle(kNever, w.clock.NowNs());
  for (int i = 0; i < 4 * PredictiveGovernor::kHistory; ++i) {
    const int64_t start = w.clock.NowNs();
    const Selection s = w.governor.Select({start, kNever});
    EXPECT_FALSE(s.state == kPollState && s.poll_limit_ns == 420 * kUs) << i;
    w.governor.Reflect(s.state, 0, IdleExit::kTimeout);
    w.Idle(kNever, start + 100 * kUs);
  }
}

TEST(PredictiveGovernorRules, ATimerAfterADensePollThatRanOutIsPlannedFor) {
  // The dense poll (420 us) runs out with a timer 1 ms away: the worker
  // then blocks until the wake margin before the timer and polls across
  // it, rather than blocking until the timer fires late.
  Waiter w(DenseParams());
  RunIrregular(w, 60 * kUs, 4 * PredictiveGovernor::kHistory);
  const int64_t start = w.clock.NowNs();
  const int64_t timer = start + 1 * kMs;
  Selection s = w.governor.Select({start, timer});
  ASSERT_EQ(s.state, kPollState);
  ASSERT_EQ(s.poll_limit_ns, 420 * kUs);
  w.clock.Advance(420 * kUs);
  w.governor.Reflect(kPollState, 420 * kUs, IdleExit::kTimeout);
  s = w.governor.Select({w.clock.NowNs(), timer});
  EXPECT_EQ(s.state, kBlockState);
  EXPECT_EQ(s.block_until_ns, timer - w.governor.wake_margin_ns());
}

TEST(PredictiveGovernorRules, TheRegistryGivesItTheDensePoll) {
  IdleOptions o;
  o.governor = "predictive";
  o.dense_poll_ns = 240 * kUs;  // Dense at a mean of 40 us or less.
  absl::StatusOr<std::unique_ptr<Governor>> g = MakeGovernor(o);
  ASSERT_TRUE(g.ok()) << g.status();
  FakeClock clock;
  for (int i = 0; i < 4 * PredictiveGovernor::kHistory; ++i) {
    (*g)->Select({clock.NowNs(), kNever});
    clock.Advance(10 * kUs * (1 + i % 5));
    (*g)->Reflect(kPollState, 10 * kUs * (1 + i % 5), IdleExit::kWoken);
  }
  const Selection s = (*g)->Select({clock.NowNs(), kNever});
  EXPECT_EQ(s.state, kPollState);
  EXPECT_EQ(s.poll_limit_ns, 240 * kUs);
}

TEST(PredictiveGovernorRules, HitsAndInterceptsAreCounted) {
  Waiter w;
  w.Idle(w.clock.NowNs() + 1 * kMs, kNever);                       // Hit.
  w.Idle(w.clock.NowNs() + 1 * kMs, w.clock.NowNs() + 100 * kUs);  // Intercept.
  w.Idle(kNever, w.clock.NowNs() + 2 * kMs);                       // Intercept.
  EXPECT_EQ(w.governor.hits(), 1u);
  EXPECT_EQ(w.governor.intercepts(), 2u);
}

TEST(PredictiveGovernorRules, AboveCountsAWakeThatCameSoonAfterItBlocked) {
  Waiter w;
  RunPeriodic(w, 1 * kMs, 3 * PredictiveGovernor::kHistory, 0);
  const uint64_t above = w.Stats().per_state[kBlockState].above;
  // A wake 5 us into the period: the block was a misprediction.
  const int64_t start = w.clock.NowNs();
  w.Idle(kNever, start + 5 * kUs, 0);
  EXPECT_EQ(w.Stats().per_state[kBlockState].above, above + 1);
}

}  // namespace
}  // namespace haltpool::idle
