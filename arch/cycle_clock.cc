#include "arch/cycle_clock.h"

#include <algorithm>
#include <array>

namespace haltpool::arch {
namespace {

// Three 100 us samples, median ratio: one preempted sample cannot skew it.
constexpr int kCalibrationSamples = 3;
constexpr int64_t kCalibrationSampleNs = 100000;

double Calibrate() noexcept {
  std::array<double, kCalibrationSamples> ratios;
  for (double& r : ratios) {
    const int64_t t0 = MonotonicNowNs();
    const uint64_t c0 = ReadCycles();
    int64_t t1;
    do {
      t1 = MonotonicNowNs();
    } while (t1 - t0 < kCalibrationSampleNs);
    const uint64_t c1 = ReadCycles();
    r = static_cast<double>(c1 - c0) / static_cast<double>(t1 - t0);
  }
  std::sort(ratios.begin(), ratios.end());
  return ratios[kCalibrationSamples / 2];
}

}  // namespace

double CyclesPerNs() noexcept {
  static const double kRate = [] {
    const double hint = platform::CyclesPerNsHint();
    return hint > 0 ? hint : Calibrate();
  }();
  return kRate;
}

uint64_t DeadlineToCycles(int64_t deadline_ns) noexcept {
  if (deadline_ns == kNoDeadline) return UINT64_MAX;
  const double rate = CyclesPerNs();
  // Clock first, counter second: a preemption in between makes the deadline
  // late, never early. Rounded up for the same reason.
  const int64_t left_ns = deadline_ns - MonotonicNowNs();
  const uint64_t now_cycles = ReadCycles();
  if (left_ns <= 0) return now_cycles;
  const double left_cycles = static_cast<double>(left_ns) * rate + 1.0;
  if (left_cycles >= static_cast<double>(UINT64_MAX - now_cycles)) {
    return UINT64_MAX;
  }
  return now_cycles + static_cast<uint64_t>(left_cycles);
}

}  // namespace haltpool::arch
