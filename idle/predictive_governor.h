// A predictive governor in the spirit of the kernel's menu and teo: it
// guesses when the next wake comes, from the waiter's next timer and from the
// idle periods it has seen, and spends the idle period so that it is polling
// when the wake arrives and blocked the rest of the time.
//
// The rules, in the order Select applies them at the start of an idle period:
//  0. Dense arrivals. While the idle periods a wake ended (a timer's are
//     rule 1's) average no more than 1/kDenseCover of
//     PredictiveParams::dense_poll_ns, poll for that long: a wake is all
//     but certain to come within it (an exponential gap of that mean
//     outlasts it one time in 400), and a missed one costs a blocked wake,
//     far more than the poll. Such a worker polls nearly all the time, as
//     a spinning pool's would; the next rules' polls are capped lower, for
//     wakes that are not dense. The mean is a plain average of the first
//     kDenseDecay such periods and a decaying one after, and the rule
//     waits for kHistory of them. A dense poll that runs out is followed
//     by a block, or by rules 3 and 4's plan for the caller's deadline.
//  1. Expected wake. The caller's deadline (a timer) is a wake that will
//     certainly come. The last kHistory idle periods, if they are regular
//     (menu's repeating-interval detector: standard deviation at most 1/6 of
//     the mean or under kRegularJitterNs, after dropping up to a quarter of
//     them as outliers), predict another one the median of the kept
//     periods after the period began (a median, so that one late wake and
//     the short period after it move nothing).
//     A source that keeps its own schedule (a client sending at a fixed
//     rate) is better predicted from its wakes than from the idle periods:
//     a period begins only once the last wake was handled, later when that
//     wake found the waiter blocked than when it found it polling, so the
//     periods of such a source take on each wake's cost and predict the
//     next wake early after a slow wake and late after a quick one. A wake
//     met by a poll already running is seen the moment it comes and
//     anchors the source's rhythm. Its beat is first the median interval
//     between the last kHistory wakes, when they are regular and that
//     median is more than an eighth away from the beat (a new rhythm) or
//     the rhythm in use missed two wakes in a row (a source that changed
//     its rate by less than that: no poll of the rhythm's would meet a
//     wake to measure it by), and then follows what each pair of anchors
//     measures (a decaying mean, 1/kBeatDecay). The rhythm predicts the first
//     beat after the period began (and half a beat after the last wake),
//     counted from the newest anchor no more than kAnchorBeats beats old. Each
//     anchor is measured against both predictions its period had, the periods'
//     and the rhythm's (decaying mean distances over kAnchorSamples), and the
//     prediction in use also against a wake it missed: one that came after
//     its poll ran through the tolerance, however late that wake was seen,
//     or one that ended the block ahead of it before its limit (only the
//     wakes a poll met are seen when they come, and a poll is there when
//     the prediction in use was right: without its misses, it would look
//     better than it is). The rhythm is used when it has
//     been no further off, or the periods are not regular or not yet
//     measured; only for a beat long enough to
//     block for (at least the block state's target residency), after
//     kAnchorSamples anchors, and while its mean distance is at most
//     1/kSteadyBeat of the beat. Its tolerance is kRhythmTolerance times
//     the anchors' mean distance from their beats (at least
//     kMinToleranceNs); rule 5 is the periods' alone.
//     The earlier of the two is the expected wake.
//  2. No expected wake. If at least half of the recent periods (a decaying
//     share) were shorter than the block state's target residency, poll for
//     that residency (every such period fits in it) or twice the typical
//     short period if longer; otherwise block.
//  3. An expected wake too close for blocking to pay off (under the block
//     state's target residency plus the wake margin): poll until it, plus
//     the tolerance below. If that poll would outlast the cap by the
//     target residency or more, first block until the cap before its end:
//     a capped poll would run out before the wake, and since only a limited
//     block that runs out teaches the margin, a margin longer than the
//     wait (one bad moment of the host sets it) would never come down.
//  4. An expected wake further away: block until the wake margin before it,
//     then poll across it. The margin is learned: each limited block that ran
//     out reports how late it really ended (timer slack plus the hypervisor's
//     wake path), and the margin is the 90th percentile of the last
//     kLatenessHistory such lateness samples (one late block in ten, and a
//     lone outlier such as a preempted vCPU moves nothing). A wake that finds
//     a limited block still asleep past its limit says the timer is later
//     than that, by an unknown amount: it counts as twice the overrun, so
//     the margin doubles until the timer fires first. The poll after
//     the block lasts until the deadline for a timer, and for a predicted
//     wake until the prediction plus a tolerance of twice the kept periods'
//     median absolute deviation (at least kMinToleranceNs; the rhythm's is
//     rule 1's); a poll that runs out is followed by a block, unless rule 5
//     gives a second wake. The margin is cut, where it is longer, to the 10th
//     percentile of the lateness plus the cap, less the tolerance (at most half
//     the cap): a block that ended early by the whole margin would poll out its
//     cap before the wake, and one that waited for the wake itself would meet
//     no wake while polling, and learn nothing. Not before the first
//     lateness sample.
//  5. A second expected wake, after a burst. A source that sends bursts of
//     tasks a few microseconds apart, with a longer gap between bursts,
//     shows a regular period too short to block for (under the block
//     state's target residency), and the burst's first task comes after
//     the gap: the longest period in the history, when it is at least
//     kSecondRhythm times the regular one (an outlier the detector dropped,
//     or one within its jitter), if it ends before the caller's deadline.
//     Once the poll across the short period is over without a wake (it ran
//     out, the cap cut it short, or a block outlasted it), the plan goes on
//     as rules 3 and 4 for the gap, with the same tolerance; a poll across
//     it that runs out too is followed by a block. The gap is seen only
//     while it is in the history: bursts of up to seven short periods. A
//     longer regular period has no second wake: a
//     worker of a pool that sometimes misses one of a periodic stream's
//     tasks (another worker took it) sees twice the period, and polling
//     ahead of that would only burn CPU beside the worker that has it.
//  Every poll of rules 1 to 5 is capped at PredictiveParams::poll_ns, and
//  every poll at the caller's IdleContext::poll_cap_ns; rule 3 plans with
//  the lower of the two.
//  Where the caller allows no poll, the period is one block until the wake
//  or the deadline: a block ahead of the wake would only end early.
//
// Reflect ends a period at a wake or the deadline, records its length in the
// history (less the block state's exit latency for a wake seen from the
// block state, as menu takes it off; a wake found at once when a limited
// block ran out counts as coming at the block's limit) and whether the
// timer ended it (a hit) or a wake came earlier (an intercept). The idle
// statistics' `above` (blocked, but the wake came within the target residency)
// and `below` (polled longer than blocking would have cost) count what it got
// wrong.

#ifndef HALTPOOL_IDLE_PREDICTIVE_GOVERNOR_H_
#define HALTPOOL_IDLE_PREDICTIVE_GOVERNOR_H_

#include <array>
#include <cstdint>
#include <limits>

#include "idle/governor.h"
#include "idle/interval_pattern.h"

namespace haltpool::idle {

// Rule 0's dense poll: six means of gaps that average a third of
// guest_halt_poll_ns (67 us), the densest arrivals the kernel's cap would
// serve. Against 200 us, it took Poisson arrivals 50 us apart from 2.19 to
// 1.48 us on a 2-vCPU KVM guest (docs/BENCHMARKS.md).
inline constexpr int64_t kDefaultDensePollNs = 400000;

struct PredictiveParams {
  // No poll longer than this (the haltpoll cap, guest_halt_poll_ns's 200 us).
  int64_t poll_ns = 200000;
  // The block state's costs (idle_state.h): the first guess of the wake
  // margin, and the shortest idle blocking pays off for.
  int64_t block_exit_latency_ns = 6000;
  int64_t block_target_residency_ns = 12000;
  // The wake margin until the first limited block runs out (rule 4): how
  // late this host's timed blocks end, as the calibration measured it, else
  // a guess such as the block state's exit latency.
  int64_t wake_margin_ns = 6000;
  // Rule 0's poll through an idle period while wakes are dense (0: never).
  int64_t dense_poll_ns = kDefaultDensePollNs;
};

class PredictiveGovernor final : public Governor {
 public:
  // menu.c's INTERVALS: the idle periods the pattern detector looks at.
  static constexpr int kHistory = kMaxIntervals;
  // Lateness samples the wake margin is learned from: enough for a 90th
  // percentile that ignores one outlier.
  static constexpr int kLatenessHistory = 16;
  // The least the poll after a predicted wake extends past it: a couple of
  // microseconds of scheduling noise on a 2-vCPU KVM guest's vCPUs
  // (docs/BENCHMARKS.md).
  static constexpr int64_t kMinToleranceNs = 2000;
  // A poll that returns within this found its wake already there: a poll
  // of a notified word is two clock reads and an atomic, under 100 ns here.
  static constexpr int64_t kFoundAtOnceNs = 300;
  // Weight of a new period in the decaying share of short periods, as
  // 1/kDecay (teo decays its bins by 1/2 per period; this moves more slowly
  // so one short period among long ones does not start polling).
  static constexpr int kDecay = 8;
  // Rule 5: a period this many times the pattern's is a second rhythm (the
  // gap between bursts); a shorter one is the pattern's own lateness, which
  // the tolerance covers or a block waits out.
  static constexpr int64_t kSecondRhythm = 2;
  // Rule 0: arrivals are dense while the mean idle period is at most
  // 1/kDenseCover of the dense poll, which then outlasts all but e^-6
  // (0.25 %) of the exponential gaps of that mean.
  static constexpr int64_t kDenseCover = 6;
  // Weight of a new period in rule 0's mean, as 1/kDenseDecay. Such a mean
  // of exponential gaps strays by about an eighth of itself, so gaps of
  // 50 us pass the 67 us bound one time in 300; with 16 it was one in 11,
  // and each time the poll was the other rules', capped at 50 us on shared
  // KVM (docs/BENCHMARKS.md, design 17).
  static constexpr int kDenseDecay = 64;
  // Rule 1's rhythm: an anchor is counted from for at most this many beats
  // (a rhythm a microsecond off strays by the beats it is counted over).
  static constexpr int64_t kAnchorBeats = 16;
  // Anchored wakes whose distance from their beats it must have seen before
  // the rhythm is trusted, and the weight of a new one after that, as
  // 1/kAnchorSamples.
  static constexpr int kAnchorSamples = 4;
  // The rhythm's tolerance, in mean distances of anchored wakes from their
  // beats: a normal spread's mean distance is 0.8 of its standard
  // deviation, so three of them cover all but 2 % of its wakes.
  static constexpr int64_t kRhythmTolerance = 3;
  // A rhythm whose wakes stray from their beats by more than 1/kSteadyBeat
  // of the beat (a mean distance) is not used: random arrivals that look
  // regular over a few intervals (the detector drops the longest) would
  // poll across wide tolerances for wakes that are not coming.
  static constexpr int64_t kSteadyBeat = 16;
  // Weight of a pair of anchors' beat in the measured beat, as
  // 1/kBeatDecay: a wake's jitter moves the beat by a sixteenth of itself
  // over the beats between them, and a source that changes its rate by
  // less than an eighth is followed within a few dozen anchors.
  static constexpr int64_t kBeatDecay = 16;

  explicit PredictiveGovernor(const PredictiveParams& params) noexcept;

  absl::string_view name() const noexcept override { return "predictive"; }

  // Plans the period on its first call (rules 0 to 5), then returns the
  // plan's next step.
  Selection Select(const IdleContext& context) noexcept override;

  // Learns the wake margin from limited blocks that ran out; at a wake or
  // the deadline ends the period and records it.
  void Reflect(int state, int64_t residency_ns,
               IdleExit exit) noexcept override;

  int64_t poll_limit_ns() const noexcept override { return last_poll_ns_; }

  // For tests and statistics.
  int64_t wake_margin_ns() const noexcept;
  // The regular interval the history shows (the median of its kept
  // periods), or 0 if it shows none.
  int64_t predicted_interval_ns() const noexcept;
  uint64_t hits() const noexcept { return hits_; }
  uint64_t intercepts() const noexcept { return intercepts_; }

 private:
  // Rule 2's share of short periods, in 1/1024ths.
  static constexpr int64_t kShareOne = 1024;

  Selection Plan(const IdleContext& context) noexcept;
  // The plan's step at `context.now_ns`: block until the margin before the
  // expected wake, poll across it, or block once the poll ran out; once the
  // poll across the first wake is over, the same for rule 5's second.
  Selection Step(const IdleContext& context) noexcept;
  // The longest poll allowed now: the governor's cap or the caller's.
  int64_t CapNs(const IdleContext& context) const noexcept;
  Selection Poll(int64_t window_ns) noexcept;
  void EndPeriod(int64_t end_ns, bool by_deadline) noexcept;
  void LearnLateness(int64_t lateness_ns) noexcept;
  // Rule 4's margin before the expected wake for a poll capped at `cap_ns`.
  int64_t MarginFor(int64_t cap_ns) const noexcept;
  // The history's regular interval (interval_pattern.h); false until the
  // history is full or if it is not regular.
  bool Regular(IntervalPattern& pattern) const noexcept;
  // The same for the intervals between wakes, the source's rhythm.
  bool Rhythmic(IntervalPattern& rhythm) const noexcept;
  // Rule 1's wake from the rhythm, the first beat after the period began;
  // 0 without a beat and an anchor at most kAnchorBeats beats old.
  int64_t NextBeat() const noexcept;
  // Whether rule 1 uses the rhythm rather than the periods (see the rule).
  bool RhythmWins(bool periods_regular) const noexcept;
  // A new rhythm: its beat, measured afresh.
  void StartBeat(int64_t beat_ns) noexcept;
  // Whether `interval_ns` is within an eighth of the measured beat.
  bool NearBeat(int64_t interval_ns) const noexcept;
  // Records a wake seen at `seen_ns`; `exact` if a running poll met it.
  void NoteWake(int64_t seen_ns, bool exact) noexcept;

  PredictiveParams params_;

  // The idle period in progress.
  bool in_period_ = false;
  int64_t period_start_ns_ = 0;
  int64_t expected_ns_ = 0;      // The expected wake; 0 if none.
  int64_t poll_until_ns_ = 0;    // End of the planned poll across it.
  int64_t second_ns_ = 0;        // Rule 5's second expected wake; 0 if none.
  int64_t second_until_ns_ = 0;  // End of the poll across that.
  int64_t select_ns_ = 0;        // now_ns of the last Select.
  int64_t block_until_ns_ = kBlockUntilDeadline;  // Of the last selection.
  bool poll_ran_out_ = false;  // The planned poll ended without a wake.
  bool limited_block_ran_out_ = false;  // The last step was such a block.
  int64_t ran_out_block_until_ns_ = 0;  // And its limit.

  // What it has learned.
  std::array<int64_t, kHistory> history_{};
  int history_count_ = 0;
  int history_next_ = 0;
  // Lateness of the last limited blocks that ran out, and its 90th
  // percentile: the wake margin (PredictiveParams::wake_margin_ns until then).
  std::array<int64_t, kLatenessHistory> lateness_{};
  int lateness_count_ = 0;
  int lateness_next_ = 0;
  int64_t margin_ns_;
  int64_t early_lateness_ns_ = 0;  // Their 10th percentile.
  // Rule 1's rhythm: the intervals between the last wakes, the last wake
  // and the newest anchor (kNoWake: none), how far anchored wakes strayed
  // from their beats (a mean over anchor_samples_ of them), and the beat.
  std::array<int64_t, kHistory> rhythm_{};
  int rhythm_count_ = 0;
  int rhythm_next_ = 0;
  static constexpr int64_t kNoWake = std::numeric_limits<int64_t>::min();
  int64_t last_wake_ns_ = kNoWake;
  int64_t anchor_ns_ = kNoWake;
  int64_t anchor_miss_ns_ = 0;
  int anchor_samples_ = 0;
  int64_t beat_ns_ = 0;
  int rhythm_misses_ = 0;   // Wakes in a row the rhythm in use missed.
  bool beat_lost_ = false;  // Two of them: the next regular median restarts.
  // This period's predictions from the periods and from the rhythm (0:
  // none), and how far each was from the wakes (means over *_errors_).
  int64_t period_guess_ns_ = 0;
  int64_t beat_guess_ns_ = 0;
  bool guess_missed_ = false;  // The one in use missed this period's wake.
  int64_t period_error_ns_ = 0;
  int period_errors_ = 0;
  int64_t rhythm_error_ns_ = 0;
  int rhythm_errors_ = 0;
  int64_t short_share_ = 0;    // Of periods under the target residency.
  int64_t short_mean_ns_ = 0;  // Decaying mean length of those periods.
  // Rule 0: the mean length of the periods a wake ended, how many of them
  // it has seen (up to kDenseDecay), and whether the step is its poll.
  int64_t mean_period_ns_ = 0;
  int wake_periods_ = 0;
  bool dense_poll_ = false;
  int64_t last_poll_ns_ = 0;
  uint64_t hits_ = 0;
  uint64_t intercepts_ = 0;
};

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_PREDICTIVE_GOVERNOR_H_
