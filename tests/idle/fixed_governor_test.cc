// The constant-window governors (poll, block, fixed) as MakeGovernor builds
// them, and the validation of IdleOptions by MakeGovernor and
// ValidateIdleOptions.

#include "idle/fixed_governor.h"

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "arch/cycle_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "idle/governor.h"
#include "idle/governor_registry.h"
#include "idle/idle_options.h"
#include "idle/idle_state.h"

namespace haltpool::idle {
namespace {

using ::testing::HasSubstr;

constexpr IdleContext kAnyContext{5000, arch::kNoDeadline};

std::unique_ptr<Governor> Make(const IdleOptions& options) {
  absl::StatusOr<std::unique_ptr<Governor>> g = MakeGovernor(options);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : nullptr;
}

std::unique_ptr<Governor> Make(const std::string& name) {
  IdleOptions o;
  o.governor = name;
  return Make(o);
}

TEST(GovernorRegistry, NamesListsEveryGovernor) {
  EXPECT_EQ(GovernorNames(), "haltpoll|predictive|poll|block|fixed");
  for (const char* name : {"haltpoll", "predictive", "poll", "block", "fixed"}) {
    EXPECT_TRUE(IsGovernorName(name)) << name;
    std::unique_ptr<Governor> g = Make(name);
    ASSERT_NE(g, nullptr) << name;
    EXPECT_EQ(g->name(), name);
  }
  for (const char* name : {"", "Haltpoll", "POLL", "menu", "teo", "poll ",
                           " block", "fixed\n", "haltpoll|poll"}) {
    EXPECT_FALSE(IsGovernorName(name)) << "'" << name << "'";
  }
}

TEST(GovernorRegistry, DefaultOptionsGiveTheHaltpollGovernor) {
  std::unique_ptr<Governor> g = Make(IdleOptions{});
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->name(), "haltpoll");
  EXPECT_EQ(g->poll_limit_ns(), 0);
  EXPECT_EQ(g->Select(kAnyContext).state, kBlockState);
}

TEST(GovernorRegistry, HaltpollGetsItsParameters) {
  IdleOptions o;
  o.haltpoll.grow_start = 1234;
  o.haltpoll.poll_ns = 5000;
  std::unique_ptr<Governor> g = Make(o);
  ASSERT_NE(g, nullptr);
  g->Reflect(kBlockState, 1000, IdleExit::kWoken);
  EXPECT_EQ(g->poll_limit_ns(), 1234);
  g->Reflect(kBlockState, 5001, IdleExit::kWoken);  // > cap: shrink to 0.
  EXPECT_EQ(g->poll_limit_ns(), 0);
}

TEST(GovernorRegistry, EachCallMakesAnIndependentGovernor) {
  std::unique_ptr<Governor> a = Make("haltpoll");
  std::unique_ptr<Governor> b = Make("haltpoll");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  a->Reflect(kBlockState, 1000, IdleExit::kWoken);
  EXPECT_EQ(a->poll_limit_ns(), 50000);
  EXPECT_EQ(b->poll_limit_ns(), 0);
}

TEST(FixedGovernors, PollAlwaysPollsWithoutALimit) {
  std::unique_ptr<Governor> g = Make("poll");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->poll_limit_ns(), kUnlimitedPollNs);
  for (IdleExit exit :
       {IdleExit::kWoken, IdleExit::kDeadline, IdleExit::kWoken}) {
    const Selection s = g->Select(kAnyContext);
    EXPECT_EQ(s.state, kPollState);
    EXPECT_EQ(s.poll_limit_ns, kUnlimitedPollNs);
    g->Reflect(kPollState, 1000000000, exit);
  }
  EXPECT_EQ(g->Select({1, 2}).state, kPollState) << "even with a near deadline";
  // A poll that ended short of the deadline without a wake is judged a
  // timeout by the idle loop; `poll` still never blocks.
  g->Reflect(kPollState, 1000, IdleExit::kTimeout);
  EXPECT_EQ(g->Select(kAnyContext).state, kPollState);
  EXPECT_EQ(g->Select(kAnyContext).poll_limit_ns, kUnlimitedPollNs);
  EXPECT_EQ(g->poll_limit_ns(), kUnlimitedPollNs);
}

TEST(FixedGovernors, BlockAlwaysBlocks) {
  std::unique_ptr<Governor> g = Make("block");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->poll_limit_ns(), 0);
  for (int64_t ns : {int64_t{1}, int64_t{100000}, int64_t{1000000000}}) {
    EXPECT_EQ(g->Select(kAnyContext).state, kBlockState);
    g->Reflect(kBlockState, ns, IdleExit::kWoken);
    EXPECT_EQ(g->poll_limit_ns(), 0) << "block never learns a window";
  }
  EXPECT_EQ(g->Select(kAnyContext).state, kBlockState);
}

TEST(FixedGovernors, FixedPollsItsWindowThenBlocks) {
  std::unique_ptr<Governor> g = Make("fixed");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->poll_limit_ns(), kDefaultFixedPollNs);
  Selection s = g->Select(kAnyContext);
  EXPECT_EQ(s.state, kPollState);
  EXPECT_EQ(s.poll_limit_ns, kDefaultFixedPollNs);
  // Woken during the poll: poll again next time.
  g->Reflect(kPollState, 100, IdleExit::kWoken);
  EXPECT_EQ(g->Select(kAnyContext).state, kPollState);
  // The caller's deadline ended it: not a timeout, poll again.
  g->Reflect(kPollState, 100, IdleExit::kDeadline);
  EXPECT_EQ(g->Select(kAnyContext).state, kPollState);
  // Ran out the window: block.
  g->Reflect(kPollState, kDefaultFixedPollNs, IdleExit::kTimeout);
  EXPECT_EQ(g->Select(kAnyContext).state, kBlockState);
  EXPECT_EQ(g->Select(kAnyContext).state, kBlockState);
  // After the block, poll again, with the same window whatever the block
  // lasted.
  g->Reflect(kBlockState, 1000000000, IdleExit::kWoken);
  s = g->Select(kAnyContext);
  EXPECT_EQ(s.state, kPollState);
  EXPECT_EQ(s.poll_limit_ns, kDefaultFixedPollNs);
  EXPECT_EQ(g->poll_limit_ns(), kDefaultFixedPollNs);
}

TEST(FixedGovernors, FixedUsesTheConfiguredWindow) {
  IdleOptions o;
  o.governor = "fixed";
  o.fixed_poll_ns = 7000;
  std::unique_ptr<Governor> g = Make(o);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->Select(kAnyContext).poll_limit_ns, 7000);
  EXPECT_EQ(g->poll_limit_ns(), 7000);
  o.fixed_poll_ns = 0;
  g = Make(o);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->Select(kAnyContext).state, kBlockState)
      << "window 0 never polls";
}

TEST(FixedGovernors, PollAndBlockIgnoreFixedPollNs) {
  IdleOptions o;
  o.fixed_poll_ns = 7000;
  o.governor = "poll";
  std::unique_ptr<Governor> g = Make(o);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->poll_limit_ns(), kUnlimitedPollNs);
  o.governor = "block";
  g = Make(o);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->poll_limit_ns(), 0);
}

TEST(FixedGovernors, ConstructedDirectly) {
  FixedGovernor g("mine", 300);
  EXPECT_EQ(g.name(), "mine");
  EXPECT_EQ(g.Select(kAnyContext).poll_limit_ns, 300);
  g.Reflect(kPollState, 300, IdleExit::kTimeout);
  EXPECT_EQ(g.Select(kAnyContext).state, kBlockState);
}

// --- Validation ------------------------------------------------------------

// Both entry points reject `o` with InvalidArgument whose message contains
// every one of `parts`.
void ExpectRejected(const IdleOptions& o,
                    std::initializer_list<std::string> parts) {
  const absl::Status v = ValidateIdleOptions(o);
  EXPECT_EQ(v.code(), absl::StatusCode::kInvalidArgument) << v;
  const absl::StatusOr<std::unique_ptr<Governor>> g = MakeGovernor(o);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument)
      << g.status();
  for (const std::string& part : parts) {
    EXPECT_THAT(std::string(v.message()), HasSubstr(part));
    EXPECT_THAT(std::string(g.status().message()), HasSubstr(part));
  }
}

TEST(IdleOptionsValidation, DefaultsAreValid) {
  EXPECT_TRUE(ValidateIdleOptions(IdleOptions{}).ok());
}

TEST(IdleOptionsValidation, UnknownGovernorIsRejected) {
  IdleOptions o;
  o.governor = "menu";
  ExpectRejected(o, {"governor", "'menu'", "haltpoll|predictive|poll|block|fixed"});
  o.governor = "";
  ExpectRejected(o, {"governor", "''", "haltpoll|predictive|poll|block|fixed"});
  o.governor = "Poll";
  ExpectRejected(o, {"governor", "'Poll'", "accepted"});
}

struct RangeCase {
  const char* field;
  void (*set)(IdleOptions&, int64_t);
  int64_t lo;
  int64_t hi;
};

const RangeCase kRangeCases[] = {
    {"haltpoll.poll_ns",
     [](IdleOptions& o, int64_t v) { o.haltpoll.poll_ns = v; }, 0,
     kMaxWindowNs},
    {"haltpoll.grow", [](IdleOptions& o, int64_t v) { o.haltpoll.grow = v; },
     kMinGrow, kMaxFactor},
    {"haltpoll.grow_start",
     [](IdleOptions& o, int64_t v) { o.haltpoll.grow_start = v; }, 0,
     kMaxWindowNs},
    {"haltpoll.shrink",
     [](IdleOptions& o, int64_t v) { o.haltpoll.shrink = v; }, 0, kMaxFactor},
    {"fixed_poll_ns", [](IdleOptions& o, int64_t v) { o.fixed_poll_ns = v; }, 0,
     kMaxWindowNs},
};

TEST(IdleOptionsValidation, DocumentedLimits) {
  EXPECT_EQ(kMaxWindowNs, 1000000000);
  EXPECT_EQ(kMinGrow, 1);
  EXPECT_EQ(kMaxFactor, 1024);
  EXPECT_EQ(kDefaultFixedPollNs, 2000);
}

TEST(IdleOptionsValidation, EveryFieldAcceptsItsBounds) {
  for (const RangeCase& c : kRangeCases) {
    for (int64_t v : {c.lo, c.hi}) {
      IdleOptions o;
      c.set(o, v);
      EXPECT_TRUE(ValidateIdleOptions(o).ok()) << c.field << " = " << v;
      EXPECT_TRUE(MakeGovernor(o).ok()) << c.field << " = " << v;
    }
  }
}

TEST(IdleOptionsValidation, EveryFieldRejectsValuesOutOfRange) {
  for (const RangeCase& c : kRangeCases) {
    for (int64_t v :
         {c.lo - 1, c.hi + 1, int64_t{INT64_MIN}, int64_t{INT64_MAX}}) {
      SCOPED_TRACE(absl::StrCat(c.field, " = ", v));
      IdleOptions o;
      c.set(o, v);
      ExpectRejected(o, {c.field, absl::StrCat(" = ", v, " "),
                         absl::StrCat(c.lo), absl::StrCat(c.hi)});
    }
  }
}

TEST(IdleOptionsValidation, FieldsOfOtherGovernorsAreCheckedToo) {
  // "every field is in range": a bad haltpoll tunable is an error even when
  // another governor is chosen, so a typo never hides until a switch.
  for (const char* name : {"poll", "block", "fixed"}) {
    IdleOptions o;
    o.governor = name;
    o.haltpoll.grow = 0;
    ExpectRejected(o, {"haltpoll.grow"});
  }
  IdleOptions o;
  o.fixed_poll_ns = -5;
  ExpectRejected(o, {"fixed_poll_ns", "-5"});
}

TEST(IdleOptionsValidation, WaitMechanismIsNotCheckedAgainstTheCpuHere) {
  // idle_options only checks values; whether the CPU has the mechanism is
  // the parker's question (Parker::Create).
  IdleOptions o;
  o.wait = arch::WaitMechanism::kWfet;
  EXPECT_TRUE(ValidateIdleOptions(o).ok());
}

}  // namespace
}  // namespace haltpool::idle
