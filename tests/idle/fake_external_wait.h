// An ExternalWait (idle/external_wait.h) for tests: an "I/O ring" whose
// events the test raises by hand, that blocks on a futex of its own and
// counts how the parker used it. Header-only (the cross build links every
// test file into one binary).

#ifndef HALTPOOL_TESTS_IDLE_FAKE_EXTERNAL_WAIT_H_
#define HALTPOOL_TESTS_IDLE_FAKE_EXTERNAL_WAIT_H_

#include <atomic>
#include <cstdint>
#include <limits>

#include "arch/cycle_clock.h"
#include "arch/futex.h"
#include "idle/external_wait.h"

namespace haltpool::idle::fakes {

class FakeExternalWait final : public ExternalWait {
 public:
  bool Ready() noexcept override {
    ready_checks_.fetch_add(1, std::memory_order_relaxed);
    return ready_.load(std::memory_order_acquire);
  }

  // Blocks until MakeReady(), a Kick() (pending or new), or `until_ns`.
  bool Block(int64_t until_ns) noexcept override {
    blocks_.fetch_add(1, std::memory_order_relaxed);
    in_block_.store(true, std::memory_order_release);
    bool result;
    for (;;) {
      // Load the sequence first: a Kick or an event after this load
      // changes it, so the futex wait below cannot sleep through it.
      const uint32_t seq = seq_.load(std::memory_order_acquire);
      if (ready_.load(std::memory_order_acquire) ||
          kick_pending_.exchange(false, std::memory_order_acq_rel)) {
        result = true;
        break;
      }
      if (until_ns != arch::kNoDeadline && arch::MonotonicNowNs() >= until_ns) {
        result = false;
        break;
      }
      arch::FutexWaitUntil(seq_, seq, until_ns, arch::FutexScope::kPrivate);
    }
    in_block_.store(false, std::memory_order_release);
    return result;
  }

  void Kick() noexcept override {
    kicks_.fetch_add(1, std::memory_order_relaxed);
    kick_pending_.store(true, std::memory_order_release);
    Bump();
  }

  // An event arrives (a completion lands in the ring).
  void MakeReady() {
    ready_.store(true, std::memory_order_release);
    Bump();
  }
  void ClearReady() { ready_.store(false, std::memory_order_release); }

  uint64_t blocks() const { return blocks_.load(); }
  uint64_t kicks() const { return kicks_.load(); }
  uint64_t ready_checks() const { return ready_checks_.load(); }
  bool in_block() const { return in_block_.load(std::memory_order_acquire); }

 private:
  void Bump() {
    seq_.fetch_add(1, std::memory_order_release);
    arch::FutexWake(seq_, std::numeric_limits<int>::max(),
                    arch::FutexScope::kPrivate);
  }

  std::atomic<bool> ready_{false};
  std::atomic<bool> kick_pending_{false};
  std::atomic<uint32_t> seq_{0};
  std::atomic<bool> in_block_{false};
  std::atomic<uint64_t> blocks_{0};
  std::atomic<uint64_t> kicks_{0};
  mutable std::atomic<uint64_t> ready_checks_{0};
};

}  // namespace haltpool::idle::fakes

#endif  // HALTPOOL_TESTS_IDLE_FAKE_EXTERNAL_WAIT_H_
