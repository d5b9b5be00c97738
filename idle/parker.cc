#include "idle/parker.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "arch/cpu_wait.h"
#include "idle/governor_registry.h"
#include "idle/protocol_step.h"

namespace haltpool::idle {

void WakeWord::Unpark() noexcept {
  // acq_rel: the acquire half makes elsewhere_, published by the waiter's
  // move to kSleepingElsewhere, visible here.
  const uint32_t prev = state_.fetch_or(kNotified, std::memory_order_acq_rel);
  HALTPOOL_PROTOCOL_STEP();  // The waiter may take the wake before FUTEX_WAKE.
  if (prev & kSleeping) {
    arch::FutexWake(state_, 1, scope_);
    wakes_syscall_.fetch_add(1, std::memory_order_relaxed);
  } else if (prev & kSleepingElsewhere) {
    elsewhere_.load(std::memory_order_acquire)->Kick();
    wakes_syscall_.fetch_add(1, std::memory_order_relaxed);
  } else if (prev & kPolling) {
    wakes_polling_.fetch_add(1, std::memory_order_relaxed);
  } else {
    wakes_not_idle_.fetch_add(1, std::memory_order_relaxed);
  }
}

WakeStats WakeWord::wake_stats() const noexcept {
  WakeStats w;
  w.polling = wakes_polling_.load(std::memory_order_relaxed);
  w.not_idle = wakes_not_idle_.load(std::memory_order_relaxed);
  w.syscall = wakes_syscall_.load(std::memory_order_relaxed);
  return w;
}

absl::StatusOr<Parker> Parker::Create(WakeWord& word,
                                      const IdleOptions& options) {
  absl::StatusOr<std::unique_ptr<Governor>> governor = MakeGovernor(options);
  if (!governor.ok()) return governor.status();
  const arch::WaitMechanism wait =
      options.wait.value_or(arch::BestWaitMechanism());
  if (absl::Status s = arch::CheckWaitMechanism(wait); !s.ok()) return s;
  arch::CyclesPerNs();  // Calibrate now, not inside the first poll.
  return Parker(word, *std::move(governor), wait,
                MakeStateTable(options.block_exit_latency_ns,
                               options.block_target_residency_ns));
}

Parker::Parker(WakeWord& word, std::unique_ptr<Governor> governor,
               arch::WaitMechanism wait, const StateTable& states) noexcept
    : word_(&word),
      governor_(std::move(governor)),
      wait_(wait),
      states_(states) {}

void Parker::Consume() noexcept {
  // An exchange, not a store: it reads the newest kNotified, so the waiter
  // synchronizes with the last waker too, not only the first.
  word_->state_.exchange(WakeWord::kEmpty, std::memory_order_acquire);
}

uint32_t Parker::EnterPolling() noexcept {
  std::atomic<uint32_t>& state = word_->state_;
  uint32_t cur = state.load(std::memory_order_relaxed);
  // kPolling carries over from a poll that ran out its window.
  if (cur == WakeWord::kEmpty &&
      state.compare_exchange_strong(cur, WakeWord::kPolling,
                                    std::memory_order_relaxed)) {
    cur = WakeWord::kPolling;
  }
  return cur;
}

bool Parker::EnterSleeping(uint32_t sleeping) noexcept {
  std::atomic<uint32_t>& state = word_->state_;
  // kEmpty or kPolling -> `sleeping`. Failing means a waker set kNotified:
  // this re-check is what keeps a wake from being lost on the way to sleep.
  // Release: a waker that sees `sleeping` also sees elsewhere_.
  uint32_t cur = state.load(std::memory_order_relaxed);
  HALTPOOL_PROTOCOL_STEP();  // A wake may land between the load and the CAS.
  do {
    if (cur & WakeWord::kNotified) {
      Consume();
      return false;
    }
  } while (!state.compare_exchange_weak(
      cur, sleeping, std::memory_order_release, std::memory_order_relaxed));
  return true;
}

bool Parker::Poll(int64_t until_ns) noexcept {
  std::atomic<uint32_t>& state = word_->state_;
  const uint32_t entered = EnterPolling();
  HALTPOOL_PROTOCOL_STEP();
  if (entered & WakeWord::kNotified) {
    Consume();
    return true;
  }
  if (arch::WaitWhileEqual(state, WakeWord::kPolling, until_ns, wait_) ==
      WakeWord::kPolling) {
    return false;  // Still kPolling: a waker that comes now only sets the bit.
  }
  Consume();
  return true;
}

bool Parker::Block(int64_t until_ns) noexcept {
  std::atomic<uint32_t>& state = word_->state_;
  if (!EnterSleeping(WakeWord::kSleeping)) return true;
  for (;;) {
    HALTPOOL_PROTOCOL_STEP();  // A wake may come before FUTEX_WAIT compares.
    // The kernel sleeps only while the word still says kSleeping.
    const arch::FutexWaitResult r = arch::FutexWaitUntil(
        state, WakeWord::kSleeping, until_ns, word_->scope_);
    // No futex here (a seccomp filter, a broken word): nap and look again
    // rather than spin; the word is still checked, so no wake is lost.
    if (r == arch::FutexWaitResult::kError) arch::FutexFallbackNap(until_ns);
    if (state.load(std::memory_order_relaxed) != WakeWord::kSleeping) {
      Consume();
      return true;
    }
    const bool expired =
        r == arch::FutexWaitResult::kTimedOut ||
        (until_ns != arch::kNoDeadline && arch::MonotonicNowNs() >= until_ns);
    if (!expired) continue;  // A spurious wake-up, or a late FUTEX_WAKE.
    uint32_t sleeping = WakeWord::kSleeping;
    if (state.compare_exchange_strong(sleeping, WakeWord::kEmpty,
                                      std::memory_order_relaxed)) {
      return false;
    }
    Consume();  // The wake raced with the deadline: take it.
    return true;
  }
}

bool Parker::PollWith(ExternalWait& external, int64_t until_ns) noexcept {
  std::atomic<uint32_t>& state = word_->state_;
  uint32_t cur = EnterPolling();
  HALTPOOL_PROTOCOL_STEP();  // A wake or a completion may land before a look.
  // Two things to watch, so no monitor instruction: a relax loop.
  for (int i = 0;; ++i) {
    if (cur & WakeWord::kNotified) {
      Consume();
      return true;
    }
    if (external.Ready()) {
      HALTPOOL_PROTOCOL_STEP();  // A wake may land before the exchange.
      // Leave kPolling so later wakers do not count a poll that is over.
      if (state.compare_exchange_strong(cur, WakeWord::kEmpty,
                                        std::memory_order_relaxed)) {
        return true;
      }
      continue;  // cur now has kNotified.
    }
    // Often: a look may be a system call (epoll), so the window is kept to
    // within a few of them.
    if ((i & 3) == 3 && arch::MonotonicNowNs() >= until_ns) return false;
    arch::CpuRelax();
    cur = state.load(std::memory_order_acquire);
  }
}

bool Parker::BlockIn(ExternalWait& external, int64_t until_ns) noexcept {
  std::atomic<uint32_t>& state = word_->state_;
  HALTPOOL_PROTOCOL_STEP();  // A completion may land after the last look.
  word_->elsewhere_.store(&external, std::memory_order_release);
  if (!EnterSleeping(WakeWord::kSleepingElsewhere)) return true;
  HALTPOOL_PROTOCOL_STEP();  // A completion or a kick may come before the wait.
  const bool event = external.Block(until_ns);
  HALTPOOL_PROTOCOL_STEP();  // A kick may land after the wait ended.
  uint32_t sleeping = WakeWord::kSleepingElsewhere;
  if (state.compare_exchange_strong(sleeping, WakeWord::kEmpty,
                                    std::memory_order_relaxed)) {
    return event;
  }
  Consume();  // A waker kicked us (or is about to: its Kick is harmless).
  return true;
}

IdleResult Parker::Park(int64_t deadline_ns, bool allow_poll,
                        ExternalWait* external, int64_t poll_cap_ns,
                        PollGate* gate) noexcept {
  std::atomic<uint32_t>& state = word_->state_;
  if (state.load(std::memory_order_relaxed) & WakeWord::kNotified) {
    Consume();
    return IdleResult::kWoken;
  }
  const IdleDevice dev{governor_.get(), &states_, counters_.get(),
                       &RealClock()};
  const IdleResult result =
      external == nullptr
          ? RunIdle(
                dev, deadline_ns, [this](int64_t until) { return Poll(until); },
                [this](int64_t until) { return Block(until); }, allow_poll,
                poll_cap_ns, gate)
          : RunIdle(
                dev, deadline_ns,
                [&](int64_t until) { return PollWith(*external, until); },
                [&](int64_t until) { return BlockIn(*external, until); },
                allow_poll, poll_cap_ns, gate);
  if (result == IdleResult::kWoken) return result;
  // Timed out, possibly while polling: put the word back to kEmpty so later
  // wakers do not count a poll that is over. A wake that raced is taken.
  HALTPOOL_PROTOCOL_STEP();
  uint32_t cur = state.load(std::memory_order_relaxed);
  if (cur == WakeWord::kPolling &&
      state.compare_exchange_strong(cur, WakeWord::kEmpty,
                                    std::memory_order_relaxed)) {
    return IdleResult::kTimedOut;
  }
  if (cur & WakeWord::kNotified) {
    Consume();
    return IdleResult::kWoken;
  }
  return IdleResult::kTimedOut;
}

absl::Status Parker::SetOptions(const IdleOptions& options) {
  if (options.wait && *options.wait != wait_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "wait = ", arch::WaitMechanismName(*options.wait),
        ": the wait mechanism is chosen once, when the parker is made; "
        "accepted: unset or ",
        arch::WaitMechanismName(wait_), " (the one in use)"));
  }
  absl::StatusOr<std::unique_ptr<Governor>> governor = MakeGovernor(options);
  if (!governor.ok()) return governor.status();
  {
    std::lock_guard<std::mutex> lock(*retune_mu_);
    governor_.swap(*governor);
    states_ = MakeStateTable(options.block_exit_latency_ns,
                             options.block_target_residency_ns);
  }
  counters_->SetWindow(governor_->poll_limit_ns());
  return absl::OkStatus();  // The old governor goes with `governor`.
}

IdleStats Parker::Stats(absl::string_view label,
                        absl::string_view driver) const {
  IdleStats st;
  st.label = std::string(label);
  st.driver = std::string(driver);
  {
    std::lock_guard<std::mutex> lock(*retune_mu_);
    st.governor = std::string(governor_->name());
    st.states = states_;
  }
  st.wait = std::string(arch::WaitMechanismName(wait_));
  counters_->Snapshot(st);
  st.wakes = word_->wake_stats();
  return st;
}

}  // namespace haltpool::idle
