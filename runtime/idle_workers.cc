#include "runtime/idle_workers.h"

#include <limits>
#include <memory>
#include <new>
#include <utility>

#include "arch/thread_affinity.h"

namespace haltpool {

IdleWorkers::IdleWorkers(std::vector<idle::WakeWord*> words, int max_pollers)
    : n_(words.size()),
      words_(std::move(words)),
      max_pollers_(max_pollers),
      slots_(std::make_unique<Slot[]>(n_)) {}

IdleWorkers::~IdleWorkers() {
  for (size_t i = 0; i < n_; ++i) {
    if (slots_[i].handoff.load(std::memory_order_acquire) == kFull) {
      std::destroy_at(std::launder(reinterpret_cast<Job*>(slots_[i].job)));
    }
  }
}

bool PollSlotGate::TryEnter() noexcept {
  if (!workers_->TryStartPolling()) return false;
  polled_ = true;
  return true;
}

void PollSlotGate::Leave() noexcept { workers_->StopPolling(); }

bool IdleWorkers::Take(size_t i) noexcept {
  HALTPOOL_PROTOCOL_STEP();  // The worker may retire meanwhile.
  if (!slots_[i].idle.exchange(false, std::memory_order_seq_cst)) {
    return false;
  }
  num_idle_.fetch_sub(1, std::memory_order_seq_cst);
  const int cpu = arch::CurrentCpu();
  slots_[i].waker_cpu.store(cpu <= std::numeric_limits<int16_t>::max()
                                ? static_cast<int16_t>(cpu)
                                : int16_t{-1},
                            std::memory_order_relaxed);
  return true;
}

bool IdleWorkers::TakeAndWake(size_t i) noexcept {
  if (!Take(i)) return false;
  words_[i]->Unpark();
  return true;
}

bool IdleWorkers::WakeOne() noexcept {
  // Pairs with AnnounceThenRecheck: the caller's push, then this fence, then
  // the idle flags; there, the idle flag, then the queues.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (num_idle_.load(std::memory_order_seq_cst) == 0) return false;
  const size_t start = wake_cursor_.fetch_add(1, std::memory_order_relaxed);
  // Pollers first.
  size_t freshest = n_;
  uint64_t freshest_at = 0;
  for (size_t k = 0; k < n_; ++k) {
    const size_t i = (start + k) % n_;
    if (!slots_[i].idle.load(std::memory_order_seq_cst)) continue;
    if (words_[i]->polling()) {
      if (TakeAndWake(i)) return true;
      continue;
    }
    const uint64_t at = slots_[i].announced.load(std::memory_order_relaxed);
    if (freshest == n_ || at > freshest_at) {
      freshest = i;
      freshest_at = at;
    }
  }
  // Then the idle worker that announced itself last; if it retired
  // meanwhile, any other.
  if (freshest != n_ && TakeAndWake(freshest)) return true;
  for (size_t k = 0; k < n_; ++k) {
    if (TakeAndWake((start + k) % n_)) return true;
  }
  return false;
}

bool IdleWorkers::HandOff(Job& job,
                          absl::FunctionRef<void(Job&&)> push) noexcept {
  // A hint: with no poller, the caller's push and WakeOne do the rest.
  if (num_pollers_.load(std::memory_order_relaxed) == 0) return false;
  const size_t start = wake_cursor_.fetch_add(1, std::memory_order_relaxed);
  for (size_t k = 0; k < n_; ++k) {
    const size_t i = (start + k) % n_;
    Slot& s = slots_[i];
    if (!s.idle.load(std::memory_order_relaxed) || !words_[i]->polling()) {
      continue;
    }
    if (!Take(i)) continue;
    // Worker i is ours to wake. Its slot is free unless it has not yet
    // taken a task handed to it in an earlier idle period; acquire pairs
    // with TakeHandedOff's release, so that task has been moved out.
    uint32_t free = kFree;
    if (s.handoff.compare_exchange_strong(free, kWriting,
                                          std::memory_order_acquire,
                                          std::memory_order_relaxed)) {
      ::new (static_cast<void*>(s.job)) Job(std::move(job));
      s.handoff.store(kFull, std::memory_order_release);
    } else {
      push(std::move(job));
    }
    HALTPOOL_PROTOCOL_STEP();  // The worker may stop polling meanwhile.
    words_[i]->Unpark();
    return true;
  }
  return false;
}

std::optional<Job> IdleWorkers::TakeHandedOff(int w) noexcept {
  Slot& s = slots_[w];
  if (s.handoff.load(std::memory_order_acquire) != kFull) return std::nullopt;
  Job* job = std::launder(reinterpret_cast<Job*>(s.job));
  std::optional<Job> taken(std::move(*job));
  std::destroy_at(job);
  s.handoff.store(kFree, std::memory_order_release);
  return taken;
}

int IdleWorkers::num_awake() const noexcept {
  int awake = 0;
  for (const idle::WakeWord* word : words_) awake += word->asleep() ? 0 : 1;
  return awake;
}

}  // namespace haltpool
