// PollBackoff (idle/poll_backoff.h) on injected samples: each signal backs
// it off, a busy machine whose threads all have a CPU does not, it stops
// polling at the last level, and it recovers one level per hold time
// without flapping.

#include "idle/poll_backoff.h"

#include <cstdint>
#include <optional>
#include <utility>

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
  s.runnable = 1;  // The sampler.
  s.usable_cpus = 2;
  return s;
}

// Samples as an otherwise idle 2-CPU machine gives them, with one thread
// outside the pool submitting (running or spinning for the reply) and the
// sampling worker: both are runnable, neither waits, nothing is stolen.
ContentionSample OutsideSubmitterOnTwoCpus(int64_t now, int i) {
  ContentionSample s;
  s.now_ns = now;
  s.usable_cpus = 2;
  s.runnable = 2;  // The submitter and the sampler.
  s.submitters = 1;
  if (i % 10 == 0) s.steal_fraction = 0.0;
  // Every other sample another worker is running the task just submitted,
  // polling for the next one, or woken and not yet running (runnable 3,
  // two of the pool's workers awake).
  if (i % 3 != 0) {
    s.runnable = 3;
    s.own_awake = 2;
  }
  return s;
}

TEST(PollBackoff, AnOutsideSubmitterAndTheSamplerOnTwoCpusAreNoContention) {
  PollBackoff b;
  for (int i = 0; i < 100; ++i) {
    const ContentionSample s = OutsideSubmitterOnTwoCpus(i * kInterval, i);
    EXPECT_FALSE(PollBackoff::Contended(s, false)) << i;
    b.Update(s);
    EXPECT_EQ(b.level(), 0) << i;
  }
  // The same with the kernel's CPU pressure, even where the pool's own
  // threads wait for each other (a poller and a busy worker beside the
  // submitter): none of them is someone else's.
  PollBackoff p;
  for (int i = 0; i < 100; ++i) {
    ContentionSample s = OutsideSubmitterOnTwoCpus(i * kInterval, i);
    s.cpu_wait_fraction = i % 2 ? 0.004 : 0.9;
    p.Update(s);
    EXPECT_EQ(p.level(), 0) << i;
  }
}

TEST(PollBackoff, OthersThatFillEveryCpuAreContention) {
  // The sampler, a busy worker and two threads of someone else on 2 CPUs.
  ContentionSample s = Quiet(0);
  s.runnable = 4;
  s.own_awake = 2;
  EXPECT_EQ(PollBackoff::RunnableOthers(s), 2);
  EXPECT_TRUE(PollBackoff::Contended(s, false));
  // One of them: it has a CPU, the poller the other.
  s.runnable = 3;
  EXPECT_EQ(PollBackoff::RunnableOthers(s), 1);
  EXPECT_FALSE(PollBackoff::Contended(s, false));
  // The pool's awake workers are not others, nor are its submitters.
  s.runnable = 6;
  s.own_awake = 3;
  s.submitters = 2;
  EXPECT_EQ(PollBackoff::RunnableOthers(s), 1);
  EXPECT_FALSE(PollBackoff::Contended(s, false));
  // More submitters than runnable threads left: none of someone else's.
  s.submitters = 5;
  EXPECT_EQ(PollBackoff::RunnableOthers(s), 0);
  s.runnable.reset();
  EXPECT_EQ(PollBackoff::RunnableOthers(s), std::nullopt);
  EXPECT_FALSE(PollBackoff::Contended(s, false));
}

TEST(PollBackoff, CpuWaitConfirmsTheCountWhereTheKernelGivesIt) {
  // Others fill both CPUs, but none waits: each has a CPU (the snapshot
  // caught a kworker, or a thread about to block).
  ContentionSample s = Quiet(0);
  s.runnable = 9;
  s.cpu_wait_fraction = 0.02;
  EXPECT_FALSE(PollBackoff::Contended(s, false));
  // Others fill both CPUs and threads were kept from a CPU a fifth of the
  // time.
  s.cpu_wait_fraction = 0.2;
  EXPECT_TRUE(PollBackoff::Contended(s, false));
  // Threads waited, but no one else's fills the CPUs: this pool's own.
  s.runnable = 2;
  s.cpu_wait_fraction = 0.9;
  EXPECT_FALSE(PollBackoff::Contended(s, false));
}

TEST(PollBackoff, AbsentReadingsAreNoSignal) {
  ContentionSample s;
  s.usable_cpus = 1;
  EXPECT_FALSE(PollBackoff::Contended(s, false));
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
  runnable.runnable = 3;  // The sampler and two others on 2 CPUs.
  ContentionSample preempted = Quiet(0);
  preempted.preempted_ns = PollBackoff::kPreemptedDelayNs;
  using Cause = PollBackoff::Cause;
  const std::pair<ContentionSample, Cause> cases[] = {
      {steal, Cause::kSteal},
      {runnable, Cause::kRunnable},
      {preempted, Cause::kPreempted}};
  for (const auto& [s, cause] : cases) {
    // A poller's wait counts when the sample before showed one too.
    const bool waited_before = cause == Cause::kPreempted;
    EXPECT_TRUE(PollBackoff::Contended(s, waited_before));
    EXPECT_EQ(PollBackoff::CauseOf(s, waited_before), cause);
    PollBackoff b;
    if (waited_before) {
      b.Update(s);
      EXPECT_EQ(b.level(), 0);
      ContentionSample again = s;
      again.now_ns += kInterval;
      b.Update(again);
    } else {
      b.Update(s);
    }
    EXPECT_EQ(b.level(), 1);
    EXPECT_EQ(b.PollCapNs(200000), 100000);
    // Counted under its own rule, and under no other.
    for (Cause c : {Cause::kSteal, Cause::kPreempted, Cause::kRunnable}) {
      EXPECT_EQ(b.contended(c), c == cause ? 1u : 0u);
    }
  }
  EXPECT_EQ(PollBackoff::CauseOf(Quiet(0), true), Cause::kNone);
}

TEST(PollBackoff, TheThresholdsAreStrict) {
  ContentionSample s = Quiet(0);
  s.steal_fraction = PollBackoff::kStealThreshold;
  s.runnable = s.usable_cpus;  // The sampler and one other on 2 CPUs.
  s.preempted_ns = PollBackoff::kPreemptedDelayNs - 1;
  EXPECT_FALSE(PollBackoff::Contended(s, false));
  s.runnable = 3;  // Others fill both CPUs; the wait decides.
  s.cpu_wait_fraction = PollBackoff::kWaitThreshold;
  EXPECT_FALSE(PollBackoff::Contended(s, false));
}

// A short task or a kernel thread woken on a poller's CPU takes it for
// microseconds, and a kernel thread now and then for a millisecond; such
// moments, many or long, are not contention unless they come back to back.
TEST(PollBackoff, BriefOrLonePreemptionsAreNotContention) {
  PollBackoff b;
  for (int i = 0; i < 50; ++i) {
    ContentionSample s = Quiet(i * kInterval);
    s.preempted_ns = i % 2 == 0 ? 2 * PollBackoff::kPreemptedDelayNs : 40000;
    b.Update(s);
  }
  EXPECT_EQ(b.level(), 0);
  EXPECT_EQ(b.contended(PollBackoff::Cause::kPreempted), 0u);
  // The same wait in two samples in a row is.
  ContentionSample s = Quiet(50 * kInterval);
  s.preempted_ns = PollBackoff::kPreemptedDelayNs;
  b.Update(s);
  s.now_ns += kInterval;
  b.Update(s);
  EXPECT_EQ(b.level(), 1);
  EXPECT_EQ(b.contended(PollBackoff::Cause::kPreempted), 1u);
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
  busy.runnable = 9;
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
