// The poll back-off's readings (arch/contention_signals.h): the parsers on
// text captured from a 2-vCPU KVM guest and on malformed text, and the
// readers on the real files where the machine has them.

#include "arch/contention_signals.h"

#include <cstdint>
#include <optional>

#include "gtest/gtest.h"

namespace haltpool::arch {
namespace {

TEST(ContentionSignals, ParsesSchedstatRunDelay) {
  EXPECT_EQ(ParseSchedstatRunDelayNs("2682310 383262 3\n"), 383262);
  EXPECT_EQ(ParseSchedstatRunDelayNs("0 0 0"), 0);
}

TEST(ContentionSignals, MalformedSchedstatIsAbsent) {
  EXPECT_EQ(ParseSchedstatRunDelayNs(""), std::nullopt);
  EXPECT_EQ(ParseSchedstatRunDelayNs("2682310"), std::nullopt);
  EXPECT_EQ(ParseSchedstatRunDelayNs("2682310 383262"), std::nullopt);
  EXPECT_EQ(ParseSchedstatRunDelayNs("2682310 -5 3"), std::nullopt);
  EXPECT_EQ(ParseSchedstatRunDelayNs("2682310 x 3"), std::nullopt);
}

TEST(ContentionSignals, RunDelayNeverGoesBack) {
  ProcFile file(kProcThreadSchedstat);
  if (!file.available()) {
    GTEST_SKIP() << kProcThreadSchedstat
                 << " cannot be opened (no CONFIG_SCHED_INFO, or no /proc)";
  }
  const std::optional<int64_t> a = ReadRunDelayNs(file);
  ASSERT_TRUE(a.has_value());
  const std::optional<int64_t> b = ReadRunDelayNs(file);
  ASSERT_TRUE(b.has_value());
  EXPECT_GE(*a, 0);
  EXPECT_GE(*b, *a);
}

TEST(ContentionSignals, ParsesCpuPressure) {
  EXPECT_EQ(ParseCpuPressureSomeUs(
                "some avg10=0.02 avg60=2.26 avg300=4.93 total=5308665093\n"
                "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"),
            5308665093);
  // Kernels before 5.13 print no "full" line for the CPU.
  EXPECT_EQ(
      ParseCpuPressureSomeUs("some avg10=1.00 avg60=0.50 avg300=0.10 total=42"),
      42);
}

TEST(ContentionSignals, MalformedCpuPressureIsAbsent) {
  EXPECT_EQ(ParseCpuPressureSomeUs(""), std::nullopt);
  EXPECT_EQ(ParseCpuPressureSomeUs(
                "full avg10=0.00 avg60=0.00 avg300=0.00 total=7\n"),
            std::nullopt);
  EXPECT_EQ(ParseCpuPressureSomeUs("some avg10=0.00 avg60=0.00\n"),
            std::nullopt);
  EXPECT_EQ(ParseCpuPressureSomeUs(
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=-3\n"),
            std::nullopt);
  EXPECT_EQ(ParseCpuPressureSomeUs(
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=x\n"),
            std::nullopt);
}

TEST(ContentionSignals, ParsesLoadavg) {
  EXPECT_EQ(ParseLoadavgRunning("0.09 0.91 1.60 3/148 21880\n"), 3);
  EXPECT_EQ(ParseLoadavgRunning("12.00 8.00 4.00 17/2048 1"), 17);
}

TEST(ContentionSignals, MalformedLoadavgIsAbsent) {
  EXPECT_EQ(ParseLoadavgRunning(""), std::nullopt);
  EXPECT_EQ(ParseLoadavgRunning("0.09 0.91 1.60"), std::nullopt);
  EXPECT_EQ(ParseLoadavgRunning("0.09 0.91 1.60 3 148"), std::nullopt);
  EXPECT_EQ(ParseLoadavgRunning("0.09 0.91 1.60 x/148 1"), std::nullopt);
}

TEST(ContentionSignals, ReadsTheRealLoadavg) {
  const std::optional<int64_t> running = ReadLoadavgRunning();
  if (!running) GTEST_SKIP() << "no readable /proc/loadavg here";
  EXPECT_GE(*running, 1);  // This thread runs.
}

TEST(ContentionSignals, KeptOpenLoadavgReadsAgain) {
  ProcFile file(kProcLoadavg);
  if (!file.available()) GTEST_SKIP() << "no /proc/loadavg here";
  for (int i = 0; i < 3; ++i) {
    const std::optional<int64_t> running = ReadLoadavgRunning(file);
    ASSERT_TRUE(running.has_value()) << i;
    EXPECT_GE(*running, 1) << i;
  }
}

TEST(ContentionSignals, KeptOpenPressureReadsAgainAndNeverGoesBack) {
  ProcFile file(kProcPressureCpu);
  if (!file.available()) GTEST_SKIP() << "no /proc/pressure/cpu here";
  const std::optional<int64_t> a = ReadCpuPressureSomeUs(file);
  const std::optional<int64_t> b = ReadCpuPressureSomeUs(file);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());  // A second pread from offset 0 works.
  EXPECT_GE(*b, *a);
  const std::optional<int64_t> opened = ReadCpuPressureSomeUs();
  ASSERT_TRUE(opened.has_value());
  EXPECT_GE(*opened, *b);
}

}  // namespace
}  // namespace haltpool::arch
