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
      pages_(capacity_ * sizeof(Slot)),
      slots_(::new (pages_.data()) Slot[capacity_]),
      overflow_(/*initial_capacity=*/16) {}

InjectionQueue::~InjectionQueue() {
  while (Pop()) {
  }
}

InjectionQueue::Slot& InjectionQueue::SlotFor(uint64_t pos) const noexcept {
  return slots_[pos & mask_];
}

uint64_t InjectionQueue::Seq(uint64_t pos) const noexcept {
  const uint64_t index = pos & mask_;
  return std::atomic_ref<uint64_t>(slots_[index].seq_from_index)
             .load(std::memory_order_acquire) +
         index;
}

void InjectionQueue::SetSeq(uint64_t pos, uint64_t seq) noexcept {
  const uint64_t index = pos & mask_;
  std::atomic_ref<uint64_t>(slots_[index].seq_from_index)
      .store(seq - index, std::memory_order_release);
}

bool InjectionQueue::TryPushRing(Job& job) noexcept {
  uint64_t pos = tail_.load(std::memory_order_relaxed);
  for (;;) {
    const int64_t dif = static_cast<int64_t>(Seq(pos) - pos);
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
  ::new (static_cast<void*>(SlotFor(pos).storage)) Job(std::move(job));
  SetSeq(pos, pos + 1);
  return true;
}

std::optional<Job> InjectionQueue::PopRing() noexcept {
  uint64_t pos = head_.load(std::memory_order_relaxed);
  for (int spins = 0;;) {
    const int64_t dif = static_cast<int64_t>(Seq(pos) - (pos + 1));
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
  Job* in_slot = std::launder(reinterpret_cast<Job*>(SlotFor(pos).storage));
  std::optional<Job> job(std::move(*in_slot));
  in_slot->~Job();
  SetSeq(pos, pos + capacity_);
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
