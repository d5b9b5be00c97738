#include "runtime/timer_queue.h"

#include <algorithm>
#include <mutex>
#include <utility>

namespace haltpool {

void TimerQueue::Publish() {
  next_.store(heap_.empty() ? arch::kNoDeadline : heap_.front().deadline_ns,
              std::memory_order_seq_cst);
}

bool TimerQueue::Add(int64_t deadline_ns, TaskFn task) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool earliest =
      heap_.empty() || deadline_ns < heap_.front().deadline_ns;
  heap_.push_back({deadline_ns, next_seq_++, std::move(task)});
  std::push_heap(heap_.begin(), heap_.end(), Later);
  Publish();
  return earliest;
}

void TimerQueue::PopDue(int64_t now_ns, std::vector<TaskFn>& out) {
  if (next_deadline() > now_ns) return;
  std::lock_guard<std::mutex> lock(mu_);
  while (!heap_.empty() && heap_.front().deadline_ns <= now_ns) {
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    out.push_back(std::move(heap_.back().task));
    heap_.pop_back();
  }
  Publish();
}

size_t TimerQueue::CancelAll(std::vector<TaskFn>& out) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n = heap_.size();
  for (Entry& e : heap_) out.push_back(std::move(e.task));
  heap_.clear();
  Publish();
  return n;
}

}  // namespace haltpool
