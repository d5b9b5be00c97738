// CLOCK_MONOTONIC, the CPU counter, and the conversion of a clock deadline
// into counter units that the wait loops compare against
// (arch/cycle_clock.h).

#include "arch/cycle_clock.h"

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <random>

#include "gtest/gtest.h"

namespace haltpool::arch {
namespace {

constexpr int64_t kMs = 1000000;

TEST(CycleClockRate, IsPositiveAndFixed) {
  const double rate = CyclesPerNs();
  EXPECT_GT(rate, 0.0);
  EXPECT_EQ(CyclesPerNs(), rate) << "measured once";
#if defined(__s390x__) && !defined(HALTPOOL_ARCH_GENERIC)
  EXPECT_DOUBLE_EQ(rate, 4.096) << "TOD clock: 4096 units per microsecond";
#endif
#if defined(HALTPOOL_ARCH_GENERIC)
  EXPECT_DOUBLE_EQ(rate, 1.0) << "the generic counter is CLOCK_MONOTONIC";
#endif
}

TEST(CycleClockRate, AgreesWithTheClockOverAFewMilliseconds) {
  // The rate converts counter ticks to nanoseconds: over a 5 ms interval the
  // counter must advance rate * elapsed within a wide margin (a conversion
  // check, not a speed check: preemption only stretches both readings).
  const double rate = CyclesPerNs();
  const int64_t t0 = MonotonicNowNs();
  const uint64_t c0 = ReadCycles();
  while (MonotonicNowNs() - t0 < 5 * kMs) {
  }
  const uint64_t c1 = ReadCycles();
  const int64_t t1 = MonotonicNowNs();
  const double ticks = static_cast<double>(c1 - c0);
  const double expected = rate * static_cast<double>(t1 - t0);
  EXPECT_GT(ticks, 0.5 * expected);
  EXPECT_LT(ticks, 1.5 * expected);
}

TEST(CycleClockNow, MatchesClockGettime) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const int64_t before =
      static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  const int64_t now = MonotonicNowNs();
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const int64_t after =
      static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  EXPECT_LE(before, now);
  EXPECT_LE(now, after);
}

TEST(CycleClockNow, NeitherClockGoesBackwardsOnOneThread) {
  int64_t last_ns = MonotonicNowNs();
  uint64_t last_cycles = ReadCycles();
  for (int i = 0; i < 100000; ++i) {
    const int64_t ns = MonotonicNowNs();
    const uint64_t cycles = ReadCycles();
    ASSERT_GE(ns, last_ns) << "iteration " << i;
    ASSERT_GE(cycles, last_cycles) << "iteration " << i;
    last_ns = ns;
    last_cycles = cycles;
  }
}

TEST(CycleClockDeadline, NoDeadlineIsTheLargestCount) {
  EXPECT_EQ(DeadlineToCycles(kNoDeadline), UINT64_MAX);
}

TEST(CycleClockDeadline, PassedDeadlineIsNow) {
  for (int64_t deadline :
       {int64_t{0}, int64_t{-5}, MonotonicNowNs() - kMs, MonotonicNowNs()}) {
    const uint64_t before = ReadCycles();
    const uint64_t c = DeadlineToCycles(deadline);
    const uint64_t after = ReadCycles();
    EXPECT_GE(c, before) << deadline;
    EXPECT_LE(c, after) << deadline;
  }
}

TEST(CycleClockDeadline, IsMonotonicInTheDeadline) {
  const int64_t now = MonotonicNowNs();
  uint64_t last = 0;
  for (int64_t ahead : {int64_t{0}, int64_t{1000}, kMs, 10 * kMs, 1000 * kMs,
                        int64_t{3600} * 1000 * kMs}) {
    const uint64_t c = DeadlineToCycles(now + ahead);
    EXPECT_GE(c, last) << "now + " << ahead << " ns";
    last = c;
  }
  EXPECT_GE(DeadlineToCycles(kNoDeadline - 1), last);
  EXPECT_GE(DeadlineToCycles(kNoDeadline), DeadlineToCycles(kNoDeadline - 1));
}

TEST(CycleClockDeadline, FarFutureSaturatesInsteadOfWrapping) {
  // kNoDeadline - 1 is ~292 years away: far more counter ticks than fit
  // after the current count at multi-GHz rates on some CPUs; the result
  // must not wrap around to a small (past) value.
  const uint64_t now = ReadCycles();
  EXPECT_GT(DeadlineToCycles(kNoDeadline - 1), now);
  EXPECT_GT(DeadlineToCycles(MonotonicNowNs() + int64_t{1000000} * 1000 * kMs),
            now);
}

TEST(CycleClockDeadline, CounterDeadlineIsNeverBeforeTheClockDeadline) {
  // The contract: "the counter value at which CLOCK_MONOTONIC reaches
  // deadline_ns". The wait loops report "deadline passed" when the counter
  // reaches it, so it must not come before the clock does. Spin until the
  // counter reaches each converted deadline and read the clock at once.
  // Asserted where the counter is known to drive or be CLOCK_MONOTONIC:
  // the x86 TSC (the clocksource, or kvm-clock's base) and the generic
  // backend (the counter is the clock). Under qemu-user, which the cross
  // test uses for the other backends, the emulated CNTVCT_EL0 strays from
  // the host's CLOCK_MONOTONIC by hundreds of ns, so no conversion can be
  // exact there; WaitWhileEqual's lower bound (cpu_wait_test.cc) is the
  // contract that must hold on every backend.
#if !defined(HALTPOOL_ARCH_GENERIC) && \
    (defined(__aarch64__) || defined(__s390x__))
  GTEST_SKIP() << "exactness of the counter conversion is only asserted on "
                  "x86-64 and the generic backend";
#endif
  std::minstd_rand rng(3);
  int tries = 0, early = 0;
  int64_t worst_ns = 0;
  const int64_t stop = MonotonicNowNs() + 40 * kMs;
  while (MonotonicNowNs() < stop) {
    const int64_t deadline =
        MonotonicNowNs() + static_cast<int64_t>(rng() % 3000);
    const uint64_t c = DeadlineToCycles(deadline);
    while (ReadCycles() < c) {
    }
    const int64_t now = MonotonicNowNs();
    ++tries;
    if (now < deadline) {
      ++early;
      worst_ns = std::max(worst_ns, deadline - now);
    }
  }
  EXPECT_EQ(early, 0) << early << " of " << tries
                      << " counter deadlines came before the clock deadline, "
                         "the worst by "
                      << worst_ns << " ns";
}

}  // namespace
}  // namespace haltpool::arch
