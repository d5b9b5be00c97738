#include "runtime/worker_io.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "arch/cycle_clock.h"

namespace haltpool {
namespace {

// Tasks a worker runs between two looks at its I/O when it always has work:
// Tokio's event_interval (61) in spirit; a power of two near it.
constexpr uint32_t kTasksPerIoCheck = 64;

// How long a stopping worker keeps running the callbacks of cancelled
// operations: a kernel cancel takes microseconds, so only callbacks that
// start new operations over and over (each refused at once) keep it going
// this long; what is still in flight then is dropped (Close).
constexpr int64_t kDrainLimitNs = 2'000'000'000;
// The longest single wait in the reactor while draining.
constexpr int64_t kDrainWaitNs = 10'000'000;

}  // namespace

// The parker's block state for a worker with I/O in flight: its reactor.
// Counts how each completion reached the worker.
class WorkerIo::ReactorWait final : public idle::ExternalWait {
 public:
  ReactorWait(IoReactor* io, WorkerIo* counts) : io_(io), counts_(counts) {}

  bool Ready() noexcept override {
    switch (io_->Poll()) {
      case IoFound::kNothing:
        return false;
      case IoFound::kByPoll:
        Add(counts_->polled_, 1);
        return true;
      case IoFound::kPosted:
        Add(counts_->posted_, 1);
        return true;
    }
    return true;
  }

  bool Block(int64_t until_ns) noexcept override {
    const bool ended = io_->WaitUntil(until_ns);
    if (ended && io_->CompletionReady()) Add(counts_->woke_, 1);
    return ended;
  }

  void Kick() noexcept override { io_->Wake(); }

 private:
  IoReactor* io_;
  WorkerIo* counts_;
};

WorkerIo::WorkerIo() = default;
WorkerIo::~WorkerIo() = default;

absl::Status WorkerIo::MakeOnce(IoBackend backend,
                                const IoReactorOptions& options) {
  if (closed_) {
    return absl::FailedPreconditionError(
        "the worker's I/O is closed: the pool is shutting down");
  }
  if (!made_.load(std::memory_order_relaxed) && error_.ok()) {
    absl::StatusOr<std::unique_ptr<IoReactor>> io =
        MakeIoReactor(backend, &note_, options);
    if (!io.ok()) {
      error_ = io.status();
    } else {
      reactor_ = *std::move(io);
      backend_ = std::string(reactor_->name());
      setup_ = std::string(reactor_->setup());
      wait_ = std::make_unique<ReactorWait>(reactor_.get(), this);
      made_.store(true, std::memory_order_release);
    }
  }
  return error_;
}

void WorkerIo::Close() {
  closed_ = true;
  wait_.reset();
  reactor_.reset();
}

void WorkerIo::CancelAndDrain() {
  if (reactor_ == nullptr || in_callbacks_ || reactor_->in_flight() == 0) {
    return;
  }
  reactor_->CancelInFlight();
  const int64_t give_up = arch::MonotonicNowNs() + kDrainLimitNs;
  for (;;) {
    Run(/*reap_idle=*/true);
    if (reactor_->in_flight() == 0) return;
    const int64_t now = arch::MonotonicNowNs();
    if (now >= give_up) return;
    if (!reactor_->WaitUntil(std::min(give_up, now + kDrainWaitNs))) {
      // Nothing came for a while: ask again, in case a cancel request found
      // no room in the ring (a kernel refusing submits). A cancel that
      // misses is harmless.
      reactor_->CancelInFlight();
    }
  }
}

void WorkerIo::CancelInFlight() {
  // Once is enough: the reactor refuses every operation started afterwards.
  if (reactor_ == nullptr || in_callbacks_ || cancelled_) return;
  cancelled_ = true;
  reactor_->CancelInFlight();
}

bool WorkerIo::CheckDue() noexcept {
  if (++tasks_since_check_ < kTasksPerIoCheck) return false;
  tasks_since_check_ = 0;
  return true;
}

bool WorkerIo::Run(bool reap_idle) {
  if (reactor_ == nullptr || reactor_->in_flight() == 0 || in_callbacks_) {
    return false;
  }
  if (!reap_idle && !reactor_->CompletionReady()) return false;
  in_callbacks_ = true;
  const int ran = reactor_->ReapCompletions();
  in_callbacks_ = false;
  PublishReactorStats();
  if (ran <= 0) return false;
  Add(callbacks_, static_cast<uint64_t>(ran));
  return true;
}

void WorkerIo::PublishReactorStats() noexcept {
  const IoReactorStats s = reactor_->stats();
  cq_overflows_.store(s.cq_overflows, std::memory_order_relaxed);
  cqes_dropped_.store(s.cqes_dropped, std::memory_order_relaxed);
  retries_.store(s.retries, std::memory_order_relaxed);
}

WorkerIoCounts WorkerIo::counts() const noexcept {
  WorkerIoCounts c;
  c.callbacks = callbacks_.load(std::memory_order_relaxed);
  c.polled = polled_.load(std::memory_order_relaxed);
  c.posted = posted_.load(std::memory_order_relaxed);
  c.woke = woke_.load(std::memory_order_relaxed);
  c.reactor.cq_overflows = cq_overflows_.load(std::memory_order_relaxed);
  c.reactor.cqes_dropped = cqes_dropped_.load(std::memory_order_relaxed);
  c.reactor.retries = retries_.load(std::memory_order_relaxed);
  return c;
}

idle::ExternalWait* WorkerIo::WaitWhileInFlight() const noexcept {
  return reactor_ != nullptr && reactor_->in_flight() != 0 && !in_callbacks_
             ? wait_.get()
             : nullptr;
}

}  // namespace haltpool
