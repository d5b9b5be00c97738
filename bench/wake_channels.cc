#include "bench/wake_channels.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <semaphore>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "arch/cpu_wait.h"
#include "arch/cycle_clock.h"
#include "arch/futex.h"
#include "idle/parker.h"
#include "tbb/concurrent_queue.h"

namespace haltpool::bench {
namespace {

class ParkerChannel final : public WakeChannel {
 public:
  explicit ParkerChannel(const idle::IdleOptions& options)
      : options_(options) {}
  absl::Status Init() {
    absl::StatusOr<idle::Parker> parker = idle::Parker::Create(word_, options_);
    if (!parker.ok()) return parker.status();
    parker_.emplace(*std::move(parker));
    return absl::OkStatus();
  }
  void Wait() override {
    // The flag makes a wake one-to-one; Park may also return for a wake
    // that an earlier Signal left behind.
    while (!pending_.exchange(false, std::memory_order_acquire)) {
      parker_->Park();
    }
  }
  void Signal() override {
    pending_.store(true, std::memory_order_release);
    word_.Unpark();
  }

 private:
  idle::IdleOptions options_;
  idle::WakeWord word_;
  std::optional<idle::Parker> parker_;
  std::atomic<bool> pending_{false};
};

class SemaphoreChannel final : public WakeChannel {
 public:
  void Wait() override { sem_.acquire(); }
  void Signal() override { sem_.release(); }

 private:
  std::binary_semaphore sem_{0};
};

class AtomicWaitChannel final : public WakeChannel {
 public:
  void Wait() override {
    while (flag_.exchange(0, std::memory_order_acquire) == 0) {
      flag_.wait(0, std::memory_order_relaxed);
    }
  }
  void Signal() override {
    // An exchange, not a store: a full barrier before notify_one() looks
    // for waiters, as std::binary_semaphore's release() has.
    flag_.exchange(1, std::memory_order_release);
    flag_.notify_one();
  }

 private:
  std::atomic<uint32_t> flag_{0};
};

class AbslCondVarChannel final : public WakeChannel {
 public:
  void Wait() override {
    absl::MutexLock lock(&mu_);
    while (!ready_) cv_.Wait(&mu_);
    ready_ = false;
  }
  void Signal() override {
    absl::MutexLock lock(&mu_);
    ready_ = true;
    cv_.Signal();
  }

 private:
  absl::Mutex mu_;
  absl::CondVar cv_;
  bool ready_ = false;
};

class StdCondVarChannel final : public WakeChannel {
 public:
  void Wait() override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return ready_; });
    ready_ = false;
  }
  void Signal() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_ = true;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;
};

class SpinThenFutexChannel final : public WakeChannel {
 public:
  explicit SpinThenFutexChannel(int64_t spin_ns) : spin_ns_(spin_ns) {}
  void Wait() override {
    const int64_t spin_until = arch::MonotonicNowNs() + spin_ns_;
    while (state_.load(std::memory_order_acquire) != kSignaled &&
           arch::MonotonicNowNs() < spin_until) {
      arch::CpuRelax();
    }
    uint32_t expected = kEmpty;
    if (state_.compare_exchange_strong(expected, kWaiting,
                                       std::memory_order_acquire)) {
      while (state_.load(std::memory_order_acquire) == kWaiting) {
        arch::FutexWaitUntil(state_, kWaiting, arch::kNoDeadline,
                             arch::FutexScope::kPrivate);
      }
    }
    state_.store(kEmpty, std::memory_order_relaxed);
  }
  void Signal() override {
    if (state_.exchange(kSignaled, std::memory_order_release) == kWaiting) {
      arch::FutexWake(state_, 1, arch::FutexScope::kPrivate);
    }
  }

 private:
  enum : uint32_t { kEmpty, kWaiting, kSignaled };
  const int64_t spin_ns_;
  std::atomic<uint32_t> state_{kEmpty};
};

class TbbQueueChannel final : public WakeChannel {
 public:
  void Wait() override {
    int token;
    queue_.pop(token);
  }
  void Signal() override { queue_.push(1); }

 private:
  tbb::concurrent_bounded_queue<int> queue_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<WakeChannel>> MakeParkerChannel(
    const idle::IdleOptions& options) {
  auto channel = std::make_unique<ParkerChannel>(options);
  if (absl::Status s = channel->Init(); !s.ok()) return s;
  return channel;
}

std::unique_ptr<WakeChannel> MakeSemaphoreChannel() {
  return std::make_unique<SemaphoreChannel>();
}

std::unique_ptr<WakeChannel> MakeAtomicWaitChannel() {
  return std::make_unique<AtomicWaitChannel>();
}

std::unique_ptr<WakeChannel> MakeAbslCondVarChannel() {
  return std::make_unique<AbslCondVarChannel>();
}

std::unique_ptr<WakeChannel> MakeStdCondVarChannel() {
  return std::make_unique<StdCondVarChannel>();
}

std::unique_ptr<WakeChannel> MakeSpinThenFutexChannel(int64_t spin_ns) {
  return std::make_unique<SpinThenFutexChannel>(spin_ns);
}

std::unique_ptr<WakeChannel> MakeTbbQueueChannel() {
  return std::make_unique<TbbQueueChannel>();
}

}  // namespace haltpool::bench
