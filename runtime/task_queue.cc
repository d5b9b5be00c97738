#include "runtime/task_queue.h"

#include <utility>

namespace haltpool {

TaskQueue::TaskQueue(size_t initial_capacity) {
  size_t capacity = 1;
  while (capacity < initial_capacity) capacity <<= 1;
  slots_.resize(capacity);
}

void TaskQueue::Grow() {
  std::vector<Job> bigger(slots_.size() * 2);
  for (size_t i = 0; i < count_; ++i) {
    bigger[i] = std::move(slots_[(head_ + i) & (slots_.size() - 1)]);
  }
  slots_ = std::move(bigger);
  head_ = 0;
}

void TaskQueue::Push(Job job) {
  Lock();
  if (count_ == slots_.size()) Grow();
  slots_[(head_ + count_) & (slots_.size() - 1)] = std::move(job);
  ++count_;
  size_.store(count_, std::memory_order_seq_cst);
  Unlock();
}

std::optional<Job> TaskQueue::Pop() noexcept {
  if (size_.load(std::memory_order_relaxed) == 0) return std::nullopt;
  Lock();
  if (count_ == 0) {
    Unlock();
    return std::nullopt;
  }
  std::optional<Job> job(std::move(slots_[head_]));
  slots_[head_] = Job{};
  head_ = (head_ + 1) & (slots_.size() - 1);
  --count_;
  size_.store(count_, std::memory_order_seq_cst);
  Unlock();
  return job;
}

}  // namespace haltpool
