#include "runtime/injection_queue.h"

#include <new>
#include <thread>
#include <utility>

#include "arch/cpu_wait.h"

namespace haltpool {
namespace {

size_t RoundUpToPowerOfTwo(size_t n) {
  size_t p = 2;
  while (p < n) p <<= 1;
  return p;
}

// A producer preempted between winning a position and filling it is waited
// out with yield() after this many relax hints (as TaskQueue's lock).
constexpr int kSpinsBeforeYield = 100;

}  // namespace

InjectionQueue::InjectionQueue(size_t ring_capacity)
    : capacity_(RoundUpToPowerOfTwo(ring_capacity)),
      mask_(capacity_ - 1),
      slots_(std::make_unique<Slot[]>(capacity_)),
      overflow_(/*initial_capacity=*/16) {
  for (size_t i = 0; i < capacity_; ++i) {
    slots_[i].seq.store(i, std::memory_order_relaxed);
  }
}

InjectionQueue::~InjectionQueue() {
  while (Pop()) {
  }
}

bool InjectionQueue::TryPushRing(Job& job) noexcept {
  uint64_t pos = tail_.load(std::memory_order_relaxed);
  Slot* s;
  for (;;) {
    s = &slots_[pos & mask_];
    const uint64_t seq = s->seq.load(std::memory_order_acquire);
    const int64_t dif = static_cast<int64_t>(seq - pos);
    if (dif == 0) {
      if (tail_.compare_exchange_weak(pos, pos + 1,
                                      std::memory_order_relaxed)) {
        break;
      }
    } else if (dif < 0) {
      return false;  // Position pos - capacity not taken (or moving out).
    } else {
      pos = tail_.load(std::memory_order_relaxed);  // Another producer won.
    }
  }
  ::new (static_cast<void*>(s->storage)) Job(std::move(job));
  s->seq.store(pos + 1, std::memory_order_release);
  return true;
}

std::optional<Job> InjectionQueue::PopRing() noexcept {
  uint64_t pos = head_.load(std::memory_order_relaxed);
  Slot* s;
  for (int spins = 0;;) {
    s = &slots_[pos & mask_];
    const uint64_t seq = s->seq.load(std::memory_order_acquire);
    const int64_t dif = static_cast<int64_t>(seq - (pos + 1));
    if (dif == 0) {
      if (head_.compare_exchange_weak(pos, pos + 1,
                                      std::memory_order_relaxed)) {
        break;
      }
    } else if (dif < 0) {
      // Not filled for pos. Empty, unless a producer won pos and is
      // filling it now: then wait for it.
      if (tail_.load(std::memory_order_acquire) <= pos) return std::nullopt;
      if (++spins < kSpinsBeforeYield) {
        arch::CpuRelax();
      } else {
        std::this_thread::yield();
      }
      pos = head_.load(std::memory_order_relaxed);
    } else {
      pos = head_.load(std::memory_order_relaxed);  // Another consumer won.
    }
  }
  Job* in_slot = std::launder(reinterpret_cast<Job*>(s->storage));
  std::optional<Job> job(std::move(*in_slot));
  in_slot->~Job();
  s->seq.store(pos + capacity_, std::memory_order_release);
  return job;
}

void InjectionQueue::Push(Job job) {
  // While the overflow holds jobs, new ones queue behind them there: the
  // ring drains first, then the overflow, so nothing waits for ever.
  if (overflow_.size() == 0 && TryPushRing(job)) return;
  overflow_.Push(std::move(job));
}

std::optional<Job> InjectionQueue::Pop() noexcept {
  if (std::optional<Job> job = PopRing()) return job;
  return overflow_.Pop();
}

bool InjectionQueue::Empty() const noexcept {
  const uint64_t head = head_.load(std::memory_order_seq_cst);
  return tail_.load(std::memory_order_seq_cst) <= head && overflow_.size() == 0;
}

}  // namespace haltpool
