#include "runtime/worker_io.h"

#include <utility>

#include "absl/status/statusor.h"

namespace haltpool {
namespace {

// Tasks a worker runs between two looks at its I/O when it always has work:
// Tokio's event_interval (61) in spirit; a power of two near it.
constexpr uint32_t kTasksPerIoCheck = 64;

// The parker's block state for a worker with I/O in flight: its reactor.
class ReactorWait final : public idle::ExternalWait {
 public:
  explicit ReactorWait(IoReactor* io) : io_(io) {}
  bool Ready() const noexcept override { return io_->CompletionReady(); }
  bool Block(int64_t until_ns) noexcept override {
    return io_->WaitUntil(until_ns);
  }
  void Kick() noexcept override { io_->Wake(); }

 private:
  IoReactor* io_;
};

}  // namespace

absl::Status WorkerIo::MakeOnce(IoBackend backend) {
  if (!made_.load(std::memory_order_relaxed) && error_.ok()) {
    absl::StatusOr<std::unique_ptr<IoReactor>> io =
        MakeIoReactor(backend, &note_);
    if (!io.ok()) {
      error_ = io.status();
    } else {
      reactor_ = *std::move(io);
      backend_ = std::string(reactor_->name());
      wait_ = std::make_unique<ReactorWait>(reactor_.get());
      made_.store(true, std::memory_order_release);
    }
  }
  return error_;
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
  if (ran <= 0) return false;
  callbacks_.store(callbacks_.load(std::memory_order_relaxed) + ran,
                   std::memory_order_relaxed);
  return true;
}

idle::ExternalWait* WorkerIo::WaitWhileInFlight() const noexcept {
  return reactor_ != nullptr && reactor_->in_flight() != 0 && !in_callbacks_
             ? wait_.get()
             : nullptr;
}

}  // namespace haltpool
