// AsioContext's out-of-line half: queueing functions on the pool, counting
// outstanding work, join and the orderly end.

#include "runtime/asio/asio_executor.h"

#include <utility>

#include "absl/status/status.h"

namespace haltpool {
// So a function that throws still counts as finished.
class AsioContext::WorkDone {
 public:
  explicit WorkDone(AsioContext* context) : context_(context) {}
  ~WorkDone() { context_->WorkFinished(); }
  WorkDone(const WorkDone&) = delete;
  WorkDone& operator=(const WorkDone&) = delete;

 private:
  AsioContext* context_;
};

AsioContext::~AsioContext() {
  // Stops asio's internal reactor thread and destroys the operations still
  // pending, so no new function reaches the pool from asio; then lets the
  // ones already queued finish before the services they use go away.
  shutdown();
  pool_.Wait(handlers_);
  destroy();
}

void AsioContext::WorkFinished() noexcept {
  int64_t n = outstanding_.load(std::memory_order_relaxed);
  while (n > 1) {
    if (outstanding_.compare_exchange_weak(n, n - 1,
                                           std::memory_order_acq_rel)) {
      return;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    no_work_.notify_all();
  }
}

void AsioContext::join() {
  std::unique_lock<std::mutex> lock(mu_);
  no_work_.wait(lock, [this] {
    return outstanding_.load(std::memory_order_acquire) == 0;
  });
}

void AsioContext::Post(asio_internal::HandlerNode* node) {
  WorkStarted();
  // Two pointers: TaskFn holds them inline, so queueing allocates nothing
  // beyond the node.
  absl::Status queued = pool_.Submit(handlers_, [this, node] {
    WorkDone done(this);
    node->run(node);
  });
  if (queued.ok()) return;
  // The pool has shut down and destroyed the task unrun; the node is still
  // ours. Run it here rather than lose it.
  run_by_caller_.fetch_add(1, std::memory_order_relaxed);
  WorkDone done(this);
  node->run(node);
}

}  // namespace haltpool
