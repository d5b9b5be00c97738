// A set of tasks to wait for together. Submit adds one, each task's end
// subtracts one; waiting returns when the count is back to zero.

#ifndef HALTPOOL_RUNTIME_TASK_GROUP_H_
#define HALTPOOL_RUNTIME_TASK_GROUP_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "idle/parker.h"

namespace haltpool {

class ThreadPool;

class TaskGroup {
 public:
  TaskGroup() = default;
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;
  // The owner waits for the group (ThreadPool::Wait) before destroying it.
  ~TaskGroup() = default;

  // Tasks submitted to the group and not finished yet. Any thread.
  int64_t pending() const noexcept {
    return pending_.load(std::memory_order_acquire);
  }

 private:
  friend class ThreadPool;

  void Add() noexcept { pending_.fetch_add(1, std::memory_order_relaxed); }
  // Marks one task finished. The last one drops to zero under the lock and
  // wakes every waiter; a waiter that saw zero passes through the lock
  // (Settle) before it returns, so the group is never used after it may be
  // destroyed.
  void Done();
  void Settle() { std::lock_guard<std::mutex> lock(mu_); }
  // Registers/unregisters a waiting worker's wake word.
  void AddWaiter(idle::WakeWord* word);
  void RemoveWaiter(idle::WakeWord* word);
  // Blocks a thread that is not a worker until pending() == 0.
  void WaitOutside();

  std::atomic<int64_t> pending_{0};
  std::mutex mu_;
  std::condition_variable done_;
  std::vector<idle::WakeWord*> waiters_;  // Guarded by mu_.
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_TASK_GROUP_H_
