// The parker: one waiter idles on its own 32-bit wake word, polling it for
// the governor's window, then sleeping in FUTEX_WAIT; any thread (or, for a
// word in shared memory, any process) wakes it. A waker that finds the waiter
// polling only stores to the word: no system call. This is the kernel's
// TIF_POLLING_NRFLAG handshake in user space, and the only place it lives.
//
// The word is the waiter's state plus a wake bit:
//   kEmpty     the waiter is not idle
//   kPolling   the waiter polls the word
//   kSleeping  the waiter is in, or about to enter, FUTEX_WAIT
//   kSleepingElsewhere  the waiter blocks in an ExternalWait (an I/O ring):
//              wakers Kick() it instead of FUTEX_WAKE
//   kNotified  (a bit on top of any of them) a wake is pending; wakes
//              coalesce into it
// Wakers only set kNotified (fetch_or); every waker that finds kSleeping set
// calls FUTEX_WAKE, so a waker stalled between its store and its system call
// cannot hold back the ones after it. The waiter changes its state only by
// compare-exchange from the exact value it wrote, so a wake that arrived
// meanwhile makes the exchange fail and is taken instead of slept through;
// it takes a wake by exchange, which reads the newest value and so
// synchronizes with every waker before it.

#ifndef HALTPOOL_IDLE_PARKER_H_
#define HALTPOOL_IDLE_PARKER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

#include "absl/status/statusor.h"
#include "arch/cycle_clock.h"
#include "arch/futex.h"
#include "arch/wait_mechanism.h"
#include "idle/external_wait.h"
#include "idle/governor.h"
#include "idle/idle_loop.h"
#include "idle/idle_options.h"
#include "idle/idle_state.h"
#include "idle/idle_stats.h"

namespace haltpool::idle {

// The part of a parker that wakers touch. Standard layout and lock-free, so
// it may be placed in memory shared between processes (construct it with
// FutexScope::kShared there). Not copyable: its address is the futex.
class alignas(64) WakeWord {
 public:
  enum : uint32_t {
    kEmpty = 0,
    kNotified = 1,
    kPolling = 2,
    kSleeping = 4,
    kSleepingElsewhere = 8,
  };

  explicit WakeWord(
      arch::FutexScope scope = arch::FutexScope::kPrivate) noexcept
      : scope_(scope) {}
  WakeWord(const WakeWord&) = delete;
  WakeWord& operator=(const WakeWord&) = delete;

  // Makes the waiter's current or next Park() return kWoken. Release
  // ordering: what the caller wrote before is visible to the waiter after
  // Park returns. Any thread, any number at once; wakes before the waiter
  // takes one coalesce. Costs one atomic read-modify-write, plus FUTEX_WAKE
  // only if the waiter sleeps. The WakeWord must outlive every Unpark that
  // may still be running (as for std::binary_semaphore::release): the waiter
  // can return from Park before Unpark returns.
  void Unpark() noexcept;

  // True while the waiter polls: a wake now costs no system call. Any
  // thread; a hint that may be stale by the time the caller acts on it.
  bool polling() const noexcept {
    return state_.load(std::memory_order_relaxed) == kPolling;
  }

  // True while the waiter blocks (FUTEX_WAIT or an ExternalWait) with no
  // wake pending: its thread is not runnable. Any thread; a hint, as
  // polling().
  bool asleep() const noexcept {
    const uint32_t s = state_.load(std::memory_order_relaxed);
    return s == kSleeping || s == kSleepingElsewhere;
  }

  // The wakes counted so far; any thread.
  WakeStats wake_stats() const noexcept;

  arch::FutexScope scope() const noexcept { return scope_; }

 private:
  friend class Parker;

  std::atomic<uint32_t> state_{kEmpty};
  const arch::FutexScope scope_;
  // Set by the waiter before it enters kSleepingElsewhere; in-process only.
  std::atomic<ExternalWait*> elsewhere_{nullptr};
  std::atomic<uint64_t> wakes_polling_{0};
  std::atomic<uint64_t> wakes_not_idle_{0};
  std::atomic<uint64_t> wakes_syscall_{0};
};

// What the comment above promises, checked: a lock-based atomic would keep
// its lock in this process, and the futex word must be the bare 32 bits.
static_assert(std::is_standard_layout_v<WakeWord>);
static_assert(std::atomic<uint32_t>::is_always_lock_free &&
              sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// The waiter's side: the governor, the state table and the statistics. One
// thread parks on it at a time; it does not own the WakeWord.
class Parker {
 public:
  // A parker for `word`, idling under `options` (governor, window, wait
  // mechanism). Fails if the options are invalid or name a wait mechanism
  // this CPU lacks. Setup, not a hot path.
  static absl::StatusOr<Parker> Create(WakeWord& word,
                                       const IdleOptions& options);

  Parker(Parker&&) = default;
  Parker& operator=(Parker&&) = default;

  // Idles until woken (kWoken, with acquire ordering against the Unpark) or
  // until CLOCK_MONOTONIC passes `deadline_ns` (kTimedOut). A wake that came
  // before the call returns at once. Spurious futex wake-ups are absorbed.
  // With `allow_poll` false the poll state is skipped (the caller limits
  // how many waiters poll at once); the governor still learns from the
  // block. Only the owning thread; noexcept, allocation-free.
  //
  // With `external` set (in-process words only), the poll state also ends
  // when external->Ready(), and the block state is external->Block(), ended
  // by wakers through external->Kick(); Park then returns kWoken for an
  // external event as for a wake, and the caller looks at both. A Kick may
  // land after the block it was meant for ended on an event, making the
  // next Block return at once (callers treat kWoken as "look again"); so
  // `external` must outlive every Unpark of this word once it was used.
  //
  // `poll_cap_ns` is the longest poll allowed (the pool's back-off under
  // contention; allow_poll false means 0): the governor plans within it,
  // and a longer poll is shortened to it. kUnlimitedPollNs: no cap. With
  // `gate` set, each poll must be allowed by it first (RunIdle), so a
  // waiter holds a poller's place only while it polls.
  IdleResult Park(int64_t deadline_ns = arch::kNoDeadline,
                  bool allow_poll = true, ExternalWait* external = nullptr,
                  int64_t poll_cap_ns = kUnlimitedPollNs,
                  PollGate* gate = nullptr) noexcept;

  // Idles under `options` from the next Park on: a new governor made from
  // them (it starts afresh, as the kernel's does when cpuidle's governor is
  // switched: haltpoll's window is 0 again) and the block state's costs
  // from them. The counters go on. The wait mechanism is the one Create
  // chose and cannot change: `options.wait` must be unset or name it.
  // Fails, changing nothing, with InvalidArgument as ValidateIdleOptions,
  // or naming the wait mechanism. The wake word and its protocol are not
  // touched: a wake pending now is taken by the next Park. Only the owning
  // thread, between Parks; allocates (the governor), so not a hot path.
  absl::Status SetOptions(const IdleOptions& options);

  // The statistics so far. Any thread, though counters of a Park in
  // progress may be one period behind.
  IdleStats Stats(absl::string_view label, absl::string_view driver) const;

  arch::WaitMechanism wait_mechanism() const noexcept { return wait_; }
  // The governor in use; SetOptions replaces it. Only the owning thread.
  const Governor& governor() const noexcept { return *governor_; }

 private:
  Parker(WakeWord& word, std::unique_ptr<Governor> governor,
         arch::WaitMechanism wait, const StateTable& states) noexcept;

  // The two idle states. Each returns true if a wake ended it (and consumed
  // it), false if `until_ns` passed first.
  bool Poll(int64_t until_ns) noexcept;
  bool Block(int64_t until_ns) noexcept;
  bool PollWith(ExternalWait& external, int64_t until_ns) noexcept;
  bool BlockIn(ExternalWait& external, int64_t until_ns) noexcept;

  // kEmpty -> kPolling (or kPolling kept); returns the word as it then is,
  // kNotified possibly set.
  uint32_t EnterPolling() noexcept;
  // kEmpty or kPolling -> `sleeping`, unless a wake is pending: then takes
  // it and returns false.
  bool EnterSleeping(uint32_t sleeping) noexcept;

  // Takes the pending wake: the word goes back to kEmpty.
  void Consume() noexcept;

  WakeWord* word_;
  // Written only by the owner, in SetOptions, under retune_mu_; so the owner
  // reads them without it and Stats (any thread) reads them under it. A
  // std::mutex (pthread's), which ThreadSanitizer sees; behind a pointer so
  // the parker stays movable.
  std::unique_ptr<std::mutex> retune_mu_ = std::make_unique<std::mutex>();
  std::unique_ptr<Governor> governor_;
  arch::WaitMechanism wait_;
  StateTable states_;
  std::unique_ptr<IdleCounters> counters_ = std::make_unique<IdleCounters>();
};

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_PARKER_H_
