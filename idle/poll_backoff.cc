#include "idle/poll_backoff.h"

#include "idle/governor.h"

namespace haltpool::idle {

bool PollBackoff::Contended(const ContentionSample& s) noexcept {
  return s.steal_fraction > kStealThreshold || s.runnable > s.usable_cpus ||
         s.preempted >= kPreemptedThreshold;
}

void PollBackoff::Update(const ContentionSample& sample) noexcept {
  ++samples_;
  last_ = sample;
  if (Contended(sample)) {
    if (level_ < kMaxLevel) {
      ++level_;
      ++backed_off_;
    }
    quiet_since_ns_ = sample.now_ns;
    return;
  }
  if (level_ > 0 && sample.now_ns - quiet_since_ns_ >= kHoldNs) {
    --level_;
    quiet_since_ns_ = sample.now_ns;
    if (level_ == 0) ++recovered_;
  }
}

int64_t PollBackoff::CapAtLevel(int level, int64_t cap_ns) noexcept {
  if (level <= 0) return kUnlimitedPollNs;
  if (level >= kMaxLevel) return 0;
  return cap_ns >> level;
}

}  // namespace haltpool::idle
