// haltpool::Task<T>: the coroutine type of haltpool's C++20 API. A task is
// lazy (its body starts when it is awaited, or when ThreadPool::Spawn starts
// it on a worker) and move-only. A task that ends after its awaiter
// suspended hands control back by symmetric transfer; one that ends at once
// lets its awaiter go on without suspending, so a chain of tasks uses no
// stack per link, and nothing is allocated beyond each coroutine frame. An
// exception that escapes a task's body is rethrown to the coroutine that awaits
// it.
//
//   haltpool::Task<int> Answer() { co_return 42; }
//   haltpool::Task<void> Main(haltpool::ThreadPool& pool) {
//     co_await pool.Schedule();       // now on one of the pool's workers
//     int v = co_await Answer();      // runs Answer inline, resumes here
//   }
//
// Threads: a task resumes on whichever thread completes what it awaits (the
// worker whose I/O completed, the worker that ran a timer); it never runs on
// two threads at once.

#ifndef HALTPOOL_RUNTIME_CORO_TASK_H_
#define HALTPOOL_RUNTIME_CORO_TASK_H_

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace haltpool {

class ThreadPool;
class TaskGroup;

template <typename T = void>
class Task;

namespace coro_internal {

// Task frames alive in the process (made and not yet destroyed).
inline std::atomic<int64_t> live_task_frames{0};

// A spawned task has ended (its frame is already destroyed): reports
// `exception`, if any, to `pool`'s exception handler and counts `group`, if
// any, down. Defined with ThreadPool.
void EndSpawned(ThreadPool* pool, TaskGroup* group,
                std::exception_ptr exception) noexcept;

// What every Task's promise holds whatever T is: who to resume at the end,
// the exception that escaped, and, for a spawned task, where it reports.
class PromiseBase {
 public:
  PromiseBase() noexcept {
    live_task_frames.fetch_add(1, std::memory_order_relaxed);
  }
  ~PromiseBase() { live_task_frames.fetch_sub(1, std::memory_order_relaxed); }

  std::suspend_always initial_suspend() noexcept { return {}; }

  // At the end: resume the awaiting coroutine, or, for a spawned task,
  // destroy the frame and report.
  struct FinalAwaiter {
    bool await_ready() const noexcept { return false; }
    template <typename Promise>
    std::coroutine_handle<> await_suspend(
        std::coroutine_handle<Promise> h) noexcept {
      PromiseBase& p = h.promise();
      if (p.spawned_pool_ != nullptr) {
        ThreadPool* pool = p.spawned_pool_;
        TaskGroup* group = p.spawned_group_;
        std::exception_ptr exception = std::move(p.exception_);
        h.destroy();
        EndSpawned(pool, group, std::move(exception));
        return std::noop_coroutine();
      }
      // Whoever of the two comes second resumes the awaiter: here, if it
      // has suspended (the task ended later, elsewhere), by symmetric
      // transfer; else its await_suspend, by not suspending.
      if (p.handoff_.exchange(true, std::memory_order_acq_rel)) {
        return p.continuation_;
      }
      return std::noop_coroutine();
    }
    void await_resume() const noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }

  void unhandled_exception() noexcept { exception_ = std::current_exception(); }

  // Runs the task, awaited by `awaiting`, until it first suspends or ends.
  // Returns false if it ended already: the awaiter then goes on without
  // suspending, so a chain of tasks that complete at once keeps the stack
  // flat even where the compiler does not make symmetric transfer a tail
  // call (GCC at -O0).
  bool StartAwaitedBy(std::coroutine_handle<> self,
                      std::coroutine_handle<> awaiting) noexcept {
    continuation_ = awaiting;
    self.resume();
    return !handoff_.exchange(true, std::memory_order_acq_rel);
  }
  // Makes the task report to `pool` (and `group`) when it ends, instead of
  // resuming an awaiter; ThreadPool::Spawn.
  void set_spawned(ThreadPool* pool, TaskGroup* group) noexcept {
    spawned_pool_ = pool;
    spawned_group_ = group;
  }
  void RethrowIfFailed() {
    if (exception_) std::rethrow_exception(exception_);
  }

 private:
  std::coroutine_handle<> continuation_;
  // Set by the first of the task's end and its awaiter's suspension.
  std::atomic<bool> handoff_{false};
  std::exception_ptr exception_;
  ThreadPool* spawned_pool_ = nullptr;
  TaskGroup* spawned_group_ = nullptr;
};

template <typename T>
class Promise : public PromiseBase {
 public:
  Task<T> get_return_object() noexcept;
  template <typename U = T>
  requires std::is_convertible_v<U&&, T>
  void return_value(U&& value) noexcept(
      std::is_nothrow_constructible_v<T, U&&>) {
    value_.emplace(std::forward<U>(value));
  }
  T TakeResult() {
    RethrowIfFailed();
    return std::move(*value_);
  }

 private:
  std::optional<T> value_;
};

template <>
class Promise<void> : public PromiseBase {
 public:
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void TakeResult() { RethrowIfFailed(); }
};

}  // namespace coro_internal

// Task frames alive in this process: made and not yet destroyed. A test of
// shutdown reads it to show that no frame leaks. Any thread; relaxed.
inline int64_t LiveTaskFrames() noexcept {
  return coro_internal::live_task_frames.load(std::memory_order_relaxed);
}

template <typename T>
class [[nodiscard]] Task {
  static_assert(!std::is_reference_v<T>,
                "Task<T&> is not supported: return a pointer or a value");

 public:
  using promise_type = coro_internal::Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Task() noexcept = default;
  explicit Task(Handle h) noexcept : handle_(h) {}
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      if (handle_) handle_.destroy();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  // Destroys the frame: a task never awaited never runs. Not while it runs.
  ~Task() {
    if (handle_) handle_.destroy();
  }

  // False for a default-constructed or moved-from task.
  explicit operator bool() const noexcept { return bool(handle_); }

  // Awaiting a task starts it (it runs inline until it first suspends) and
  // resumes the awaiter when it ends, with its value or its exception.
  auto operator co_await() && noexcept { return Awaiter{handle_}; }
  auto operator co_await() & noexcept { return Awaiter{handle_}; }

  // Gives up the frame to the caller (ThreadPool::Spawn, SyncWait).
  Handle Release() noexcept { return std::exchange(handle_, {}); }

 private:
  struct Awaiter {
    Handle h;
    bool await_ready() const noexcept { return !h || h.done(); }
    bool await_suspend(std::coroutine_handle<> awaiting) noexcept {
      return h.promise().StartAwaitedBy(h, awaiting);
    }
    T await_resume() {
      if (!h) {
        throw std::logic_error(
            "haltpool: co_await on an empty Task (default-constructed or "
            "moved from)");
      }
      return h.promise().TakeResult();
    }
  };

  Handle handle_;
};

namespace coro_internal {

template <typename T>
Task<T> Promise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}

inline Task<void> Promise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}

}  // namespace coro_internal
}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_CORO_TASK_H_
