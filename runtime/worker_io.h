// One worker's I/O: its reactor, made on first use by the worker's tasks
// (ThreadPool::Io), the callbacks it runs between tasks, and the block state
// it lends the worker's parker while I/O is in flight (a block in the
// reactor, ended by the reactor's eventfd kick). The pool's wake protocol
// does not change: the parker still owns the handshake on the wake word.

#ifndef HALTPOOL_RUNTIME_WORKER_IO_H_
#define HALTPOOL_RUNTIME_WORKER_IO_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "idle/external_wait.h"
#include "runtime/io/io_backend.h"
#include "runtime/io/io_reactor.h"

namespace haltpool {

class WorkerIo {
 public:
  WorkerIo() = default;
  WorkerIo(const WorkerIo&) = delete;
  WorkerIo& operator=(const WorkerIo&) = delete;

  // Makes the reactor with `backend` the first time it is called; later
  // calls return the first call's result. Setup: a few system calls the
  // first time. Only the owning worker's thread.
  absl::Status MakeOnce(IoBackend backend);

  // The reactor, or null until MakeOnce succeeded. Only the owning worker.
  IoReactor* reactor() const noexcept { return reactor_.get(); }

  // Counts one task run and returns true every kTasksPerIoCheck-th time:
  // then the worker asks its reactor even when nothing is visibly ready.
  // Only the owning worker.
  bool CheckDue() noexcept;

  // Runs ready I/O callbacks; true if any ran. `reap_idle` also asks the
  // kernel when nothing is known to be ready (epoll's readiness). Returns
  // false at once with no reactor, nothing in flight, or when called from
  // inside a callback (callbacks never nest). Only the owning worker.
  bool Run(bool reap_idle);

  // The block state for the worker's parker while I/O is in flight (a
  // block in the reactor that a waker ends with the eventfd kick), else
  // null: then the parker blocks in FUTEX_WAIT. Only the owning worker.
  idle::ExternalWait* WaitWhileInFlight() const noexcept;

  // True if a poll can watch the reactor's completions without a system
  // call (io_uring's completion queue; not epoll's readiness). Only while
  // WaitWhileInFlight() is not null.
  bool completions_pollable() const noexcept {
    return reactor_->completions_pollable();
  }

  // Callbacks run so far. Any thread, relaxed.
  uint64_t callbacks() const noexcept {
    return callbacks_.load(std::memory_order_relaxed);
  }

  // True once the reactor exists; then backend() and note() are final.
  // Any thread (acquire, pairs with MakeOnce's release).
  bool made() const noexcept { return made_.load(std::memory_order_acquire); }
  // "io_uring" or "epoll". Only after made().
  const std::string& backend() const noexcept { return backend_; }
  // Why that backend (MakeIoReactor's chosen_reason). Only after made().
  const std::string& note() const noexcept { return note_; }

 private:
  std::unique_ptr<IoReactor> reactor_;
  std::unique_ptr<idle::ExternalWait> wait_;  // Over reactor_.
  absl::Status error_;  // Why reactor_ could not be made, once tried.
  std::atomic<uint64_t> callbacks_{0};
  std::string backend_;  // Written once by the worker; read after made_.
  std::string note_;
  std::atomic<bool> made_{false};
  uint32_t tasks_since_check_ = 0;  // Tasks run since I/O was last reaped.
  bool in_callbacks_ = false;       // Inside ReapCompletions (not reentrant).
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_WORKER_IO_H_
