#include "runtime/idle_workers.h"

#include <utility>

namespace haltpool {

IdleWorkers::IdleWorkers(std::vector<idle::WakeWord*> words, int max_pollers)
    : n_(words.size()),
      max_pollers_(max_pollers),
      slots_(std::make_unique<Slot[]>(words.size())) {
  for (size_t i = 0; i < n_; ++i) slots_[i].word = words[i];
}

bool IdleWorkers::WakeOne() noexcept {
  // Pairs with AnnounceThenRecheck: the caller's push, then this fence, then
  // the idle flags; there, the idle flag, then the queues.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (num_idle_.load(std::memory_order_seq_cst) == 0) return false;
  const size_t start = wake_cursor_.fetch_add(1, std::memory_order_relaxed);
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < n_; ++i) {
      Slot& s = slots_[(start + i) % n_];
      if (!s.idle.load(std::memory_order_seq_cst)) continue;
      if (pass == 0 && !s.word->polling()) continue;  // Pollers first.
      HALTPOOL_PROTOCOL_STEP();  // The worker may retire meanwhile.
      if (s.idle.exchange(false, std::memory_order_seq_cst)) {
        num_idle_.fetch_sub(1, std::memory_order_seq_cst);
        s.word->Unpark();
        return true;
      }
    }
  }
  return false;
}

}  // namespace haltpool
