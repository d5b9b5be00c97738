// The per-worker I/O reactor: the interface a worker thread uses to start
// socket, file and timer operations and to run their callbacks once they
// complete, and to sleep until one does. Two backends implement it: io_uring
// (uring_reactor.h) and an epoll readiness emulation (epoll_reactor.h);
// io_backend.h chooses between them. An I/O worker's block state waits in
// WaitUntil() instead of FUTEX_WAIT (docs/DESIGN.md, "Idle states").
//
// Threading: a reactor belongs to one worker thread, its owner. Every method
// except Wake() is called only by the owner, never concurrently; the reactor
// may be created on another thread and handed over before first use.
//
// Operations: each Start method (Accept ... Timeout) begins one operation and
// never blocks. Its callback runs exactly once, later, on the owner, from
// ReapCompletions(): never from inside the Start call, so a callback may
// start further operations (they complete in a later ReapCompletions()).
// The result passed to the callback is what the system call would return:
// a byte count, a new fd, 0, or -errno. Callbacks must not throw.
// Buffers passed to Recv, Send, Read and Write must stay valid until their
// callback runs; the address passed to Connect is copied.
// CancelInFlight() ends every operation early and still runs each callback
// (with -ECANCELED); a worker that stops calls it, so nothing that waits on
// a callback (a coroutine frame, a connection object) is left hanging.
// Destroying a reactor cancels every operation still in flight; their
// callbacks are destroyed without being run, and once the destructor returns
// the kernel no longer touches their buffers.
//
// Cost: a Start call allocates nothing once the reactor has had as many
// operations in flight before (records are kept on a free list), provided
// the callback fits AnyInvocable's inline storage (a few pointers); a larger
// callback allocates when the caller builds the IoCallback, not here.

#ifndef HALTPOOL_RUNTIME_IO_IO_REACTOR_H_
#define HALTPOOL_RUNTIME_IO_IO_REACTOR_H_

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "arch/named_enum.h"

namespace haltpool {

// Runs once with the operation's result: bytes, a new fd, or 0 on success;
// -errno on failure.
using IoCallback = absl::AnyInvocable<void(int result)>;

// How the kernel tells an io_uring reactor's owner that completions wait
// (io_uring_setup's task-run flags). A completion is posted to the ring by
// task work that runs in the owner's thread; this chooses how the kernel
// gets the owner to run it.
enum class IoTaskRun {
  // No flags (TWA_SIGNAL): the kernel interrupts the owner at once, an IPI
  // when the owner runs on another CPU, even while it polls the ring.
  kInterrupt,
  // IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG (Linux 5.19): the
  // kernel wakes a sleeping owner but never interrupts a running one; it
  // sets IORING_SQ_TASKRUN in the ring's flags instead, and the owner runs
  // the task work when it next enters the kernel. The I/O twin of the wake
  // word's kPolling.
  kCoop,
  // IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
  // IORING_SETUP_TASKRUN_FLAG (Linux 6.1): as kCoop, and the task work runs
  // only when the owner asks for completions; a sleeping owner is woken only
  // once a completion it waits for is there. Every call on the ring must
  // come from the thread that created it, destruction included.
  kDefer,
};

inline constexpr arch::NamedEnum<IoTaskRun, 3> kIoTaskRuns({{
    {IoTaskRun::kInterrupt, "interrupt"},
    {IoTaskRun::kCoop, "coop"},
    {IoTaskRun::kDefer, "defer"},
}});

// How a reactor is built. Plain values; the runtime's options code fills
// them, tests set them directly.
struct IoReactorOptions {
  // Submission queue entries of an io_uring reactor; the kernel rounds up to
  // a power of two and gives the completion queue twice as many. A guess: a
  // worker rarely starts more than a few hundred operations between two
  // ReapCompletions() calls, and a full queue costs one extra io_uring_enter,
  // never an operation; a completion queue that overflows costs a system
  // call to flush, never a completion (IORING_FEAT_NODROP). At most 32768
  // (the kernel's IORING_MAX_ENTRIES). The epoll backend ignores it.
  unsigned entries = 256;

  // How the kernel hands completions to the owner; see IoTaskRun. A kernel
  // that refuses the flags (EINVAL) gets the next milder choice, kDefer then
  // kCoop then kInterrupt, and setup() says so. The epoll backend ignores
  // it.
  IoTaskRun task_run = IoTaskRun::kCoop;

  // Test hook: when nonzero, setting up io_uring fails as if
  // io_uring_queue_init had returned -fake_uring_setup_errno (ENOSYS as under
  // qemu-user, EPERM as under a container's seccomp filter), without calling
  // it. 0: the real system call.
  int fake_uring_setup_errno = 0;

  // Test hook: io_uring_setup flags the kernel is made to refuse with
  // EINVAL, as a kernel too old for them would. 0: none.
  unsigned fake_refused_setup_flags = 0;
};

// What one look at a reactor for the poll state found (IoReactor::Poll).
enum class IoFound {
  kNothing,
  // The look itself found it: io_uring's task-run flag or an overflow the
  // kernel left for the owner to collect, epoll readiness from
  // epoll_wait(0), or an operation that finished in its Start call. No
  // interrupt.
  kByPoll,
  // A completion was posted into io_uring's ring behind the owner's back,
  // while it ran in user space: the kernel ran the task work on one of the
  // owner's returns from the kernel. Without task-run flags that is an
  // interrupt sent for it (an IPI when the completion came from another
  // CPU); with them, a timer tick, or the owner's return after another
  // thread preempted it (no IPI).
  kPosted,
};

// Counters of what a reactor had to do to lose nothing. Owner only.
struct IoReactorStats {
  // System calls that flushed completions the kernel had kept because the
  // completion queue was full (IORING_FEAT_NODROP); one flush may move many
  // completions. io_uring only.
  uint64_t cq_overflows = 0;
  // Completions the kernel dropped (the ring's overflow counter); 0 on
  // kernels with IORING_FEAT_NODROP. io_uring only.
  uint64_t cqes_dropped = 0;
  // Tries again. io_uring: an operation that found the submission queue
  // full (the queue is submitted early to make room, or the operation kept
  // back until there is), or a submit the kernel refused for lack of room
  // (EBUSY, EAGAIN). epoll: an operation retried once its fd was reported
  // ready.
  uint64_t retries = 0;
};

class IoReactor {
 public:
  virtual ~IoReactor() = default;

  // "io_uring" or "epoll". Any thread.
  virtual absl::string_view name() const = 0;

  // Accepts one connection on the listening socket `listen_fd`. Result: the
  // new fd (SOCK_CLOEXEC, blocking mode) or -errno. The epoll backend puts
  // `listen_fd` into O_NONBLOCK mode (one fcntl per call).
  virtual void Accept(int listen_fd, IoCallback cb) = 0;

  // Connects socket `fd` to `addr` (copied; at most sizeof(sockaddr_storage)
  // bytes, else -EINVAL). Result 0 or -errno. The epoll backend puts `fd`
  // into O_NONBLOCK mode.
  virtual void Connect(int fd, const sockaddr* addr, socklen_t len,
                       IoCallback cb) = 0;

  // recv(2) of at most `len` bytes into `buf`, waiting until some arrive.
  // Result: bytes received, 0 at end of stream, or -errno.
  virtual void Recv(int fd, void* buf, size_t len, IoCallback cb) = 0;

  // send(2) with MSG_NOSIGNAL of at most `len` bytes, waiting for buffer
  // space. Result: bytes sent, which may be fewer than `len` (the caller
  // sends the rest), or -errno (-EPIPE, never SIGPIPE).
  virtual void Send(int fd, const void* buf, size_t len, IoCallback cb) = 0;

  // pread(2) of at most `len` bytes at `offset`; offset < 0 reads at the
  // file's current position and advances it, as read(2). Result: bytes read
  // (0 at end of file) or -errno. For regular files and block devices: the
  // epoll backend performs the read inside this call (it may block on the
  // disk) and reports it from the next ReapCompletions().
  virtual void Read(int fd, void* buf, size_t len, int64_t offset,
                    IoCallback cb) = 0;

  // pwrite(2), as Read. Result: bytes written or -errno.
  virtual void Write(int fd, const void* buf, size_t len, int64_t offset,
                     IoCallback cb) = 0;

  // Completes with result 0 once CLOCK_MONOTONIC has advanced `duration_ns`
  // (<= 0: at once) past this call; never earlier, later by the backend's
  // timer slack and by how late the owner reaps.
  virtual void Timeout(int64_t duration_ns, IoCallback cb) = 0;

  // Operations started whose callbacks have not run yet. Owner only.
  virtual size_t in_flight() const = 0;

  // Runs the callbacks of the operations that have completed, without
  // blocking, and returns how many ran. A callback never runs nested inside
  // another; operations that callbacks start complete in a later call (or,
  // with io_uring, in this one if a full queue made it submit them early).
  // io_uring: submits the queued operations if there are any (one
  // io_uring_enter), then reads the completion ring without a system call
  // (unless the kernel holds overflowed completions). epoll: one epoll_wait
  // with timeout 0 if an operation waits for readiness, none otherwise.
  // Owner only; not reentrant (not from a callback).
  virtual int ReapCompletions() noexcept = 0;

  // True if ReapCompletions() has something to do without waiting, checked
  // without a system call. io_uring: the completion ring is not empty (a
  // Wake() alone may make it true), or the kernel holds completions for the
  // owner to collect (the task-run or overflow flag). epoll: an operation
  // has finished already (Read, Write, a socket call that did not have to
  // wait) or a timeout is due; readiness of file descriptors cannot be seen
  // without epoll_wait, so false does not mean that nothing is ready. Owner
  // only.
  virtual bool CompletionReady() const noexcept = 0;

  // One look for completions, for a waiter's poll state, which calls it over
  // and over: what CompletionReady() sees, and for epoll one system call
  // while an operation waits for readiness: the recv of the reader parked
  // last (MSG_DONTWAIT), or, one look in eight, epoll_wait with timeout 0
  // (the fds it finds ready are retried). Operations found done finish, but
  // no callback runs. io_uring: a few loads, no system call. Owner only.
  virtual IoFound Poll() noexcept = 0;

  // What the reactor had to do to lose nothing so far. Owner only.
  virtual IoReactorStats stats() const noexcept = 0;

  // How the reactor was set up, for the statistics: io_uring's task-run
  // mode and the kernel flags it got ("coop (COOP_TASKRUN|TASKRUN_FLAG)"),
  // with the refusal that made it fall back, if any; "readiness" for epoll.
  // Any thread; fixed at creation.
  virtual absl::string_view setup() const = 0;

  // Sends queued operations to the kernel, then blocks until a completion
  // is ready (it does not run callbacks), Wake() is called, or
  // CLOCK_MONOTONIC reaches `deadline_ns` (INT64_MAX, arch::kNoDeadline: no
  // limit). Returns true if a completion or Wake() ended it, false at the
  // deadline. Returns true at once if a completion is already ready or a Wake()
  // came since the previous WaitUntil took its wakes; wakes coalesce, so one
  // return may answer several Wake() calls. Signals are absorbed. Owner
  // only.
  virtual bool WaitUntil(int64_t deadline_ns) noexcept = 0;

  // Asks that every operation in flight end now, for a worker that stops:
  // each callback still runs once, from a later ReapCompletions(), with
  // -ECANCELED, or with the operation's own result if it completed first.
  // Operations started afterwards complete with -ECANCELED without reaching
  // the kernel. io_uring: one cancel request per operation in the kernel
  // (IORING_OP_ASYNC_CANCEL); epoll: the parked operations and timeouts
  // finish at once. Owner only; not from a callback.
  virtual void CancelInFlight() noexcept = 0;

  // Ends the owner's WaitUntil in progress, or else its next one. Any
  // thread, any number at once (wakes coalesce); one write(2) to an eventfd.
  // Release ordering: what the caller wrote before is visible to the owner
  // after WaitUntil returns. The reactor must outlive every Wake() call.
  virtual void Wake() noexcept = 0;
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_IO_IO_REACTOR_H_
