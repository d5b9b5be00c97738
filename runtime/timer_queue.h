// Tasks due at a CLOCK_MONOTONIC deadline, in deadline order (ties in
// submission order). A min-heap under a mutex; timers are rarer than tasks.

#ifndef HALTPOOL_RUNTIME_TIMER_QUEUE_H_
#define HALTPOOL_RUNTIME_TIMER_QUEUE_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "arch/cycle_clock.h"
#include "runtime/task_fn.h"

namespace haltpool {

class TimerQueue {
 public:
  // Adds `task` due at `deadline_ns`. Returns true if it is now the earliest
  // timer (the caller must make sure someone waits for the new deadline).
  // Any thread.
  bool Add(int64_t deadline_ns, TaskFn task);

  // Moves every task due at `now_ns` into `out`, earliest first. Any thread.
  void PopDue(int64_t now_ns, std::vector<TaskFn>& out);

  // The earliest deadline, or arch::kNoDeadline. Any thread, no lock.
  int64_t next_deadline() const noexcept {
    return next_.load(std::memory_order_seq_cst);
  }

  // Removes every timer, moving their tasks, unrun, to the end of `out`;
  // returns how many there were. Any thread.
  size_t CancelAll(std::vector<TaskFn>& out);

 private:
  struct Entry {
    int64_t deadline_ns;
    uint64_t seq;
    TaskFn task;
  };
  // std::push_heap keeps the greatest first: "later" is "less".
  static bool Later(const Entry& a, const Entry& b) {
    return a.deadline_ns != b.deadline_ns ? a.deadline_ns > b.deadline_ns
                                          : a.seq > b.seq;
  }
  // With mu_ held.
  void Publish();

  // A std::mutex (pthread's), not absl::Mutex: ThreadSanitizer sees its
  // ordering, which it cannot in Debian's uninstrumented Abseil.
  std::mutex mu_;
  std::vector<Entry> heap_;  // Guarded by mu_, as next_seq_.
  uint64_t next_seq_ = 0;
  std::atomic<int64_t> next_{arch::kNoDeadline};
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_TIMER_QUEUE_H_
