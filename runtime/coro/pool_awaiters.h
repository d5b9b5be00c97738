// What `co_await pool.Schedule()`, `co_await pool.SleepFor(d)` and
// `co_await pool.SleepUntil(t)` await (runtime/thread_pool.h). Each queues
// the coroutine's resumption as a task or a timer of the pool; nothing is
// allocated beyond the task's inline storage, and no extra wake is made
// beyond what Submit and SubmitAt make.

#ifndef HALTPOOL_RUNTIME_CORO_POOL_AWAITERS_H_
#define HALTPOOL_RUNTIME_CORO_POOL_AWAITERS_H_

#include <atomic>
#include <coroutine>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace haltpool {

class ThreadPool;

// Moves the awaiting coroutine onto one of the pool's workers: its
// resumption is submitted as a task (so on a worker it also yields to the
// tasks queued before it). If the pool has shut down the coroutine goes on
// where it is and the co_await throws std::runtime_error saying so: nothing
// is dropped silently.
class ScheduleAwaiter {
 public:
  explicit ScheduleAwaiter(ThreadPool& pool) noexcept : pool_(&pool) {}
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h) noexcept;
  void await_resume() const;

 private:
  ThreadPool* pool_;
  absl::Status status_;
};

// Suspends the awaiting coroutine until a deadline, on the pool's timers;
// it resumes on the worker that runs the timer. `co_await` gives true once
// the time has come, false if the pool shut down first (its pending timers
// are cancelled then, and the coroutine resumes on a worker during
// Shutdown) or had shut down already (it goes on at once where it is).
// An awaiter kept and awaited again sleeps again, for its delay from then
// (or until its deadline).
class SleepAwaiter {
 public:
  // Until `delay` has passed on CLOCK_MONOTONIC (ThreadPool::SubmitAfter).
  SleepAwaiter(ThreadPool& pool, absl::Duration delay) noexcept
      : pool_(&pool), delay_(delay), absolute_(false) {}
  // Until the wall-clock time `deadline` (ThreadPool::SubmitAt).
  SleepAwaiter(ThreadPool& pool, absl::Time deadline) noexcept
      : pool_(&pool), deadline_(deadline), absolute_(true) {}
  SleepAwaiter(const SleepAwaiter&) = delete;
  SleepAwaiter& operator=(const SleepAwaiter&) = delete;

  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h) noexcept;
  bool await_resume() const noexcept { return slept_; }

 private:
  friend class SleepResumer;
  // Who resumes the coroutine: the timer's task (fired or cancelled) or
  // await_suspend itself, whichever comes second.
  enum State { kSubmitting, kArmed, kEnded };

  // The timer's task ran (`fired`) or was destroyed unrun.
  void End(bool fired) noexcept;

  ThreadPool* pool_;
  absl::Duration delay_;
  absl::Time deadline_;
  bool absolute_;
  bool slept_ = false;
  std::coroutine_handle<> handle_;
  std::atomic<State> state_{kSubmitting};
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_CORO_POOL_AWAITERS_H_
