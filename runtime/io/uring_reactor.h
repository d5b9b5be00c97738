// The io_uring backend of IoReactor (liburing). Each operation is one SQE
// whose user_data points at an operation record holding the callback; the
// records live on a free list, so a steady state allocates nothing. SQEs are
// queued by the Start methods and sent to the kernel by ReapCompletions() or
// WaitUntil() (or at once when the submission queue is full, so no operation
// is ever dropped). Wake() writes an eventfd that an IORING_OP_POLL_ADD on the
// ring watches, so it ends io_uring_submit_and_wait_timeout. The ring is set
// up with the task-run mode asked for (IoTaskRun): by default the kernel
// leaves a flag in the ring for a polling owner instead of interrupting it,
// so Poll() sees a completion as soon as the kernel has it, with no IPI.

#ifndef HALTPOOL_RUNTIME_IO_URING_REACTOR_H_
#define HALTPOOL_RUNTIME_IO_URING_REACTOR_H_

#include <liburing.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/io/event_waker.h"
#include "runtime/io/io_reactor.h"
#include "runtime/io/op_pool.h"

namespace haltpool {

class UringReactor final : public IoReactor {
 public:
  // Sets up a ring of `options.entries` SQEs with `options.task_run`'s flags
  // (falling back to milder ones where the kernel refuses them with EINVAL)
  // and the eventfd for Wake(), and checks that the kernel has every opcode
  // used (Linux 5.6 or later). With IoTaskRun::kDefer, the calling thread
  // becomes the owner and must also destroy the reactor.
  // Errors, with messages naming the call and the errno text ("io_uring_setup
  // failed: Function not implemented"): kUnimplemented for ENOSYS (no
  // io_uring: an old kernel, qemu-user) or a missing opcode;
  // kPermissionDenied for EPERM or EACCES (seccomp, io_uring_disabled);
  // absl::ErrnoToStatus's code otherwise (ENOMEM: RLIMIT_MEMLOCK on kernels
  // before 5.12). Setup: any thread, a few system calls.
  static absl::StatusOr<std::unique_ptr<UringReactor>> Create(
      const IoReactorOptions& options);

  // Cancels what is in flight and waits (up to a few seconds) for the kernel
  // to finish with it; see io_reactor.h. Owner only.
  ~UringReactor() override;

  UringReactor(const UringReactor&) = delete;
  UringReactor& operator=(const UringReactor&) = delete;

  // IoReactor, with the contracts in io_reactor.h.
  absl::string_view name() const override { return "io_uring"; }
  void Accept(int listen_fd, IoCallback cb) override;
  void Connect(int fd, const sockaddr* addr, socklen_t len,
               IoCallback cb) override;
  void Recv(int fd, void* buf, size_t len, IoCallback cb) override;
  void Send(int fd, const void* buf, size_t len, IoCallback cb) override;
  void Read(int fd, void* buf, size_t len, int64_t offset,
            IoCallback cb) override;
  void Write(int fd, const void* buf, size_t len, int64_t offset,
             IoCallback cb) override;
  void Timeout(int64_t duration_ns, IoCallback cb) override;
  size_t in_flight() const override { return in_flight_; }
  int ReapCompletions() noexcept override;
  bool CompletionReady() const noexcept override;
  IoFound Poll() noexcept override;
  IoReactorStats stats() const noexcept override;
  absl::string_view setup() const override { return setup_; }
  bool WaitUntil(int64_t deadline_ns) noexcept override;
  void Wake() noexcept override;
  void CancelInFlight() noexcept override;

  // The submission and completion queue sizes the kernel granted. Any
  // thread; no system call.
  unsigned sq_entries() const noexcept {
    return io_uring_sq_space_left(&ring_) + io_uring_sq_ready(&ring_);
  }
  unsigned cq_entries() const noexcept { return ring_.cq.ring_entries; }

  // The task-run mode the kernel accepted (the one asked for, or a milder
  // one it fell back to). Any thread.
  IoTaskRun task_run() const noexcept { return task_run_; }

 private:
  struct Op;

  UringReactor() = default;

  // io_uring_queue_init with the flags of `options.task_run`, falling back
  // to milder modes on EINVAL; sets task_run_ and setup_. 0 or -errno.
  int SetUpRing(const IoReactorOptions& options) noexcept;
  // The ring's flags word (IORING_SQ_TASKRUN, IORING_SQ_CQ_OVERFLOW), as
  // the kernel last wrote it.
  unsigned RingFlags() const noexcept;
  // Counts an overflow flush if the ring's flags say the kernel holds
  // completions that did not fit: call it before any liburing call that
  // enters the kernel with IORING_ENTER_GETEVENTS, which flushes them.
  void NoteOverflowFlush() noexcept;
  // Has the kernel run pending task work and flush overflowed completions
  // into the ring if its flags say there are any (one io_uring_enter).
  void CollectFromKernel() noexcept;

  // A record for a new operation of `cb`, counted in flight.
  Op* NewOp(IoCallback cb);
  // Queues `op` as an SQE, or on the backlog if the SQ stays full.
  void Push(Op* op) noexcept;
  // Fills `sqe` for `op`.
  void Prep(io_uring_sqe* sqe, Op* op) noexcept;
  // An SQE, submitting once to make room if the SQ is full; null if even
  // that found no room.
  io_uring_sqe* GetSqe() noexcept;
  // Moves backlogged operations into the SQ and arms the wake poll if due.
  void FlushBacklog() noexcept;
  // One io_uring_submit if SQEs are queued.
  void SubmitPending() noexcept;
  // After any submit: forgets the SQEs the kernel took (io_uring_sq_ready
  // counts those it left). `helper_timeout` if the call was one of
  // liburing's waits with a timeout, which on kernels without
  // IORING_FEAT_EXT_ARG queues a timeout SQE of its own after ours.
  void NoteSubmitted(bool helper_timeout = false) noexcept;
  // Takes wake CQEs at the head of the completion ring.
  void TakeWakeCqes() noexcept;
  // Runs the callback of a completed `op` and recycles the record.
  void Complete(Op* op, int result) noexcept;
  // Recycles `op` and destroys its callback without running it.
  void Drop(Op* op) noexcept;
  // The destructor's part: stops every operation and waits for the kernel.
  void CancelAll() noexcept;
  // Makes `op` complete with -ECANCELED through a NOP (after
  // CancelInFlight).
  static void Refuse(Op& op) noexcept;

  io_uring ring_{};
  bool ring_ready_ = false;
  IoTaskRun task_run_ = IoTaskRun::kInterrupt;
  std::string setup_;
  IoReactorStats stats_;
  EventWaker waker_;
  bool cancelling_ = false;    // CancelInFlight was called.
  bool wake_armed_ = false;    // A POLL_ADD on waker_ is queued or in flight.
  bool wake_pending_ = false;  // Its CQE came; WaitUntil has not taken it.
  size_t in_flight_ = 0;
  OpPool<Op> ops_;
  OpList<Op> backlog_;  // Started, not yet in the SQ (it was full).
  // The SQEs taken since the last submit, in ring order: what CancelAll
  // turns into NOPs. Never more than the SQ holds; reserved at Create.
  std::vector<io_uring_sqe*> unsubmitted_;
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_IO_URING_REACTOR_H_
