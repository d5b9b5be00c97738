// PollBackoff (idle/poll_backoff.h) on injected samples: each signal backs
// it off, it stops polling at the last level, and it recovers one level per
// hold time without flapping.

#include "idle/poll_backoff.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "idle/governor.h"

namespace haltpool::idle {
namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t kInterval = 10 * kMs;  // The pool's sampling interval.

ContentionSample Quiet(int64_t now) {
  ContentionSample s;
  s.now_ns = now;
  s.steal_fraction = 0.01;
  s.runnable = 1;
  s.usable_cpus = 2;
  return s;
}

TEST(PollBackoff, QuietSamplesChangeNothing) {
  PollBackoff b;
  for (int i = 0; i < 50; ++i) b.Update(Quiet(i * kInterval));
  EXPECT_EQ(b.level(), 0);
  EXPECT_EQ(b.PollCapNs(200000), kUnlimitedPollNs);
  EXPECT_EQ(b.samples(), 50u);
  EXPECT_EQ(b.backed_off(), 0u);
}

TEST(PollBackoff, EachSignalAloneIsContention) {
  ContentionSample steal = Quiet(0);
  steal.steal_fraction = 0.25;
  ContentionSample runnable = Quiet(0);
  runnable.runnable = 3;
  ContentionSample preempted = Quiet(0);
  preempted.preempted = PollBackoff::kPreemptedThreshold;
  for (const ContentionSample& s : {steal, runnable, preempted}) {
    EXPECT_TRUE(PollBackoff::Contended(s));
    PollBackoff b;
    b.Update(s);
    EXPECT_EQ(b.level(), 1);
    EXPECT_EQ(b.PollCapNs(200000), 100000);
  }
}

TEST(PollBackoff, TheThresholdsAreStrict) {
  ContentionSample s = Quiet(0);
  s.steal_fraction = PollBackoff::kStealThreshold;
  s.runnable = s.usable_cpus;
  s.preempted = PollBackoff::kPreemptedThreshold - 1;
  EXPECT_FALSE(PollBackoff::Contended(s));
}

TEST(PollBackoff, ContentionHalvesTheCapThenStopsPolling) {
  PollBackoff b;
  ContentionSample s = Quiet(0);
  s.steal_fraction = 0.3;
  const int64_t caps[] = {100000, 50000, 25000, 0};
  for (int i = 0; i < PollBackoff::kMaxLevel; ++i) {
    s.now_ns = i * kInterval;
    b.Update(s);
    EXPECT_EQ(b.level(), i + 1);
    EXPECT_EQ(b.PollCapNs(200000), caps[i]);
  }
  EXPECT_FALSE(b.polling_allowed());
  s.now_ns += kInterval;
  b.Update(s);  // Already at the last level.
  EXPECT_EQ(b.level(), PollBackoff::kMaxLevel);
  EXPECT_EQ(b.backed_off(), static_cast<uint64_t>(PollBackoff::kMaxLevel));
}

TEST(PollBackoff, RecoversOneLevelPerHoldTime) {
  PollBackoff b;
  ContentionSample s = Quiet(0);
  s.runnable = 9;
  for (int i = 0; i < PollBackoff::kMaxLevel; ++i) {
    s.now_ns = i * kInterval;
    b.Update(s);
  }
  const int64_t last_busy = s.now_ns;
  int64_t now = last_busy;
  // Quiet, but not for a hold time yet: no change.
  for (now += kInterval; now < last_busy + PollBackoff::kHoldNs;
       now += kInterval) {
    b.Update(Quiet(now));
    EXPECT_EQ(b.level(), PollBackoff::kMaxLevel) << (now - last_busy);
  }
  for (int level = PollBackoff::kMaxLevel - 1; level >= 0; --level) {
    b.Update(Quiet(now));
    EXPECT_EQ(b.level(), level);
    now += PollBackoff::kHoldNs;
  }
  EXPECT_TRUE(b.polling_allowed());
  EXPECT_EQ(b.PollCapNs(200000), kUnlimitedPollNs);
  EXPECT_EQ(b.recovered(), 1u);
}

TEST(PollBackoff, OneQuietSampleBetweenBusyOnesDoesNotFlap) {
  PollBackoff b;
  ContentionSample busy = Quiet(0);
  busy.preempted = 5;
  int64_t now = 0;
  for (int i = 0; i < 40; ++i, now += kInterval) {
    if (i % 2 == 0) {
      busy.now_ns = now;
      b.Update(busy);
    } else {
      b.Update(Quiet(now));
    }
    EXPECT_GE(b.level(), 1) << i;
  }
  EXPECT_EQ(b.level(), PollBackoff::kMaxLevel);
  EXPECT_EQ(b.recovered(), 0u);
}

}  // namespace
}  // namespace haltpool::idle
