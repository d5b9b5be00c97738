#include "idle/predictive_governor.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdlib>
#include <limits>

#include "idle/idle_state.h"

namespace haltpool::idle {
namespace {

// IdleContext::deadline_ns when the caller has no timer (arch::kNoDeadline).
constexpr int64_t kNoTimer = std::numeric_limits<int64_t>::max();

constexpr Selection Block(int64_t until_ns) {
  return {kBlockState, 0, until_ns};
}

// Adds `value` to a ring of the last N samples, `count` of them filled.
template <size_t N>
void Push(std::array<int64_t, N>& ring, int& count, int& next, int64_t value) {
  ring[next] = value;
  next = (next + 1) % static_cast<int>(N);
  count = std::min(count + 1, static_cast<int>(N));
}

// The ring's regular interval (interval_pattern.h); false until it is full
// or if it is not regular.
bool FullAndRegular(const std::array<int64_t, kMaxIntervals>& ring, int count,
                    IntervalPattern& pattern) {
  return count == kMaxIntervals &&
         RegularInterval(ring.data(), kMaxIntervals, pattern);
}

// A decaying mean: a plain one of the first `limit` samples, then each new
// one weighs 1/limit.
void AddToMean(int64_t sample, int limit, int64_t& mean, int& count) {
  count = std::min(count + 1, limit);
  mean += (sample - mean) / count;
}

}  // namespace

PredictiveGovernor::PredictiveGovernor(const PredictiveParams& params) noexcept
    : params_(params), margin_ns_(params.wake_margin_ns) {}

int64_t PredictiveGovernor::wake_margin_ns() const noexcept {
  return margin_ns_;
}

bool PredictiveGovernor::Regular(IntervalPattern& pattern) const noexcept {
  return FullAndRegular(history_, history_count_, pattern);
}

bool PredictiveGovernor::Rhythmic(IntervalPattern& rhythm) const noexcept {
  return FullAndRegular(rhythm_, rhythm_count_, rhythm);
}

int64_t PredictiveGovernor::NextBeat() const noexcept {
  if (beat_ns_ <= 0 || anchor_ns_ == kNoWake ||
      period_start_ns_ - anchor_ns_ > kAnchorBeats * beat_ns_) {
    return 0;
  }
  // The first beat after the period began, and not the last wake's own.
  const int64_t after =
      std::max(period_start_ns_, last_wake_ns_ + beat_ns_ / 2);
  return anchor_ns_ + ((after - anchor_ns_) / beat_ns_ + 1) * beat_ns_;
}

bool PredictiveGovernor::RhythmWins(bool periods_regular) const noexcept {
  // A beat too short to block for is polled across anyway (rules 3 and 5).
  if (beat_ns_ < params_.block_target_residency_ns ||
      anchor_samples_ < kAnchorSamples || rhythm_errors_ < kAnchorSamples ||
      kSteadyBeat * rhythm_error_ns_ > beat_ns_) {
    return false;
  }
  return !periods_regular || period_errors_ < kAnchorSamples ||
         rhythm_error_ns_ <= period_error_ns_;
}

bool PredictiveGovernor::NearBeat(int64_t interval_ns) const noexcept {
  return beat_ns_ > 0 && std::abs(interval_ns - beat_ns_) <= beat_ns_ / 8;
}

int64_t PredictiveGovernor::predicted_interval_ns() const noexcept {
  IntervalPattern pattern;
  return Regular(pattern) ? pattern.median_ns : 0;
}

Selection PredictiveGovernor::Poll(int64_t window_ns) noexcept {
  last_poll_ns_ = window_ns;
  return {kPollState, window_ns};
}

Selection PredictiveGovernor::Plan(const IdleContext& context) noexcept {
  // Rule 1's first expected wake, the caller's timer; rule 0 keeps it for
  // the plan after a dense poll that runs out (rules 3 and 4).
  const bool timer = context.deadline_ns != kNoTimer;
  expected_ns_ = timer ? context.deadline_ns : 0;
  poll_until_ns_ = expected_ns_;
  second_ns_ = 0;
  period_guess_ns_ = 0;
  beat_guess_ns_ = 0;
  guess_missed_ = false;
  // Rule 0: dense arrivals.
  const int64_t dense_poll =
      std::min(params_.dense_poll_ns, context.poll_cap_ns);
  if (wake_periods_ >= kHistory && dense_poll > 0 &&
      kDenseCover * mean_period_ns_ <= params_.dense_poll_ns) {
    dense_poll_ = true;
    return Poll(dense_poll);
  }
  // Rule 1: the expected wake, the timer's or the pattern's, whichever
  // comes first.
  IntervalPattern rhythm;
  if (Rhythmic(rhythm) && rhythm.median_ns > 0 &&
      (beat_lost_ || !NearBeat(rhythm.median_ns))) {
    StartBeat(rhythm.median_ns);
  }
  IntervalPattern pattern;
  const bool regular = Regular(pattern);
  period_guess_ns_ = regular ? period_start_ns_ + pattern.median_ns : 0;
  beat_guess_ns_ = NextBeat();
  const bool by_rhythm = beat_guess_ns_ != 0 && RhythmWins(regular);
  int64_t predicted = 0;
  int64_t tolerance = 0;
  if (by_rhythm) {
    predicted = beat_guess_ns_;
    tolerance = std::max(kRhythmTolerance * anchor_miss_ns_, kMinToleranceNs);
  } else if (regular) {
    predicted = period_guess_ns_;
    tolerance = std::max(2 * pattern.deviation_ns, kMinToleranceNs);
  }
  if ((by_rhythm || regular) &&
      (expected_ns_ == 0 || predicted < expected_ns_)) {
    expected_ns_ = predicted;
    poll_until_ns_ = predicted + tolerance;
    if (timer) poll_until_ns_ = std::min(poll_until_ns_, context.deadline_ns);
    if (!by_rhythm) {
      // Rule 5: in a burst, the longest recent period, the gap between
      // bursts, comes next.
      const int64_t longest =
          *std::max_element(history_.begin(), history_.end());
      const int64_t second = period_start_ns_ + longest;
      if (pattern.median_ns < params_.block_target_residency_ns &&
          longest >= kSecondRhythm * pattern.median_ns &&
          second > poll_until_ns_ && second < context.deadline_ns) {
        second_ns_ = second;
        second_until_ns_ = std::min(second + tolerance, context.deadline_ns);
      }
    }
  }
  if (expected_ns_ != 0) return Step(context);

  // Rule 2: no expected wake; poll only if short periods are the rule.
  const int64_t cap = CapNs(context);
  if (cap > 0 && short_share_ * 2 >= kShareOne && short_mean_ns_ > 0) {
    return Poll(std::min(
        cap, std::max(params_.block_target_residency_ns, 2 * short_mean_ns_)));
  }
  return Block(kBlockUntilDeadline);
}

int64_t PredictiveGovernor::CapNs(const IdleContext& context) const noexcept {
  return std::min(params_.poll_ns, context.poll_cap_ns);
}

Selection PredictiveGovernor::Step(const IdleContext& context) noexcept {
  const int64_t cap = CapNs(context);
  // Rule 5: the poll across the first wake is over.
  if (second_ns_ != 0 && (poll_ran_out_ || context.now_ns >= poll_until_ns_)) {
    expected_ns_ = second_ns_;
    poll_until_ns_ = second_until_ns_;
    second_ns_ = 0;
    poll_ran_out_ = false;
  }
  // With no poll allowed, a block ahead of the wake would only end early.
  if (expected_ns_ == 0 || poll_ran_out_ || cap == 0) {
    return Block(kBlockUntilDeadline);
  }
  // Rule 4: far from the wake, block until the margin before it.
  const int64_t block_until = expected_ns_ - MarginFor(cap);
  if (block_until - context.now_ns >= params_.block_target_residency_ns) {
    return Block(block_until);
  }
  // Rule 3: close to it, poll across it, for the cap at most; a window the
  // cap would cut short starts with a block until the cap before its end.
  const int64_t window = poll_until_ns_ - context.now_ns;
  if (window <= 0) return Block(kBlockUntilDeadline);
  if (window - cap >= params_.block_target_residency_ns) {
    return Block(poll_until_ns_ - cap);
  }
  return Poll(std::min(window, cap));
}

Selection PredictiveGovernor::Select(const IdleContext& context) noexcept {
  Selection selection;
  if (!in_period_) {
    in_period_ = true;
    period_start_ns_ = context.now_ns;
    poll_ran_out_ = false;
    selection = Plan(context);
  } else {
    selection = Step(context);
  }
  select_ns_ = context.now_ns;
  block_until_ns_ = selection.state == kBlockState ? selection.block_until_ns
                                                   : kBlockUntilDeadline;
  return selection;
}

void PredictiveGovernor::Reflect(int state, int64_t residency_ns,
                                 IdleExit exit) noexcept {
  const int64_t end = select_ns_ + residency_ns;
  const bool limited_block_ran_out = limited_block_ran_out_;
  limited_block_ran_out_ = state == kBlockState &&
                           block_until_ns_ != kBlockUntilDeadline &&
                           exit == IdleExit::kTimeout;
  if (limited_block_ran_out_) ran_out_block_until_ns_ = block_until_ns_;
  // A wake seen from the block state was seen late by about the block
  // state's exit latency (a FUTEX_WAKE's cost, not a timer's lateness);
  // menu.c takes it off its measured idle too.
  int64_t seen_at = end;
  if (exit == IdleExit::kWoken && state == kBlockState) {
    seen_at -=
        std::min(params_.block_exit_latency_ns, (end - period_start_ns_) / 2);
  }
  if (state == kBlockState && block_until_ns_ != kBlockUntilDeadline) {
    if (exit != IdleExit::kWoken) {
      // A limited block ran out: learn how late it ended.
      LearnLateness(std::max<int64_t>(0, end - block_until_ns_));
    } else if (seen_at > block_until_ns_) {
      // The wake found the block still asleep past its limit: its timer is
      // at least that late, by how much more is unknown. It counts double,
      // so the margin doubles (haltpoll's grow) until the timer fires before
      // the wake, and from then on the lateness itself is measured. Without
      // it a host whose timers are later than the margin never teaches it,
      // since every wake ends the block before the timer does.
      LearnLateness(2 * (seen_at - block_until_ns_));
    }
  }
  // A dense poll that ran out leaves the timer's plan, if any.
  if (state == kPollState && exit == IdleExit::kTimeout) {
    poll_ran_out_ = !dense_poll_;
    // Through its tolerance: the prediction in use missed.
    if (!dense_poll_ && end >= poll_until_ns_) guess_missed_ = true;
  }
  dense_poll_ = false;
  if (exit == IdleExit::kTimeout) return;
  // A wake the poll finds at once after a limited block ran out came while
  // the block was on its way out, after its limit: it counts as coming at
  // the limit, the early end, since a prediction too early costs a longer
  // poll and one too late a block.
  if (exit == IdleExit::kWoken && limited_block_ran_out &&
      residency_ns < kFoundAtOnceNs) {
    seen_at = std::max(period_start_ns_, ran_out_block_until_ns_);
  }
  if (exit == IdleExit::kWoken) {
    // A wake before a limited block's limit came before the prediction in
    // use expected it: a miss too.
    if (state == kBlockState && block_until_ns_ != kBlockUntilDeadline &&
        seen_at < block_until_ns_) {
      guess_missed_ = true;
    }
    NoteWake(seen_at, state == kPollState && residency_ns >= kFoundAtOnceNs);
  }
  EndPeriod(seen_at, exit == IdleExit::kDeadline);
}

void PredictiveGovernor::StartBeat(int64_t beat_ns) noexcept {
  beat_ns_ = beat_ns;
  beat_lost_ = false;
  rhythm_misses_ = 0;
  anchor_samples_ = 0;
  anchor_miss_ns_ = 0;
  rhythm_errors_ = 0;
  rhythm_error_ns_ = 0;
}

void PredictiveGovernor::NoteWake(int64_t seen_ns, bool exact) noexcept {
  // How far each prediction this period had was from a wake seen when it
  // came, and the one in use from a wake it missed: one after its poll ran
  // out (seen late by the wake's cost, if from a block: still a miss) or
  // one before the block ahead of it ended.
  const bool missed = guess_missed_ && expected_ns_ != 0;
  if (period_guess_ns_ != 0 &&
      (exact || (missed && expected_ns_ == period_guess_ns_))) {
    AddToMean(std::abs(seen_ns - period_guess_ns_), kAnchorSamples,
              period_error_ns_, period_errors_);
  }
  if (beat_guess_ns_ != 0 &&
      (exact || (missed && expected_ns_ == beat_guess_ns_))) {
    AddToMean(std::abs(seen_ns - beat_guess_ns_), kAnchorSamples,
              rhythm_error_ns_, rhythm_errors_);
  }
  // The rhythm in use missed twice in a row: it has lost the source (a
  // beat that changed by less than an eighth), and no poll of its would
  // meet a wake to measure the change. It starts afresh from the wakes'
  // median interval, once they are regular.
  if (missed && expected_ns_ == beat_guess_ns_ && ++rhythm_misses_ >= 2) {
    anchor_ns_ = kNoWake;
    beat_lost_ = true;
  }
  if (exact) rhythm_misses_ = 0;
  if (last_wake_ns_ != kNoWake) {
    Push(rhythm_, rhythm_count_, rhythm_next_, seen_ns - last_wake_ns_);
  }
  last_wake_ns_ = seen_ns;
  if (!exact) return;
  const int64_t since = anchor_ns_ == kNoWake ? 0 : seen_ns - anchor_ns_;
  if (beat_ns_ > 0 && since > 0 && since <= kAnchorBeats * beat_ns_) {
    // The beat nearest this wake, how far the wake strayed from it, and the
    // beat this pair of anchors measures.
    const int64_t beats =
        std::max<int64_t>(1, (since + beat_ns_ / 2) / beat_ns_);
    AddToMean(std::abs(since - beats * beat_ns_), kAnchorSamples,
              anchor_miss_ns_, anchor_samples_);
    beat_ns_ += (since / beats - beat_ns_) / kBeatDecay;
  }
  anchor_ns_ = seen_ns;
}

void PredictiveGovernor::LearnLateness(int64_t lateness_ns) noexcept {
  Push(lateness_, lateness_count_, lateness_next_, lateness_ns);
  // The 90th percentile of the recent samples: a block late by more than
  // that is one in ten, and one outlier (a preempted vCPU) moves nothing.
  std::array<int64_t, kLatenessHistory> sorted = lateness_;
  const int rank = (lateness_count_ * 9 + 9) / 10 - 1;
  std::nth_element(sorted.begin(), sorted.begin() + rank,
                   sorted.begin() + lateness_count_);
  margin_ns_ = sorted[rank];
  const int early = (lateness_count_ + 9) / 10 - 1;
  std::nth_element(sorted.begin(), sorted.begin() + early,
                   sorted.begin() + rank);
  early_lateness_ns_ = sorted[early];
}

int64_t PredictiveGovernor::MarginFor(int64_t cap_ns) const noexcept {
  if (lateness_count_ == 0) return margin_ns_;
  const int64_t after = std::min(poll_until_ns_ - expected_ns_, cap_ns / 2);
  return std::min(margin_ns_, early_lateness_ns_ + (cap_ns - after));
}

void PredictiveGovernor::EndPeriod(int64_t end_ns, bool by_deadline) noexcept {
  const int64_t duration = end_ns - period_start_ns_;
  Push(history_, history_count_, history_next_, duration);
  if (by_deadline) {
    ++hits_;
  } else {
    ++intercepts_;
  }
  if (!by_deadline) {
    // A plain average of the first kDenseDecay, then a decaying one.
    AddToMean(duration, kDenseDecay, mean_period_ns_, wake_periods_);
  }
  const bool is_short = duration < params_.block_target_residency_ns;
  short_share_ += ((is_short ? kShareOne : 0) - short_share_) / kDecay;
  if (is_short) short_mean_ns_ += (duration - short_mean_ns_) / 2;
  in_period_ = false;
  expected_ns_ = 0;
}

}  // namespace haltpool::idle
