// RunIdle (idle/idle_loop.h) on a fake clock, with poll and block states
// that only move the clock: the select -> enter -> reflect sequence, the
// `until` each state gets, how an exit is classified, and the counters.

#include "idle/idle_loop.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "arch/cycle_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "idle/fixed_governor.h"
#include "idle/governor.h"
#include "idle/haltpoll_governor.h"
#include "idle/idle_state.h"
#include "idle/idle_stats.h"
#include "tests/idle/fake_clock.h"

namespace haltpool::idle {
namespace {

using fakes::FakeClock;
using ::testing::ElementsAre;

constexpr int64_t kSecond = 1000000000;

// Wraps a real governor and logs every call, with what the loop passed.
class RecordingGovernor final : public Governor {
 public:
  RecordingGovernor(Governor& inner, const Clock& clock,
                    std::vector<std::string>& log)
      : inner_(inner), clock_(clock), log_(log) {}

  absl::string_view name() const noexcept override { return inner_.name(); }

  Selection Select(const IdleContext& c) noexcept override {
    last_context = c;
    EXPECT_EQ(c.now_ns, clock_.NowNs()) << "IdleContext.now_ns is not now";
    const Selection s = inner_.Select(c);
    log_.push_back(absl::StrCat("select:", s.state));
    return s;
  }

  void Reflect(int state, int64_t residency_ns,
               IdleExit exit) noexcept override {
    log_.push_back(absl::StrCat("reflect:", state, ":", residency_ns, ":",
                                ExitName(exit)));
    inner_.Reflect(state, residency_ns, exit);
  }

  int64_t poll_limit_ns() const noexcept override {
    return inner_.poll_limit_ns();
  }

  static const char* ExitName(IdleExit e) {
    switch (e) {
      case IdleExit::kWoken:
        return "woken";
      case IdleExit::kTimeout:
        return "timeout";
      case IdleExit::kDeadline:
        return "deadline";
    }
    return "?";
  }

  IdleContext last_context{-1, -1};

 private:
  Governor& inner_;
  const Clock& clock_;
  std::vector<std::string>& log_;
};

// A governor whose every answer the test sets, to reach loop paths the real
// governors reach only after a history.
class ScriptedGovernor final : public Governor {
 public:
  absl::string_view name() const noexcept override { return "scripted"; }
  Selection Select(const IdleContext& context) noexcept override {
    selected_at.push_back(context.now_ns);
    return next;
  }
  void Reflect(int, int64_t residency_ns, IdleExit exit) noexcept override {
    reflected.emplace_back(residency_ns, exit);
    window_ns = window_after_reflect;
  }
  int64_t poll_limit_ns() const noexcept override { return window_ns; }

  Selection next{kPollState, 10};
  int64_t window_ns = 0;
  int64_t window_after_reflect = 0;
  std::vector<int64_t> selected_at;
  std::vector<std::pair<int64_t, IdleExit>> reflected;
};

// One waiter's idle device on a fake clock, with a log of everything.
class IdleLoopTest : public ::testing::Test {
 protected:
  IdleLoopTest() : recorder_(haltpoll_, clock_, log_) {}

  IdleDevice Device() { return {&recorder_, &states_, &counters_, &clock_}; }

  IdleStats Snapshot() const {
    IdleStats st;
    counters_.Snapshot(st);
    return st;
  }

  // A poll state that is woken after `ns`, or runs to `until` if that
  // comes first (then it reports "not woken").
  auto PollWokenAfter(int64_t ns) {
    return [this, ns](int64_t until) {
      log_.push_back(absl::StrCat("poll:until+", until - clock_.NowNs()));
      poll_untils_.push_back(until);
      if (clock_.NowNs() + ns >= until) {
        clock_.AdvanceTo(until);
        return false;
      }
      clock_.Advance(ns);
      return true;
    };
  }
  auto BlockWokenAfter(int64_t ns) {
    return [this, ns](int64_t until) {
      log_.push_back(
          until == arch::kNoDeadline
              ? std::string("block:until=none")
              : absl::StrCat("block:until+", until - clock_.NowNs()));
      block_untils_.push_back(until);
      if (until != arch::kNoDeadline && clock_.NowNs() + ns >= until) {
        clock_.AdvanceTo(until);
        return false;
      }
      clock_.Advance(ns);
      return true;
    };
  }
  static auto Unreachable(const char* what) {
    return [what](int64_t) {
      ADD_FAILURE() << what << " entered";
      return true;
    };
  }

  // Grows the haltpoll window to 50 us with one 100 us block, then clears
  // the log and counters' view of it (the counters keep counting).
  void GrowWindowTo50us() {
    ASSERT_EQ(RunIdle(Device(), clock_.NowNs() + kSecond, Unreachable("poll"),
                      BlockWokenAfter(100000)),
              IdleResult::kWoken);
    ASSERT_EQ(haltpoll_.poll_limit_ns(), 50000);
    log_.clear();
    poll_untils_.clear();
    block_untils_.clear();
  }

  FakeClock clock_;
  HaltpollGovernor haltpoll_{HaltpollParams{}};
  std::vector<std::string> log_;
  RecordingGovernor recorder_;
  StateTable states_ = DefaultStateTable();
  IdleCounters counters_;
  std::vector<int64_t> poll_untils_, block_untils_;
};

TEST_F(IdleLoopTest, FirstPeriodBlocksUntilTheDeadline) {
  const int64_t deadline = clock_.NowNs() + kSecond;
  EXPECT_EQ(
      RunIdle(Device(), deadline, Unreachable("poll"), BlockWokenAfter(100000)),
      IdleResult::kWoken);
  EXPECT_THAT(log_, ElementsAre("select:1", "block:until+1000000000",
                                "reflect:1:100000:woken"));
  EXPECT_THAT(block_untils_, ElementsAre(deadline));
  EXPECT_EQ(recorder_.last_context.deadline_ns, deadline);
  const IdleStats st = Snapshot();
  EXPECT_EQ(st.per_state[kBlockState].usage, 1u);
  EXPECT_EQ(st.per_state[kBlockState].time_ns, 100000u);
  EXPECT_EQ(st.per_state[kBlockState].above, 0u);  // 100 us >= 12 us.
  EXPECT_EQ(st.per_state[kBlockState].below, 0u);  // No deeper state.
  EXPECT_EQ(st.per_state[kPollState].usage, 0u);
  EXPECT_EQ(st.poll_timeouts, 0u);
  EXPECT_EQ(st.window_ns, 50000) << "the grown window is published";
}

TEST_F(IdleLoopTest, BlockWithoutDeadlineGetsNoDeadline) {
  EXPECT_EQ(RunIdle(Device(), arch::kNoDeadline, Unreachable("poll"),
                    BlockWokenAfter(1000)),
            IdleResult::kWoken);
  EXPECT_THAT(block_untils_, ElementsAre(arch::kNoDeadline));
  EXPECT_EQ(recorder_.last_context.deadline_ns, arch::kNoDeadline);
}

TEST_F(IdleLoopTest, PollsTheWindowWhenItEndsBeforeTheDeadline) {
  GrowWindowTo50us();
  const int64_t start = clock_.NowNs();
  EXPECT_EQ(RunIdle(Device(), start + kSecond, PollWokenAfter(10000),
                    Unreachable("block")),
            IdleResult::kWoken);
  EXPECT_THAT(poll_untils_, ElementsAre(start + 50000));
  EXPECT_THAT(log_, ElementsAre("select:0", "poll:until+50000",
                                "reflect:0:10000:woken"));
  const IdleStats st = Snapshot();
  EXPECT_EQ(st.per_state[kPollState].usage, 1u);
  EXPECT_EQ(st.per_state[kPollState].time_ns, 10000u);
  EXPECT_EQ(st.per_state[kPollState].below, 0u);  // 10 us < 12 us.
  EXPECT_EQ(st.per_state[kPollState].above, 0u);
  EXPECT_EQ(st.poll_timeouts, 0u);
  EXPECT_EQ(st.window_ns, 50000);
}

TEST_F(IdleLoopTest, PollsTheWindowWithoutADeadline) {
  GrowWindowTo50us();
  const int64_t start = clock_.NowNs();
  EXPECT_EQ(RunIdle(Device(), arch::kNoDeadline, PollWokenAfter(1),
                    Unreachable("block")),
            IdleResult::kWoken);
  EXPECT_THAT(poll_untils_, ElementsAre(start + 50000));
}

TEST_F(IdleLoopTest, PollLongEnoughForBlockCountsBelow) {
  GrowWindowTo50us();
  // residency - exit latency (0) >= BLOCK's target residency (12 us).
  RunIdle(Device(), arch::kNoDeadline, PollWokenAfter(12000),
          Unreachable("block"));
  EXPECT_EQ(Snapshot().per_state[kPollState].below, 1u);
  RunIdle(Device(), arch::kNoDeadline, PollWokenAfter(11999),
          Unreachable("block"));
  EXPECT_EQ(Snapshot().per_state[kPollState].below, 1u);
  EXPECT_EQ(Snapshot().per_state[kPollState].usage, 2u);
  EXPECT_EQ(Snapshot().per_state[kPollState].time_ns, 23999u);
}

TEST_F(IdleLoopTest, PollTimeoutIsFollowedByABlockInTheSameCall) {
  GrowWindowTo50us();
  const int64_t start = clock_.NowNs();
  const int64_t deadline = start + kSecond;
  EXPECT_EQ(RunIdle(Device(), deadline, PollWokenAfter(kSecond),
                    BlockWokenAfter(5000)),
            IdleResult::kWoken);
  EXPECT_THAT(
      log_,
      ElementsAre("select:0", "poll:until+50000", "reflect:0:50000:timeout",
                  "select:1", "block:until+999950000", "reflect:1:5000:woken"));
  EXPECT_THAT(poll_untils_, ElementsAre(start + 50000));
  EXPECT_THAT(block_untils_, ElementsAre(deadline));
  const IdleStats st = Snapshot();
  EXPECT_EQ(st.poll_timeouts, 1u);
  EXPECT_EQ(st.per_state[kPollState].usage, 1u);
  EXPECT_EQ(st.per_state[kPollState].time_ns, 50000u);
  EXPECT_EQ(st.per_state[kPollState].below, 1u);  // 50 us >= 12 us.
  // The grow-up block (100 us) and this one (5 us, short: above).
  EXPECT_EQ(st.per_state[kBlockState].usage, 2u);
  EXPECT_EQ(st.per_state[kBlockState].time_ns, 105000u);
  EXPECT_EQ(st.per_state[kBlockState].above, 1u);
  EXPECT_EQ(st.window_ns, 50000) << "5 us block is inside the window";
}

TEST_F(IdleLoopTest, PollClippedToTheDeadlineEndsWithDeadlineNotTimeout) {
  GrowWindowTo50us();
  const int64_t start = clock_.NowNs();
  EXPECT_EQ(RunIdle(Device(), start + 10000, PollWokenAfter(kSecond),
                    Unreachable("block")),
            IdleResult::kTimedOut);
  EXPECT_THAT(poll_untils_, ElementsAre(start + 10000));
  EXPECT_THAT(log_, ElementsAre("select:0", "poll:until+10000",
                                "reflect:0:10000:deadline"));
  EXPECT_EQ(Snapshot().poll_timeouts, 0u);
  // Not a window timeout, so the governor polls again next time.
  EXPECT_EQ(haltpoll_.Select({clock_.NowNs(), arch::kNoDeadline}).state,
            kPollState);
}

TEST_F(IdleLoopTest, DeadlineExactlyAtTheWindowsEndIsADeadline) {
  GrowWindowTo50us();
  const int64_t start = clock_.NowNs();
  EXPECT_EQ(RunIdle(Device(), start + 50000, PollWokenAfter(kSecond),
                    Unreachable("block")),
            IdleResult::kTimedOut);
  EXPECT_THAT(log_, ElementsAre("select:0", "poll:until+50000",
                                "reflect:0:50000:deadline"));
  EXPECT_EQ(Snapshot().poll_timeouts, 0u);
}

TEST_F(IdleLoopTest, DeadlineJustPastTheWindowPollsThenBlocks) {
  GrowWindowTo50us();
  const int64_t start = clock_.NowNs();
  EXPECT_EQ(RunIdle(Device(), start + 50001, PollWokenAfter(kSecond),
                    BlockWokenAfter(kSecond)),
            IdleResult::kTimedOut);
  EXPECT_THAT(log_, ElementsAre("select:0", "poll:until+50000",
                                "reflect:0:50000:timeout", "select:1",
                                "block:until+1", "reflect:1:1:deadline"));
  EXPECT_EQ(Snapshot().poll_timeouts, 1u);
  EXPECT_EQ(clock_.NowNs(), start + 50001);
}

TEST_F(IdleLoopTest, PollEndingBeforeTheDeadlineIsATimeoutByTheClock) {
  // The poll was given the caller's deadline but came back, not woken, while
  // the clock is still short of it (a counter deadline a hair early): the
  // exit is judged by the clock, so it is a window timeout and the loop goes
  // on; it never reports the deadline before it passed.
  GrowWindowTo50us();
  const int64_t start = clock_.NowNs();
  const int64_t deadline = start + 10000;
  auto early_poll = [this](int64_t until) {
    log_.push_back(absl::StrCat("poll:until+", until - clock_.NowNs()));
    clock_.AdvanceTo(until - 1000);  // 1 us short of its limit.
    return false;
  };
  EXPECT_EQ(RunIdle(Device(), deadline, early_poll, BlockWokenAfter(kSecond)),
            IdleResult::kTimedOut);
  EXPECT_THAT(log_, ElementsAre("select:0", "poll:until+10000",
                                "reflect:0:9000:timeout", "select:1",
                                "block:until+1000", "reflect:1:1000:deadline"));
  EXPECT_EQ(clock_.NowNs(), deadline);
  EXPECT_EQ(Snapshot().poll_timeouts, 1u);
}

// A clock that returns the reads a test scripted, one per call, and then
// stays at the last: to put the deadline between two of the loop's reads.
class ScriptedClock final : public Clock {
 public:
  explicit ScriptedClock(std::vector<int64_t> reads)
      : reads_(std::move(reads)) {}
  int64_t NowNs() const noexcept override {
    const int64_t now = reads_[next_];
    if (next_ + 1 < reads_.size()) ++next_;
    return now;
  }

 private:
  std::vector<int64_t> reads_;
  mutable size_t next_ = 0;
};

TEST(IdleLoop, ADeadlineRightAfterATimeoutStillEndsThePeriod) {
  // The poll runs out 1 us before the deadline, and the clock's next read is
  // past it. The loop selects again at the time the poll ended, and the
  // governor sees the period end with kDeadline: the loop never returns with
  // the period still open after a kTimeout.
  constexpr int64_t kStart = 1000000, kDeadline = kStart + 10000;
  ScriptedClock clock({kStart, kDeadline - 1000, kDeadline + 50});
  ScriptedGovernor governor;
  governor.next = {kPollState, 9000};
  const StateTable states = DefaultStateTable();
  IdleCounters counters;
  auto not_woken = [](int64_t) { return false; };
  EXPECT_EQ(RunIdle(IdleDevice{&governor, &states, &counters, &clock},
                    kDeadline, not_woken, not_woken),
            IdleResult::kTimedOut);
  EXPECT_THAT(governor.reflected,
              ElementsAre(std::pair(int64_t{9000}, IdleExit::kTimeout),
                          std::pair(int64_t{1050}, IdleExit::kDeadline)));
  EXPECT_EQ(governor.selected_at,
            (std::vector<int64_t>{kStart, kDeadline - 1000}));
}

TEST(IdleLoop, BlockEndingEarlyWithoutAWakeGoesOn) {
  // A block that returns "not woken" while the clock is short of the
  // deadline is not the deadline: the loop selects again.
  FakeClock clock;
  FixedGovernor g("block", 0);
  const StateTable states = DefaultStateTable();
  IdleCounters counters;
  const int64_t deadline = clock.NowNs() + kSecond;
  int calls = 0;
  auto block = [&](int64_t until) {
    EXPECT_EQ(until, deadline);
    clock.Advance(1000);
    return ++calls == 2;  // Not woken the first time, woken the second.
  };
  auto poll = [](int64_t) {
    ADD_FAILURE() << "poll entered";
    return true;
  };
  EXPECT_EQ(RunIdle(IdleDevice{&g, &states, &counters, &clock}, deadline, poll,
                    block),
            IdleResult::kWoken);
  EXPECT_EQ(calls, 2);
  IdleStats st;
  counters.Snapshot(st);
  EXPECT_EQ(st.per_state[kBlockState].usage, 2u);
  EXPECT_EQ(st.poll_timeouts, 0u) << "a block is never a poll timeout";
}

TEST_F(IdleLoopTest, StateReturningPastTheDeadlineIsTheDeadline) {
  // Not woken and the clock is past the deadline: kDeadline, whatever limit
  // the state had.
  GrowWindowTo50us();
  const int64_t start = clock_.NowNs();
  auto late_poll = [this](int64_t until) {
    clock_.AdvanceTo(until + 5000);
    return false;
  };
  EXPECT_EQ(RunIdle(Device(), start + 20000, late_poll, Unreachable("block")),
            IdleResult::kTimedOut);
  EXPECT_THAT(log_, ElementsAre("select:0", "reflect:0:25000:deadline"));
  EXPECT_EQ(Snapshot().poll_timeouts, 0u);
}

TEST_F(IdleLoopTest, BlockThatReachesTheDeadlineTimesOut) {
  const int64_t start = clock_.NowNs();
  EXPECT_EQ(RunIdle(Device(), start + 30000, Unreachable("poll"),
                    BlockWokenAfter(kSecond)),
            IdleResult::kTimedOut);
  EXPECT_THAT(log_, ElementsAre("select:1", "block:until+30000",
                                "reflect:1:30000:deadline"));
  const IdleStats st = Snapshot();
  EXPECT_EQ(st.per_state[kBlockState].usage, 1u);
  EXPECT_EQ(st.per_state[kBlockState].time_ns, 30000u);
  // The governor learnt from the block that the deadline ended, too.
  EXPECT_EQ(st.window_ns, 50000);
}

TEST_F(IdleLoopTest, DeadlineAlreadyPassedEntersNothing) {
  for (int64_t deadline : {clock_.NowNs(), clock_.NowNs() - 1, int64_t{0}}) {
    EXPECT_EQ(
        RunIdle(Device(), deadline, Unreachable("poll"), Unreachable("block")),
        IdleResult::kTimedOut);
  }
  EXPECT_TRUE(log_.empty()) << absl::StrJoin(log_, ", ");
  const IdleStats st = Snapshot();
  EXPECT_EQ(st.per_state[kPollState].usage + st.per_state[kBlockState].usage,
            0u);
}

TEST_F(IdleLoopTest, ReflectGetsTheResidencyTheClockMeasured) {
  GrowWindowTo50us();
  // A poll that does not move the clock lasted 0 ns.
  RunIdle(
      Device(), arch::kNoDeadline, [](int64_t) { return true; },
      Unreachable("block"));
  EXPECT_THAT(log_, ElementsAre("select:0", "reflect:0:0:woken"));
  EXPECT_EQ(Snapshot().per_state[kPollState].time_ns, 0u);
}

TEST_F(IdleLoopTest, WithoutPollingTheBlockStateIsEnteredAndReflected) {
  // allow_poll = false: whatever the governor selects, the waiter blocks,
  // and the governor learns from that block.
  GrowWindowTo50us();
  ASSERT_EQ(haltpoll_.Select({clock_.NowNs(), arch::kNoDeadline}).state,
            kPollState);
  const int64_t deadline = clock_.NowNs() + kSecond;
  EXPECT_EQ(RunIdle(Device(), deadline, Unreachable("poll"),
                    BlockWokenAfter(60000), /*allow_poll=*/false),
            IdleResult::kWoken);
  EXPECT_THAT(log_, ElementsAre("select:0", "block:until+1000000000",
                                "reflect:1:60000:woken"));
  EXPECT_THAT(block_untils_, ElementsAre(deadline));
  EXPECT_EQ(recorder_.last_context.poll_cap_ns, 0) << "no poll is allowed";
  EXPECT_EQ(haltpoll_.poll_limit_ns(), 100000) << "60 us block grew the window";
  const IdleStats st = Snapshot();
  EXPECT_EQ(st.per_state[kPollState].usage, 0u);
  EXPECT_EQ(st.per_state[kBlockState].usage, 2u);  // Growing block + this.
  EXPECT_EQ(st.window_ns, 100000);
}

TEST_F(IdleLoopTest, WithoutPollingADeadlineStillEndsTheBlock) {
  GrowWindowTo50us();
  const int64_t start = clock_.NowNs();
  EXPECT_EQ(RunIdle(Device(), start + 30000, Unreachable("poll"),
                    BlockWokenAfter(kSecond), /*allow_poll=*/false),
            IdleResult::kTimedOut);
  EXPECT_THAT(log_, ElementsAre("select:0", "block:until+30000",
                                "reflect:1:30000:deadline"));
}

TEST_F(IdleLoopTest, WithoutPollingALimitedBlockKeepsItsLimit) {
  // The governor reflects on the block it selected, so the loop does not
  // stretch it to the deadline: a governor learns a timer's lateness from
  // how a limited block ended.
  ScriptedGovernor scripted;
  const int64_t start = clock_.NowNs();
  scripted.next = {kBlockState, 0, start + 30000};
  EXPECT_EQ(
      RunIdle(IdleDevice{&scripted, &states_, &counters_, &clock_},
              start + kSecond, Unreachable("poll"), BlockWokenAfter(10000),
              /*allow_poll=*/false),
      IdleResult::kWoken);
  EXPECT_THAT(block_untils_, ElementsAre(start + 30000));
}

TEST_F(IdleLoopTest, TheGovernorSeesTheCapAndALongerPollIsShortenedToIt) {
  GrowWindowTo50us();
  EXPECT_EQ(RunIdle(Device(), clock_.NowNs() + kSecond, PollWokenAfter(10000),
                    Unreachable("block"), /*allow_poll=*/true,
                    /*poll_cap_ns=*/20000),
            IdleResult::kWoken);
  EXPECT_EQ(recorder_.last_context.poll_cap_ns, 20000);
  EXPECT_THAT(log_, ElementsAre("select:0", "poll:until+20000",
                                "reflect:0:10000:woken"));
}

// A gate that logs its calls and allows the first `allowed` polls.
class LoggingGate final : public PollGate {
 public:
  LoggingGate(std::vector<std::string>& log, int allowed)
      : log_(log), allowed_(allowed) {}
  bool TryEnter() noexcept override {
    const bool ok = allowed_-- > 0;
    log_.push_back(ok ? "gate:enter" : "gate:refused");
    return ok;
  }
  void Leave() noexcept override { log_.push_back("gate:leave"); }

 private:
  std::vector<std::string>& log_;
  int allowed_;
};

TEST_F(IdleLoopTest, AnAllowedPollLeavesTheGateWhenItEnds) {
  GrowWindowTo50us();
  LoggingGate gate(log_, /*allowed=*/1);
  EXPECT_EQ(RunIdle(Device(), clock_.NowNs() + kSecond, PollWokenAfter(10000),
                    Unreachable("block"), /*allow_poll=*/true, kUnlimitedPollNs,
                    &gate),
            IdleResult::kWoken);
  EXPECT_THAT(log_, ElementsAre("select:0", "gate:enter", "poll:until+50000",
                                "gate:leave", "reflect:0:10000:woken"));
}

TEST_F(IdleLoopTest, ARefusedPollBlocksUntilWokenHoldingNoSlot) {
  GrowWindowTo50us();
  LoggingGate gate(log_, /*allowed=*/0);
  EXPECT_EQ(RunIdle(Device(), clock_.NowNs() + kSecond, Unreachable("poll"),
                    BlockWokenAfter(30000), /*allow_poll=*/true,
                    kUnlimitedPollNs, &gate),
            IdleResult::kWoken);
  EXPECT_THAT(log_,
              ElementsAre("select:0", "gate:refused", "block:until+1000000000",
                          "reflect:1:30000:woken"));
}

TEST_F(IdleLoopTest, AGateIsNotAskedForABlock) {
  LoggingGate gate(log_, /*allowed=*/0);
  EXPECT_EQ(RunIdle(Device(), clock_.NowNs() + kSecond, Unreachable("poll"),
                    BlockWokenAfter(100000), /*allow_poll=*/true,
                    kUnlimitedPollNs, &gate),
            IdleResult::kWoken);
  EXPECT_THAT(log_, ElementsAre("select:1", "block:until+1000000000",
                                "reflect:1:100000:woken"));
}

TEST(IdleLoop, WindowIsPublishedAfterReflect) {
  FakeClock clock;
  ScriptedGovernor g;
  g.next = {kBlockState, 0};
  g.window_after_reflect = 123456;
  const StateTable states = DefaultStateTable();
  IdleCounters counters;
  RunIdle(
      IdleDevice{&g, &states, &counters, &clock}, arch::kNoDeadline,
      [](int64_t) { return true; },
      [&clock](int64_t) {
        clock.Advance(7);
        return true;
      });
  IdleStats st;
  counters.Snapshot(st);
  EXPECT_EQ(st.window_ns, 123456);
}

TEST(IdleLoop, RepeatedWindowTimeoutsRunUntilTheDeadline) {
  // A governor that polls 10 ns again after every timeout: the loop keeps
  // asking until the deadline clips the last poll.
  FakeClock clock;
  ScriptedGovernor g;
  g.next = {kPollState, 10};
  const StateTable states = DefaultStateTable();
  IdleCounters counters;
  const int64_t start = clock.NowNs();
  std::vector<int64_t> untils;
  EXPECT_EQ(RunIdle(
                IdleDevice{&g, &states, &counters, &clock}, start + 35,
                [&](int64_t until) {
                  untils.push_back(until - start);
                  clock.AdvanceTo(until);
                  return false;
                },
                [](int64_t) {
                  ADD_FAILURE() << "block entered";
                  return true;
                }),
            IdleResult::kTimedOut);
  EXPECT_THAT(untils, ElementsAre(10, 20, 30, 35));
  IdleStats st;
  counters.Snapshot(st);
  EXPECT_EQ(st.poll_timeouts, 3u);
  EXPECT_EQ(st.per_state[kPollState].usage, 4u);
  EXPECT_EQ(st.per_state[kPollState].time_ns, 35u);
}

TEST(IdleLoop, UnlimitedPollWindowPollsToTheDeadline) {
  FakeClock clock;
  FixedGovernor g("poll", kUnlimitedPollNs);
  const StateTable states = DefaultStateTable();
  IdleCounters counters;
  const IdleDevice dev{&g, &states, &counters, &clock};
  std::vector<int64_t> untils;
  auto poll = [&](int64_t until) {
    untils.push_back(until);
    if (until == arch::kNoDeadline) {
      clock.Advance(100);
      return true;
    }
    clock.AdvanceTo(until);
    return false;
  };
  auto block = [](int64_t) {
    ADD_FAILURE() << "block entered";
    return true;
  };
  EXPECT_EQ(RunIdle(dev, arch::kNoDeadline, poll, block), IdleResult::kWoken);
  const int64_t deadline = clock.NowNs() + 5 * kSecond;
  EXPECT_EQ(RunIdle(dev, deadline, poll, block), IdleResult::kTimedOut);
  EXPECT_THAT(untils, ElementsAre(arch::kNoDeadline, deadline));
  IdleStats st;
  counters.Snapshot(st);
  EXPECT_EQ(st.poll_timeouts, 0u) << "the deadline is not a window timeout";
  EXPECT_EQ(st.window_ns, kUnlimitedPollNs);
}

TEST(IdleLoop, ClassifiesAgainstTheDevicesStateTable) {
  // A table whose BLOCK pays off after 1 us and whose POLL takes 2 us to
  // leave: a 5 us block is not "above"; a 3 us poll counts "below"
  // (3 - 2 >= 1), a 2.999 us poll does not.
  FakeClock clock;
  ScriptedGovernor g;
  StateTable states = DefaultStateTable();
  states[kPollState].exit_latency_ns = 2000;
  states[kBlockState].target_residency_ns = 1000;
  IdleCounters counters;
  const IdleDevice dev{&g, &states, &counters, &clock};
  g.next = {kBlockState, 0};
  RunIdle(
      dev, arch::kNoDeadline, [](int64_t) { return true; },
      [&](int64_t) {
        clock.Advance(5000);
        return true;
      });
  g.next = {kPollState, kUnlimitedPollNs};
  RunIdle(
      dev, arch::kNoDeadline,
      [&](int64_t) {
        clock.Advance(3000);  // 3000 - 2000 >= 1000: below.
        return true;
      },
      [](int64_t) { return true; });
  RunIdle(
      dev, arch::kNoDeadline,
      [&](int64_t) {
        clock.Advance(2999);  // 999 < 1000: not below.
        return true;
      },
      [](int64_t) { return true; });
  IdleStats st;
  counters.Snapshot(st);
  EXPECT_EQ(st.per_state[kBlockState].above, 0u);
  EXPECT_EQ(st.per_state[kPollState].below, 1u);
  EXPECT_EQ(st.per_state[kPollState].usage, 2u);
}

}  // namespace
}  // namespace haltpool::idle
