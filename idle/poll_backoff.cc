#include "idle/poll_backoff.h"

#include "idle/governor.h"

namespace haltpool::idle {

std::optional<int64_t> PollBackoff::RunnableOthers(
    const ContentionSample& s) noexcept {
  if (!s.runnable) return std::nullopt;
  const int64_t others = *s.runnable - s.own_awake - s.submitters;
  return others < 0 ? 0 : others;
}

PollBackoff::Cause PollBackoff::CauseOf(const ContentionSample& s,
                                        bool waited_before) noexcept {
  if (s.steal_fraction && *s.steal_fraction > kStealThreshold) {
    return Cause::kSteal;
  }
  if (waited_before && s.preempted_ns >= kPreemptedDelayNs) {
    return Cause::kPreempted;
  }
  // Others fill every CPU, and threads really waited (where the kernel
  // says so).
  const std::optional<int64_t> others = RunnableOthers(s);
  if (!others || *others < s.usable_cpus) return Cause::kNone;
  if (s.cpu_wait_fraction && *s.cpu_wait_fraction <= kWaitThreshold) {
    return Cause::kNone;
  }
  return Cause::kRunnable;
}

void PollBackoff::Update(const ContentionSample& sample) noexcept {
  ++samples_;
  last_ = sample;
  const Cause cause = CauseOf(sample, waited_);
  waited_ = sample.preempted_ns >= kPreemptedDelayNs;
  if (cause != Cause::kNone) {
    ++contended_[static_cast<int>(cause)];
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
