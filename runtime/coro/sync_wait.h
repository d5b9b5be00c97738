// SyncWait: runs a Task from ordinary code (main, a test) and blocks the
// calling thread until it ends, returning its value or rethrowing its
// exception.
//
//   int main() {
//     auto pool = haltpool::ThreadPool::Create();
//     return haltpool::SyncWait(Serve(**pool));   // Serve: Task<int>
//   }

#ifndef HALTPOOL_RUNTIME_CORO_SYNC_WAIT_H_
#define HALTPOOL_RUNTIME_CORO_SYNC_WAIT_H_

#include <atomic>
#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "runtime/coro/task.h"

namespace haltpool {
namespace coro_internal {

// The coroutine SyncWait drives: awaits the task, then notifies. Its frame
// is destroyed by SyncWait once notified.
class SyncWaitRoot {
 public:
  struct promise_type {
    std::atomic<bool>* done = nullptr;
    SyncWaitRoot get_return_object() noexcept {
      return SyncWaitRoot(
          std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct Notify {
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        // SyncWait may destroy the frame and the flag as soon as the store
        // is seen; notify_one wakes by address and reads neither.
        std::atomic<bool>* done = h.promise().done;
        done->store(true, std::memory_order_release);
        done->notify_one();
      }
      void await_resume() const noexcept {}
    };
    Notify final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    // The body catches everything; nothing escapes to here.
    void unhandled_exception() noexcept { std::terminate(); }
  };

  explicit SyncWaitRoot(std::coroutine_handle<promise_type> h) noexcept
      : handle_(h) {}
  SyncWaitRoot(SyncWaitRoot&& other) noexcept
      : handle_(std::exchange(other.handle_, {})) {}
  SyncWaitRoot(const SyncWaitRoot&) = delete;
  SyncWaitRoot& operator=(const SyncWaitRoot&) = delete;
  ~SyncWaitRoot() {
    if (handle_) handle_.destroy();
  }

  // Starts the body on this thread and blocks until it has ended.
  void Run(std::atomic<bool>& done) {
    handle_.promise().done = &done;
    handle_.resume();
    while (!done.load(std::memory_order_acquire)) done.wait(false);
  }

 private:
  std::coroutine_handle<promise_type> handle_;
};

}  // namespace coro_internal

// Starts `task` on the calling thread (it runs inline until it first
// suspends, typically at `co_await pool.Schedule()`), blocks until it ends
// and returns its value, or rethrows the exception that escaped it. Not
// from one of a pool's workers when the task needs that worker to go on
// (the worker would block in here); from main or any other thread.
template <typename T>
T SyncWait(Task<T> task) {
  std::atomic<bool> done{false};
  std::exception_ptr error;
  std::conditional_t<std::is_void_v<T>, bool, std::optional<T>> result{};
  auto body = [&]() -> coro_internal::SyncWaitRoot {
    try {
      if constexpr (std::is_void_v<T>) {
        co_await std::move(task);
      } else {
        result.emplace(co_await std::move(task));
      }
    } catch (...) {
      error = std::current_exception();
    }
  };
  coro_internal::SyncWaitRoot root = body();
  root.Run(done);
  if (error) std::rethrow_exception(error);
  if constexpr (!std::is_void_v<T>) return std::move(*result);
}

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_CORO_SYNC_WAIT_H_
