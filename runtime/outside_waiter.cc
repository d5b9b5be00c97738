#include "runtime/outside_waiter.h"

#include <memory>
#include <utility>

namespace haltpool {

namespace {

void AddIfNotZero(std::atomic<uint64_t>& count, uint64_t n) noexcept {
  if (n != 0) count.fetch_add(n, std::memory_order_relaxed);
}

}  // namespace

void OutsideWaitCounters::Add(bool parked,
                              const idle::WakeStats& wakes) noexcept {
  AddIfNotZero(parks_, parked ? 1 : 0);
  AddIfNotZero(polling_, wakes.polling);
  AddIfNotZero(not_idle_, wakes.not_idle);
  AddIfNotZero(syscall_, wakes.syscall);
}

OutsideWaitStats OutsideWaitCounters::Snapshot() const noexcept {
  OutsideWaitStats s;
  s.parks = parks_.load(std::memory_order_relaxed);
  s.wakes.polling = polling_.load(std::memory_order_relaxed);
  s.wakes.not_idle = not_idle_.load(std::memory_order_relaxed);
  s.wakes.syscall = syscall_.load(std::memory_order_relaxed);
  return s;
}

absl::StatusOr<OutsideWaiter*> OutsideWaiter::ForThisThread(
    uint64_t pool_serial, uint64_t generation,
    absl::FunctionRef<idle::IdleOptions()> options) {
  // Destroyed at thread exit, when no group holds its word any more: a
  // waiter unregisters its word before Wait returns.
  thread_local std::unique_ptr<OutsideWaiter> waiter;
  if (waiter == nullptr) waiter.reset(new OutsideWaiter());
  if (waiter->pool_serial_ != pool_serial ||
      waiter->generation_ != generation || !waiter->parker_) {
    // A wake left pending on the word by the last wait is taken by the
    // next Park, which returns at once; the caller looks again.
    absl::StatusOr<idle::Parker> parker =
        idle::Parker::Create(waiter->word_, options());
    if (!parker.ok()) return parker.status();
    waiter->parker_.emplace(*std::move(parker));
    waiter->pool_serial_ = pool_serial;
    waiter->generation_ = generation;
  }
  return waiter.get();
}

}  // namespace haltpool
