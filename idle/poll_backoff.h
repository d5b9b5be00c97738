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
//    threads this pool knows are its own: its workers not asleep, the
//    sampler among them, and the outside threads that submitted to it
//    since the last sample) says the others could fill every CPU alone, so
//    a poller necessarily holds a CPU one of them wants. The pool's own
//    threads are left out: counting them is what made a submitter plus a
//    worker on 2 CPUs look contended, and a worker just woken (not yet
//    running, so not yet busy) beside a spinning submitter made an idle
//    2-vCPU machine back off at random. A submitter that went to sleep
//    after it submitted is left out too, although it is not runnable;
//    others that fill the CPUs for long still show as a poller kept from
//    its CPU (the next rule). A count is a snapshot (a kworker that runs for
//    50 us, a thread about to block), so the kernel's CPU pressure
//    ("some": time in which a runnable thread waited) confirms it where the
//    kernel has it (4.20 and later, unless booted with psi=0). The wait
//    alone does not decide: it counts this pool's own threads waiting for
//    each other (a submitter, a busy worker and a poller on 2 CPUs wait
//    30-97 % of the time on an otherwise idle 2-vCPU guest).
//  - A poller waited for its CPU for kPreemptedDelayNs or more while it
//    polled, in this sample and in the one before (the sampler reads its
//    own run delay, the kernel's schedstat, around the idle period that
//    follows a sample): someone else held the poller's CPU for that long,
//    again and again, so polling competes with work that wants the CPU.
//    Being switched out alone says little: a kernel thread or a short task
//    woken on the poller's CPU preempts it for microseconds and gives the
//    CPU back (on an otherwise idle 2-vCPU guest that is a few times a
//    second, and counting those switches made an idle machine's pool back
//    off at random). One long wait says little more: a kernel thread such
//    as kdamond held a poller's CPU for 1.1 ms on such a guest (ftrace's
//    sched_switch), once. A thread that keeps wanting the CPU takes it
//    for a scheduler slice every time it can.
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
  // The pool's workers not asleep (running, polling, woken), the sampler
  // included.
  int64_t own_awake = 1;
  // Outside threads that submitted to the pool since the last sample.
  int64_t submitters = 0;
  int64_t usable_cpus = 1;  // CPUs the process may use.
  // How long the pool's measured poller waited for its CPU (its run
  // delay) in the idle period measured since the last sample; 0 where the
  // kernel does not say.
  int64_t preempted_ns = 0;
};

class PollBackoff {
 public:
  static constexpr double kStealThreshold = 0.10;
  // 10 %: 1 ms of every 10 ms with a thread kept from a CPU, the same
  // share as steal; with hogs filling every CPU it reads 60-100 %
  // (the oversubscription benchmark).
  static constexpr double kWaitThreshold = 0.10;
  // 500 us: a third of a scheduler slice on 2 CPUs (EEVDF's base slice,
  // 0.75 ms x (1 + log2 CPUs) = 1.5 ms), which a thread that takes the
  // poller's CPU and keeps running holds it for; a wakeup preemption by a
  // kernel thread or a short task lasts microseconds to tens of them.
  static constexpr int64_t kPreemptedDelayNs = 500000;
  static constexpr int kMaxLevel = 4;
  // 100 ms: ten samples at the pool's 10 ms interval, longer than a CFS
  // scheduling period (24 ms with 8 runnable threads), so one quiet sample
  // between busy ones does not restore polling.
  static constexpr int64_t kHoldNs = 100000000;

  // Runnable threads that are not this pool's: `runnable` minus
  // `own_awake` and `submitters`, at least 0; absent with `runnable`.
  static std::optional<int64_t> RunnableOthers(
      const ContentionSample& sample) noexcept;

  // Which rule above, if any, says `sample` shows contention; the first
  // that does, in the order steal, preempted, runnable. `waited_before`:
  // the sample before it showed a poller waiting kPreemptedDelayNs.
  enum class Cause { kNone, kSteal, kPreempted, kRunnable };
  static Cause CauseOf(const ContentionSample& sample,
                       bool waited_before) noexcept;
  // Whether `sample` shows contention, by the rules above.
  static bool Contended(const ContentionSample& sample,
                        bool waited_before) noexcept {
    return CauseOf(sample, waited_before) != Cause::kNone;
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
  bool waited_ = false;         // The last sample's poller waited for its CPU.
  int64_t quiet_since_ns_ = 0;  // Last contended sample or recovery step.
  uint64_t samples_ = 0;
  uint64_t backed_off_ = 0;
  uint64_t recovered_ = 0;
  uint64_t contended_[4] = {};  // By Cause.
  ContentionSample last_;
};

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_POLL_BACKOFF_H_
