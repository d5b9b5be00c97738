// Backing off polling while the CPUs are contended: a poller must not take
// a CPU that other runnable work needs. A plain policy value, fed samples
// the pool takes every 10 ms (never on every park, and never while a worker
// is announced idle: the pool's contention monitor); it says how much of the
// governor's poll window may still be used. It measures before it acts:
// every rule asks whether polling takes a CPU from something, not whether
// the machine is busy. A busy machine whose threads all have a CPU (one
// outside submitter and a worker on 2 CPUs, a busy client process next to a
// 1-worker pool) keeps polling.
//
// The rules, and why each one means polling takes a CPU from someone:
//  - Steal above kStealThreshold of the interval: the hypervisor runs
//    something else on this guest's physical CPUs; a polling vCPU adds to
//    the demand that causes it. 10 % is where steal starts to show in
//    latency (cloud providers' guides call a host oversubscribed there).
//    Steal moves in 10 ms ticks and reading it (/proc/stat) is the dearest
//    reading, so a sample carries it only now and then.
//  - Runnable threads that are not this pool's fill every usable CPU, and
//    threads really waited for a CPU in more than kWaitThreshold of the
//    interval. The count (/proc/loadavg's runnable threads, minus the
//    threads this pool knows are its own: the sampler, the pollers, the
//    busy workers) says the others could fill every CPU alone, so a poller
//    necessarily holds a CPU one of them wants. The pool's own threads are
//    left out: counting them is what made a submitter plus a worker on 2
//    CPUs look contended. A count is a snapshot (a kworker that runs for
//    50 us, a thread about to block), so the kernel's CPU pressure
//    ("some": time in which a runnable thread waited) confirms it where the
//    kernel has it (4.20 and later, unless booted with psi=0). The wait
//    alone does not decide: it counts this pool's own threads waiting for
//    each other (a submitter, a busy worker and a poller on 2 CPUs wait
//    30-97 % of the time on an otherwise idle 2-vCPU guest).
//  - A poller was switched out involuntarily while it polled (the sampler
//    counts its switches around the poll that follows a sample): the
//    scheduler took the CPU from the poller for someone who wanted it. One
//    suffices: a poll lasts at most the poll cap (200 us by default), and
//    the kernel's housekeeping (a few switches per second) rarely lands in
//    one.
//
// Each contended sample halves the poll cap once more (level 1: cap/2, 2:
// cap/4, 3: cap/8) and the fourth stops polling (kMaxLevel). Recovery is
// slower than backing off, so the level does not flap: after kHoldNs with
// no contended sample the level drops by one, and again after each further
// kHoldNs.

#ifndef HALTPOOL_IDLE_POLL_BACKOFF_H_
#define HALTPOOL_IDLE_POLL_BACKOFF_H_

#include <cstdint>
#include <optional>

namespace haltpool::idle {

// One sample of the readings above, as the machine gives them; the policy
// does the arithmetic. An absent reading is no signal either way.
struct ContentionSample {
  int64_t now_ns = 0;
  // Stolen share of CPU time since the last steal reading; absent in the
  // samples that did not read steal.
  std::optional<double> steal_fraction;
  // Share of the interval in which some runnable thread waited for a CPU.
  std::optional<double> cpu_wait_fraction;
  // Runnable threads on the machine, the sampler included (/proc/loadavg).
  std::optional<int64_t> runnable;
  int64_t pollers = 0;       // The pool's workers polling now.
  int64_t busy_workers = 0;  // The pool's workers running, sampler excluded.
  int64_t usable_cpus = 1;   // CPUs the process may use.
  int64_t preempted = 0;     // Involuntary switches while polling.
};

class PollBackoff {
 public:
  static constexpr double kStealThreshold = 0.10;
  // 10 %: 1 ms of every 10 ms with a thread kept from a CPU, the same
  // share as steal; with hogs filling every CPU it reads 60-100 %
  // (the oversubscription benchmark).
  static constexpr double kWaitThreshold = 0.10;
  static constexpr int64_t kPreemptedThreshold = 1;
  static constexpr int kMaxLevel = 4;
  // 100 ms: ten samples at the pool's 10 ms interval, longer than a CFS
  // scheduling period (24 ms with 8 runnable threads), so one quiet sample
  // between busy ones does not restore polling.
  static constexpr int64_t kHoldNs = 100000000;

  // Runnable threads that are not this pool's: `runnable` minus the
  // sampler, the pollers and the busy workers, at least 0; absent with
  // `runnable`.
  static std::optional<int64_t> RunnableOthers(
      const ContentionSample& sample) noexcept;

  // Which rule above, if any, says `sample` shows contention; the first
  // that does, in the order steal, preempted, runnable.
  enum class Cause { kNone, kSteal, kPreempted, kRunnable };
  static Cause CauseOf(const ContentionSample& sample) noexcept;
  // Whether `sample` shows contention, by the rules above.
  static bool Contended(const ContentionSample& sample) noexcept {
    return CauseOf(sample) != Cause::kNone;
  }

  // Takes a sample: backs off one level if contended, else recovers one
  // level if kHoldNs passed since the last contended sample or recovery.
  void Update(const ContentionSample& sample) noexcept;

  int level() const noexcept { return level_; }
  // Polling allowed at all (level below kMaxLevel).
  bool polling_allowed() const noexcept { return level_ < kMaxLevel; }
  // The cap on each poll for a governor whose own cap is `cap_ns`: no limit
  // at level 0 (kUnlimitedPollNs), cap_ns >> level above it, 0 at
  // kMaxLevel.
  int64_t PollCapNs(int64_t cap_ns) const noexcept {
    return CapAtLevel(level_, cap_ns);
  }
  // The same for any level.
  static int64_t CapAtLevel(int level, int64_t cap_ns) noexcept;

  uint64_t samples() const noexcept { return samples_; }
  uint64_t backed_off() const noexcept { return backed_off_; }  // Level ups.
  uint64_t recovered() const noexcept { return recovered_; }    // Back to 0.
  // Samples that showed contention, by the rule that said so: which signal
  // makes a pool back off (kNone: 0).
  uint64_t contended(Cause cause) const noexcept {
    return contended_[static_cast<int>(cause)];
  }
  const ContentionSample& last() const noexcept { return last_; }

 private:
  int level_ = 0;
  int64_t quiet_since_ns_ = 0;  // Last contended sample or recovery step.
  uint64_t samples_ = 0;
  uint64_t backed_off_ = 0;
  uint64_t recovered_ = 0;
  uint64_t contended_[4] = {};  // By Cause.
  ContentionSample last_;
};

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_POLL_BACKOFF_H_
