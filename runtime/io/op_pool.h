// Operation records for an I/O reactor: allocated in slabs, recycled through
// a free list, so a reactor in steady state allocates nothing per operation;
// and the FIFO list the reactors queue records on. Shared by the io_uring and
// epoll backends; each defines its own record, which must have a `next`
// pointer for the lists.

#ifndef HALTPOOL_RUNTIME_IO_OP_POOL_H_
#define HALTPOOL_RUNTIME_IO_OP_POOL_H_

#include <cstddef>
#include <memory>
#include <vector>

namespace haltpool {

template <typename Op>
class OpPool {
 public:
  // Records allocated at once when the free list runs dry; the list never
  // shrinks. A guess: a worker's usual number of operations in flight.
  static constexpr size_t kSlabOps = 32;

  // A record off the free list (a new slab if it is empty). Owner only.
  Op* Take() {
    if (free_ == nullptr) {
      auto slab = std::make_unique<Op[]>(kSlabOps);
      for (size_t i = 0; i < kSlabOps; ++i) {
        slab[i].next = free_;
        free_ = &slab[i];
      }
      slabs_.push_back(std::move(slab));
    }
    Op* op = free_;
    free_ = op->next;
    op->next = nullptr;
    return op;
  }

  // Returns `op` to the free list. The caller has reset its fields.
  void Put(Op* op) noexcept {
    op->next = free_;
    free_ = op;
  }

  // Calls `f(op)` on every record ever made, free or not.
  template <typename F>
  void ForEach(F&& f) {
    for (const std::unique_ptr<Op[]>& slab : slabs_) {
      for (size_t i = 0; i < kSlabOps; ++i) f(slab[i]);
    }
  }

 private:
  Op* free_ = nullptr;
  std::vector<std::unique_ptr<Op[]>> slabs_;  // Destroys records last.
};

// A FIFO of records linked through `next`, owning none of them. A record is
// on at most one list (or the free list) at a time. Owner only; no
// allocation.
template <typename Op>
struct OpList {
  Op* head = nullptr;
  Op* tail = nullptr;

  bool empty() const noexcept { return head == nullptr; }

  // Appends `op`.
  void PushBack(Op* op) noexcept {
    op->next = nullptr;
    if (tail != nullptr) {
      tail->next = op;
    } else {
      head = op;
    }
    tail = op;
  }

  // Unlinks and returns the first record, or null if the list is empty.
  Op* PopFront() noexcept {
    Op* op = head;
    if (op != nullptr) {
      head = op->next;
      if (head == nullptr) tail = nullptr;
      op->next = nullptr;
    }
    return op;
  }
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_IO_OP_POOL_H_
