// bench/latency_histogram: the summary's figures and cyclictest -h's
// buckets, overflow and layout.

#include "bench/latency_histogram.h"

#include "gtest/gtest.h"

namespace haltpool::bench {
namespace {

TEST(LatencyHistogram, SummaryOfUnsortedSamples) {
  const LatencySummary s = Summarize({3000, 1000, 2000, 6000});
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.min_ns, 1000);
  EXPECT_DOUBLE_EQ(s.avg_ns, 3000);
  EXPECT_EQ(s.p99_ns, 6000);
  EXPECT_EQ(s.max_ns, 6000);
}

TEST(LatencyHistogram, P99IsTheSampleAtItsRank) {
  std::vector<int64_t> v;
  for (int i = 0; i < 200; ++i) v.push_back(i);
  EXPECT_EQ(Summarize(v).p99_ns, 198);
}

TEST(LatencyHistogram, EmptyRunIsAllZero) {
  const LatencySummary s = Summarize({});
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.max_ns, 0);
}

TEST(LatencyHistogram, OneMicrosecondBucketsAndOverflow) {
  const LatencyHistogram h =
      MakeHistogram({-500, 0, 999, 1000, 2999, 3000, 50000}, 3);
  ASSERT_EQ(h.buckets.size(), 3u);
  EXPECT_EQ(h.buckets[0], 3);  // -500 clamps to 0, as cyclictest.
  EXPECT_EQ(h.buckets[1], 1);
  EXPECT_EQ(h.buckets[2], 1);
  EXPECT_EQ(h.overflow, 2);
}

TEST(LatencyHistogram, CyclictestLayoutWithoutEmptyBuckets) {
  EXPECT_EQ(FormatHistogram(MakeHistogram({1500, 1600, 9000}, 5)),
            "000001 000002\n# Histogram Overflows: 00001\n");
}

}  // namespace
}  // namespace haltpool::bench
