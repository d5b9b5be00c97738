// The shared-memory ring + parker endpoint of bench/pipe.

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include <new>
#include <string>

#include "absl/strings/str_cat.h"
#include "arch/cpu_wait.h"
#include "bench/endpoint.h"

namespace haltpool::bench {
namespace {

class RingEndpoint final : public Endpoint {
 public:
  RingEndpoint(Ring* in, Ring* out, idle::Parker parker)
      : in_(in), out_(out), parker_(std::move(parker)) {}

  void Send(uint64_t message) noexcept override {
    const uint64_t tail = out_->tail.load(std::memory_order_relaxed);
    // Full only if the peer fell kSlots behind; ping-pong never does.
    while (tail - out_->head.load(std::memory_order_acquire) >= Ring::kSlots) {
      sched_yield();
    }
    out_->slots[tail % Ring::kSlots] = message;
    out_->tail.store(tail + 1, std::memory_order_release);
    out_->reader.Unpark();
  }

  uint64_t Receive() noexcept override {
    for (;;) {
      const uint64_t head = in_->head.load(std::memory_order_relaxed);
      if (head != in_->tail.load(std::memory_order_acquire)) {
        const uint64_t message = in_->slots[head % Ring::kSlots];
        in_->head.store(head + 1, std::memory_order_release);
        return message;
      }
      parker_.Park();
    }
  }

  idle::IdleStats Stats(absl::string_view label) const override {
    return parker_.Stats(label, "parker");
  }

 private:
  Ring* in_;
  Ring* out_;
  idle::Parker parker_;
};

}  // namespace

absl::StatusOr<RingLink> OpenRingLink(bool across_processes) {
  void* mem = mmap(nullptr, 2 * sizeof(Ring), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    return absl::InternalError(absl::StrCat("mmap: ", strerror(errno)));
  }
  const arch::FutexScope scope =
      across_processes ? arch::FutexScope::kShared : arch::FutexScope::kPrivate;
  Ring* rings = static_cast<Ring*>(mem);
  new (&rings[0]) Ring(scope);
  new (&rings[1]) Ring(scope);
  return RingLink{rings};
}

absl::StatusOr<std::unique_ptr<Endpoint>> MakeRingEndpoint(
    const RingLink& link, int side, const idle::IdleOptions& options) {
  absl::StatusOr<idle::Parker> parker =
      idle::Parker::Create(link.rings[side].reader, options);
  if (!parker.ok()) return parker.status();
  return std::make_unique<RingEndpoint>(
      &link.rings[side], &link.rings[1 - side], *std::move(parker));
}

}  // namespace haltpool::bench
