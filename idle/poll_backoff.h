// Backing off polling while the CPUs are contended: a poller must not take
// a CPU that other runnable work needs. A plain policy value, fed samples
// taken every few milliseconds by the pool (never on every park); it says
// how much of the governor's poll window may still be used.
//
// The signals, and when each counts as contention:
//  - Steal time above kStealThreshold of the interval: the hypervisor runs
//    something else on this guest's physical CPUs; a polling vCPU adds to
//    the demand that causes it. 10 % is where steal starts to show in
//    latency (cloud providers' guides call a host oversubscribed there).
//  - More runnable threads than usable CPUs, pollers not counted (they
//    would stop for the work): a runnable thread is waiting for a CPU, and
//    a poller may be holding the one it needs.
//  - The sampling worker was switched out involuntarily kPreemptedThreshold
//    times or more since its last sample while it had polled: the
//    scheduler kept taking the CPU from a poller to give it to someone
//    else. One or two in 10 ms are the kernel's own housekeeping (kworkers,
//    softirq threads) and say nothing about the load.
//
// Each contended sample halves the poll cap once more (level 1: cap/2, 2:
// cap/4, 3: cap/8) and the fourth stops polling (kMaxLevel). Recovery is
// slower than backing off, so the level does not flap: after kHoldNs with
// no contended sample the level drops by one, and again after each further
// kHoldNs.

#ifndef HALTPOOL_IDLE_POLL_BACKOFF_H_
#define HALTPOOL_IDLE_POLL_BACKOFF_H_

#include <cstdint>

namespace haltpool::idle {

// One sample of the signals above.
struct ContentionSample {
  int64_t now_ns = 0;
  double steal_fraction = 0;  // Stolen share of CPU time since the last one.
  int64_t runnable = 0;       // Runnable threads, pollers not counted.
  int64_t usable_cpus = 1;    // CPUs the process may use.
  int64_t preempted = 0;      // Involuntary switches of a worker that polled.
};

class PollBackoff {
 public:
  static constexpr double kStealThreshold = 0.10;
  static constexpr int64_t kPreemptedThreshold = 3;
  static constexpr int kMaxLevel = 4;
  // 100 ms: ten samples at the pool's 10 ms interval, longer than a CFS
  // scheduling period (24 ms with 8 runnable threads), so one quiet sample
  // between busy ones does not restore polling.
  static constexpr int64_t kHoldNs = 100000000;

  // Whether `sample` shows contention, by the rules above.
  static bool Contended(const ContentionSample& sample) noexcept;

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
  const ContentionSample& last() const noexcept { return last_; }

 private:
  int level_ = 0;
  int64_t quiet_since_ns_ = 0;  // Last contended sample or recovery step.
  uint64_t samples_ = 0;
  uint64_t backed_off_ = 0;
  uint64_t recovered_ = 0;
  ContentionSample last_;
};

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_POLL_BACKOFF_H_
