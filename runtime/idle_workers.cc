#include "runtime/idle_workers.h"

#include <utility>

namespace haltpool {

IdleWorkers::IdleWorkers(std::vector<idle::WakeWord*> words, int max_pollers)
    : n_(words.size()),
      max_pollers_(max_pollers),
      slots_(std::make_unique<Slot[]>(words.size())) {
  for (size_t i = 0; i < n_; ++i) slots_[i].word = words[i];
}

bool PollSlotGate::TryEnter() noexcept {
  if (!workers_->TryStartPolling()) return false;
  polled_ = true;
  return true;
}

void PollSlotGate::Leave() noexcept { workers_->StopPolling(); }

bool IdleWorkers::TakeAndWake(Slot& s) noexcept {
  HALTPOOL_PROTOCOL_STEP();  // The worker may retire meanwhile.
  if (!s.idle.exchange(false, std::memory_order_seq_cst)) return false;
  num_idle_.fetch_sub(1, std::memory_order_seq_cst);
  s.word->Unpark();
  return true;
}

bool IdleWorkers::WakeOne() noexcept {
  // Pairs with AnnounceThenRecheck: the caller's push, then this fence, then
  // the idle flags; there, the idle flag, then the queues.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (num_idle_.load(std::memory_order_seq_cst) == 0) return false;
  const size_t start = wake_cursor_.fetch_add(1, std::memory_order_relaxed);
  // Pollers first.
  Slot* freshest = nullptr;
  uint64_t freshest_at = 0;
  for (size_t i = 0; i < n_; ++i) {
    Slot& s = slots_[(start + i) % n_];
    if (!s.idle.load(std::memory_order_seq_cst)) continue;
    if (s.word->polling()) {
      if (TakeAndWake(s)) return true;
      continue;
    }
    const uint64_t at = s.announced.load(std::memory_order_relaxed);
    if (freshest == nullptr || at > freshest_at) {
      freshest = &s;
      freshest_at = at;
    }
  }
  // Then the idle worker that announced itself last; if it retired
  // meanwhile, any other.
  if (freshest != nullptr && TakeAndWake(*freshest)) return true;
  for (size_t i = 0; i < n_; ++i) {
    if (TakeAndWake(slots_[(start + i) % n_])) return true;
  }
  return false;
}

}  // namespace haltpool
