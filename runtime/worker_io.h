// One worker's I/O: its reactor, made on first use by the worker's tasks
// (ThreadPool::Io), the callbacks it runs between tasks, and the block state
// it lends the worker's parker while I/O is in flight (a block in the
// reactor, ended by the reactor's eventfd kick). The pool's wake protocol
// does not change: the parker still owns the handshake on the wake word.
// It counts how completions reached the worker: found by its poll, posted
// into the ring behind its back while it polled, or by ending a block.

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

// How completions reached one worker, and what its reactor had to do to
// lose none. A snapshot; see WorkerIo::counts().
struct WorkerIoCounts {
  uint64_t callbacks = 0;  // I/O callbacks run.
  uint64_t polled = 0;     // Polls the poll's own look ended (kByPoll).
  uint64_t posted = 0;     // Polls a CQE posted behind the worker's
                           // back ended (IoFound::kPosted).
  uint64_t woke = 0;       // Blocks in the reactor a completion ended.
  IoReactorStats reactor;  // As of the last ReapCompletions.
};

class WorkerIo {
 public:
  WorkerIo();
  ~WorkerIo();
  WorkerIo(const WorkerIo&) = delete;
  WorkerIo& operator=(const WorkerIo&) = delete;

  // Makes the reactor with `backend` and `options` the first time it is
  // called; later calls return the first call's result, and calls after
  // Close() FailedPrecondition. Setup: a few system calls the first time.
  // Only the owning worker's thread.
  absl::Status MakeOnce(IoBackend backend, const IoReactorOptions& options);

  // For a worker that stops: cancels what is in flight
  // (IoReactor::CancelInFlight) and runs every callback, with -ECANCELED
  // unless its operation completed first, until nothing is in flight.
  // Callbacks that keep starting operations (each refused at once) are
  // given up on after 2 s; Close() then drops what is left. Nothing to do
  // with no reactor or nothing in flight. Only the owning worker, not from a
  // callback.
  void CancelAndDrain();

  // For a stopping worker that cannot drain yet because a task on it waits
  // (ThreadPool::Wait), maybe for this worker's own I/O: cancels what is in
  // flight (IoReactor::CancelInFlight), once; Run() then runs the callbacks,
  // with -ECANCELED unless their operation completed first, and refuses
  // operations started afterwards. Nothing to do with no reactor or from a
  // callback. Only the owning worker.
  void CancelInFlight();

  // Destroys the reactor, cancelling what is in flight (see io_reactor.h),
  // on the owning worker's thread, as an io_uring ring set up for a single
  // issuer requires. counts(), backend() and note() stay readable.
  void Close();

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

  // What was counted so far. Any thread; relaxed loads, so the fields may
  // be a few events apart.
  WorkerIoCounts counts() const noexcept;

  // True once the reactor exists; then backend() and note() are final.
  // Any thread (acquire, pairs with MakeOnce's release).
  bool made() const noexcept { return made_.load(std::memory_order_acquire); }
  // "io_uring" or "epoll". Only after made().
  const std::string& backend() const noexcept { return backend_; }
  // Why that backend (MakeIoReactor's chosen_reason). Only after made().
  const std::string& note() const noexcept { return note_; }
  // How it was set up (IoReactor::setup()). Only after made().
  const std::string& setup() const noexcept { return setup_; }

 private:
  class ReactorWait;

  // Adds `n` to a counter only the owner writes.
  static void Add(std::atomic<uint64_t>& counter, uint64_t n) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + n,
                  std::memory_order_relaxed);
  }
  // Copies the reactor's counters where counts() reads them.
  void PublishReactorStats() noexcept;

  std::unique_ptr<IoReactor> reactor_;
  std::unique_ptr<ReactorWait> wait_;  // Over reactor_.
  absl::Status error_;  // Why reactor_ could not be made, once tried.
  bool closed_ = false;
  bool cancelled_ = false;  // CancelInFlight() cancelled the reactor.
  std::atomic<uint64_t> callbacks_{0};
  std::atomic<uint64_t> polled_{0};
  std::atomic<uint64_t> posted_{0};
  std::atomic<uint64_t> woke_{0};
  std::atomic<uint64_t> cq_overflows_{0};
  std::atomic<uint64_t> cqes_dropped_{0};
  std::atomic<uint64_t> retries_{0};
  std::string backend_;  // Written once by the worker; read after made_.
  std::string note_;
  std::string setup_;
  std::atomic<bool> made_{false};
  uint32_t tasks_since_check_ = 0;  // Tasks run since I/O was last reaped.
  bool in_callbacks_ = false;       // Inside ReapCompletions (not reentrant).
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_WORKER_IO_H_
