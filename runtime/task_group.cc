#include "runtime/task_group.h"

#include <algorithm>

#include "arch/thread_affinity.h"

namespace haltpool {

void TaskGroup::Done() {
  int64_t n = pending_.load(std::memory_order_relaxed);
  while (n > 1) {
    if (pending_.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel)) {
      return;
    }
  }
  std::vector<std::coroutine_handle<>> resume;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (!waiters_.empty()) waker_cpu_ = arch::CurrentCpu();
    for (idle::WakeWord* w : waiters_) w->Unpark();
    done_.notify_all();
    resume.swap(awaiting_);
  }
  // A resumed coroutine may destroy the group: nothing here touches it.
  for (std::coroutine_handle<> h : resume) h.resume();
}

bool TaskGroup::Awaiter::await_ready() const {
  if (group_.pending() != 0) return false;
  group_.Settle();  // The last Done has left the group.
  return true;
}

bool TaskGroup::Awaiter::await_suspend(std::coroutine_handle<> h) {
  std::lock_guard<std::mutex> lock(group_.mu_);
  // Under the lock, zero means the last Done has finished with the group.
  if (group_.pending() == 0) return false;
  group_.awaiting_.push_back(h);
  return true;
}

void TaskGroup::AddWaiter(idle::WakeWord* word) {
  std::lock_guard<std::mutex> lock(mu_);
  waiters_.push_back(word);
}

int TaskGroup::RemoveWaiter(idle::WakeWord* word) {
  std::lock_guard<std::mutex> lock(mu_);
  waiters_.erase(std::remove(waiters_.begin(), waiters_.end(), word),
                 waiters_.end());
  return waker_cpu_;
}

void TaskGroup::WaitBlocking() {
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return pending() == 0; });
}

}  // namespace haltpool
