#include "idle/interval_pattern.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace haltpool::idle {
namespace {

TEST(IntervalPattern, SteadyIntervalsAreRegular) {
  const int64_t intervals[] = {100000, 101000, 99000,  100000,
                               100500, 99500,  100000, 100000};
  IntervalPattern p{};
  ASSERT_TRUE(RegularInterval(intervals, 8, p));
  EXPECT_EQ(p.median_ns, 100000);
  EXPECT_EQ(p.deviation_ns, 500);
}

TEST(IntervalPattern, OneLateIntervalAndTheShortOneAfterMoveNothing) {
  // A fixed schedule with one arrival 50 us late.
  const int64_t intervals[] = {500000, 500000, 550000, 450000,
                               500000, 500000, 500000, 500000};
  IntervalPattern p{};
  ASSERT_TRUE(RegularInterval(intervals, 8, p));
  EXPECT_EQ(p.median_ns, 500000);
  EXPECT_EQ(p.deviation_ns, 0);
}

TEST(IntervalPattern, ScatteredIntervalsAreNot) {
  const int64_t intervals[] = {10000,  900000, 40000,  300000,
                               700000, 5000,   200000, 1000000};
  IntervalPattern p{-1, -1};
  EXPECT_FALSE(RegularInterval(intervals, 8, p));
  EXPECT_EQ(p.median_ns, -1);  // Left alone.
}

TEST(IntervalPattern, SmallJitterIsRegularWhateverTheMean) {
  // Deviation about 10 us on a 30 us mean: more than 1/6, under 20 us.
  const int64_t intervals[] = {20000, 40000, 20000, 40000,
                               20000, 40000, 20000, 40000};
  IntervalPattern p{};
  EXPECT_TRUE(RegularInterval(intervals, 8, p));
}

TEST(IntervalPattern, FewerIntervalsWorkAndNoneDoNot) {
  const int64_t intervals[] = {50000, 50000, 50000, 50000};
  IntervalPattern p{};
  EXPECT_TRUE(RegularInterval(intervals, 4, p));
  EXPECT_EQ(p.median_ns, 50000);
  EXPECT_FALSE(RegularInterval(intervals, 0, p));
}

}  // namespace
}  // namespace haltpool::idle
