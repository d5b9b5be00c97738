#include "runtime/task_group.h"

#include <algorithm>

namespace haltpool {

void TaskGroup::Done() {
  int64_t n = pending_.load(std::memory_order_relaxed);
  while (n > 1) {
    if (pending_.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel)) {
      return;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  for (idle::WakeWord* w : waiters_) w->Unpark();
  done_.notify_all();
}

void TaskGroup::AddWaiter(idle::WakeWord* word) {
  std::lock_guard<std::mutex> lock(mu_);
  waiters_.push_back(word);
}

void TaskGroup::RemoveWaiter(idle::WakeWord* word) {
  std::lock_guard<std::mutex> lock(mu_);
  waiters_.erase(std::remove(waiters_.begin(), waiters_.end(), word),
                 waiters_.end());
}

void TaskGroup::WaitOutside() {
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return pending() == 0; });
}

}  // namespace haltpool
