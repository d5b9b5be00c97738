// A set of tasks to wait for together. Submit adds one, each task's end
// subtracts one; waiting returns when the count is back to zero.

#ifndef HALTPOOL_RUNTIME_TASK_GROUP_H_
#define HALTPOOL_RUNTIME_TASK_GROUP_H_

#include <atomic>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <mutex>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "idle/parker.h"

namespace haltpool {

class ThreadPool;
class TaskGroup;
namespace coro_internal {
void EndSpawned(ThreadPool*, TaskGroup*, std::exception_ptr) noexcept;
}  // namespace coro_internal

class TaskGroup {
 public:
  TaskGroup() = default;
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;
  // The owner waits for the group (ThreadPool::Wait) before destroying it,
  // and, when several threads wait for it, until every one's Wait returned.
  ~TaskGroup() = default;

  // `co_await group` in a coroutine: resumes when pending() is back to
  // zero, on the thread that finished the last task (or at once if none is
  // pending). Like ThreadPool::Wait, but the worker runs other tasks while
  // the coroutine is suspended instead of nesting them. Any thread.
  class Awaiter {
   public:
    explicit Awaiter(TaskGroup& group) noexcept : group_(group) {}
    bool await_ready() const;
    bool await_suspend(std::coroutine_handle<> h);
    void await_resume() const noexcept {}

   private:
    TaskGroup& group_;
  };
  Awaiter operator co_await() noexcept { return Awaiter(*this); }

  // Tasks submitted to the group and not finished yet. Any thread.
  int64_t pending() const noexcept {
    return pending_.load(std::memory_order_acquire);
  }

 private:
  friend class ThreadPool;
  friend void coro_internal::EndSpawned(ThreadPool*, TaskGroup*,
                                        std::exception_ptr) noexcept;

  void Add() noexcept { pending_.fetch_add(1, std::memory_order_relaxed); }
  // Marks one task finished. The last one drops to zero under the lock and
  // wakes every waiter, then (after the lock) resumes the awaiting
  // coroutines, touching the group no more; a waiter that saw zero passes
  // through the lock (Settle) before it returns, so the group is never used
  // after it may be destroyed.
  void Done();
  void Settle() { std::lock_guard<std::mutex> lock(mu_); }
  // Registers/unregisters a waiting worker's wake word.
  void AddWaiter(idle::WakeWord* word);
  // Returns the CPU the group's last task ran on when it last woke the
  // registered waiters, -1 if it never did: the waker of a word that saw a
  // wake while registered.
  int RemoveWaiter(idle::WakeWord* word);
  // Blocks a thread that is not a worker until pending() == 0, without
  // polling (ThreadPool::WaitOutside when it cannot make a waiter).
  void WaitBlocking();

  std::atomic<int64_t> pending_{0};
  std::mutex mu_;
  std::condition_variable done_;
  // Guarded by mu_. Inline room for the usual few waiters, so that a group
  // made for each round of tasks allocates nothing when it is waited for.
  absl::InlinedVector<idle::WakeWord*, 4> waiters_;
  int waker_cpu_ = -1;                             // Guarded by mu_.
  std::vector<std::coroutine_handle<>> awaiting_;  // Guarded by mu_.
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_TASK_GROUP_H_
