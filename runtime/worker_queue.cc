#include "runtime/worker_queue.h"

namespace haltpool {
namespace {

size_t RoundUpToPowerOfTwo(size_t n) {
  size_t p = 2;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

WorkerQueue::WorkerQueue(size_t capacity)
    : capacity_(RoundUpToPowerOfTwo(capacity)),
      mask_(capacity_ - 1),
      slots_(std::make_unique<Slot[]>(capacity_)) {
  for (size_t i = 0; i < capacity_; ++i) {
    slots_[i].free_for.store(i, std::memory_order_relaxed);
  }
}

WorkerQueue::~WorkerQueue() {
  while (Take()) {
  }
}

}  // namespace haltpool
