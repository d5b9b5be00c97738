// A FIFO of jobs for any number of producers and consumers: a growable ring
// under a spin lock. Push and pop move a task in and out of preallocated
// slots, so once the ring has grown to the working size they allocate
// nothing. The injection queue (injection_queue.h) keeps its overflow here:
// what does not fit its lock-free ring.
//
// size() is readable without the lock with sequentially consistent ordering:
// the pool's wake protocol pairs it with its idle flags (see thread_pool.cc).

#ifndef HALTPOOL_RUNTIME_TASK_QUEUE_H_
#define HALTPOOL_RUNTIME_TASK_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <optional>
#include <thread>
#include <vector>

#include "arch/cpu_wait.h"
#include "runtime/job.h"

namespace haltpool {

class TaskQueue {
 public:
  // Room for `initial_capacity` tasks before the first growth (rounded up
  // to a power of two).
  explicit TaskQueue(size_t initial_capacity = 256);
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  // Appends `job`. Any thread. Allocates only when the ring must grow.
  void Push(Job job);

  // Removes the oldest job, if any. Any thread.
  std::optional<Job> Pop() noexcept;

  // Tasks queued now; any thread, no lock, seq_cst.
  size_t size() const noexcept { return size_.load(std::memory_order_seq_cst); }

 private:
  // Critical sections are a few moves; a holder that was preempted is
  // waited out with yield() rather than spun on.
  void Lock() noexcept {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire);) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < kSpinsBeforeYield) {
          arch::CpuRelax();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  void Unlock() noexcept { locked_.store(false, std::memory_order_release); }
  void Grow();

  static constexpr int kSpinsBeforeYield = 100;

  std::atomic<bool> locked_{false};
  std::vector<Job> slots_;  // Capacity is a power of two.
  size_t head_ = 0;         // Index of the oldest task (mod capacity).
  size_t count_ = 0;
  std::atomic<size_t> size_{0};  // Mirror of count_ for lock-free readers.
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_TASK_QUEUE_H_
