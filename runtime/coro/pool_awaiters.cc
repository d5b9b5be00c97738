#include "runtime/coro/pool_awaiters.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "runtime/coro/task.h"
#include "runtime/thread_pool.h"

namespace haltpool {

bool ScheduleAwaiter::await_suspend(std::coroutine_handle<> h) noexcept {
  absl::Status s = pool_->Submit([h] { h.resume(); });
  // Once submitted, the coroutine may already run (and end) on a worker:
  // nothing here touches its frame, this awaiter included.
  if (s.ok()) return true;
  status_ = std::move(s);
  return false;
}

void ScheduleAwaiter::await_resume() const {
  if (!status_.ok()) {
    throw std::runtime_error("haltpool: co_await Schedule(): " +
                             std::string(status_.message()));
  }
}

// The timer's task: resumes the sleeper when it runs, and also when it is
// destroyed unrun (the pool cancelled it at shutdown, or refused it).
class SleepResumer {
 public:
  explicit SleepResumer(SleepAwaiter* a) noexcept : awaiter_(a) {}
  SleepResumer(SleepResumer&& other) noexcept
      : awaiter_(std::exchange(other.awaiter_, nullptr)) {}
  SleepResumer& operator=(SleepResumer&&) = delete;
  ~SleepResumer() {
    if (awaiter_ != nullptr) awaiter_->End(/*fired=*/false);
  }
  void operator()() { std::exchange(awaiter_, nullptr)->End(/*fired=*/true); }

 private:
  SleepAwaiter* awaiter_;
};

void SleepAwaiter::End(bool fired) noexcept {
  slept_ = fired;
  State expected = kSubmitting;
  // Still inside await_suspend (or SubmitAt refused the timer): it resumes
  // the coroutine by not suspending it.
  if (state_.compare_exchange_strong(expected, kEnded,
                                     std::memory_order_acq_rel)) {
    return;
  }
  handle_.resume();
}

bool SleepAwaiter::await_suspend(std::coroutine_handle<> h) noexcept {
  // A new round for an awaiter awaited again: else an earlier await's state
  // (kArmed, kEnded) would let this one go on at once, and its timer would
  // later resume the frame wherever it is. The timer queue's lock orders
  // these stores before the timer's task runs.
  slept_ = false;
  state_.store(kSubmitting, std::memory_order_relaxed);
  handle_ = h;
  const absl::Status s = absolute_
                             ? pool_->SubmitAt(deadline_, SleepResumer(this))
                             : pool_->SubmitAfter(delay_, SleepResumer(this));
  if (!s.ok()) return false;  // The resumer ended it, unrun: slept_ false.
  State expected = kSubmitting;
  // False: the timer already ran (or was cancelled): go on now.
  return state_.compare_exchange_strong(expected, kArmed,
                                        std::memory_order_acq_rel);
}

namespace coro_internal {

void EndSpawned(ThreadPool* pool, TaskGroup* group,
                std::exception_ptr exception) noexcept {
  if (exception) pool->ReportException(std::move(exception));
  if (group != nullptr) group->Done();
}

}  // namespace coro_internal
}  // namespace haltpool
