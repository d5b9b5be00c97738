// The epoll backend of IoReactor: io_uring's completion model emulated with
// readiness. A socket operation first tries its system call without waiting
// (accept4, recv and send with MSG_DONTWAIT, a non-blocking connect); only on
// EAGAIN (EINPROGRESS for connect) does it queue on its fd, which is armed in
// the epoll set with EPOLLONESHOT for the directions someone waits for, and
// is retried, in order, when epoll reports the fd ready. Files are read and
// written with pread/pwrite inside the Start call. Timeouts sit in a min-heap
// that bounds epoll_wait. Wake() writes an eventfd in the epoll set. A
// polling owner's Poll() retries the reader parked last with MSG_DONTWAIT,
// and every few looks asks epoll_wait with timeout 0 about the rest.
//
// For machines without io_uring: kernels before 5.6, qemu-user, containers
// whose seccomp filter blocks io_uring_setup.

#ifndef HALTPOOL_RUNTIME_IO_EPOLL_REACTOR_H_
#define HALTPOOL_RUNTIME_IO_EPOLL_REACTOR_H_

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/io/event_waker.h"
#include "runtime/io/io_reactor.h"
#include "runtime/io/op_pool.h"

namespace haltpool {

class EpollReactor final : public IoReactor {
 public:
  // Creates the epoll set and the eventfd for Wake(). Errors are
  // absl::ErrnoToStatus of the failing call (EMFILE: kResourceExhausted).
  // Setup: any thread, three system calls.
  static absl::StatusOr<std::unique_ptr<EpollReactor>> Create();

  // Drops what is in flight (callbacks destroyed, not run); the kernel holds
  // no reference to a caller's buffer. Owner only.
  ~EpollReactor() override;

  EpollReactor(const EpollReactor&) = delete;
  EpollReactor& operator=(const EpollReactor&) = delete;

  // IoReactor, with the contracts in io_reactor.h.
  absl::string_view name() const override { return "epoll"; }
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
  IoReactorStats stats() const noexcept override { return stats_; }
  absl::string_view setup() const override { return "readiness"; }
  bool WaitUntil(int64_t deadline_ns) noexcept override;
  void Wake() noexcept override;
  void CancelInFlight() noexcept override;

 private:
  struct Op;

  // Operations in FIFO order, linked through Op::next.
  using OpList = ::haltpool::OpList<Op>;

  // The operations waiting for one fd to become ready.
  struct FdWaiters {
    OpList readers;           // Accept, Recv: wait for EPOLLIN.
    OpList writers;           // Connect, Send: wait for EPOLLOUT.
    uint32_t armed = 0;       // Events armed (EPOLLONESHOT) and not yet fired.
    bool registered = false;  // The fd is (probably) in the epoll set.
  };

  EpollReactor() = default;

  // A record for a new operation of `cb`, counted in flight.
  Op* NewOp(IoCallback cb);
  // After CancelInFlight: finishes `op` with -ECANCELED and returns true.
  bool Refused(Op* op) noexcept;
  // Records `result` for `op`; its callback runs in the next Reap.
  void Finish(Op* op, int result) noexcept;
  // Returns `op`'s record to the free list, destroying its callback.
  void Release(Op* op) noexcept;
  // The socket system call of `op` without waiting: its result, or -EAGAIN
  // if it would have to wait.
  static int TryOp(const Op& op) noexcept;
  // Starts a socket operation: try it, else queue it on its fd.
  void StartSocketOp(Op* op, bool write) noexcept;
  // Queues `op` (which could not complete yet) on its fd and arms it.
  void Park(Op* op, bool write) noexcept;
  // The waiters of `fd`, growing the table if needed.
  FdWaiters& Waiters(int fd);
  // Arms `fd` for the directions it has waiters for; 0 or -errno.
  int Arm(int fd, FdWaiters& w) noexcept;
  // Completes every waiter of `fd` with `result`.
  void FailAll(FdWaiters& w, int result) noexcept;
  // Retries the waiters of `list` in order until one would block.
  void Retry(OpList& list) noexcept;
  // Handles epoll's report that `fd` is ready for `events`.
  void OnReady(int fd, uint32_t events) noexcept;
  // One epoll_wait of at most `timeout_ns` (< 0: none). Returns true if the
  // eventfd was ready, draining it only if `take_wake`.
  bool Epoll(int64_t timeout_ns, bool take_wake) noexcept;
  // Moves due timeouts to the ready list.
  void ExpireTimers(int64_t now_ns) noexcept;

  int epoll_fd_ = -1;
  EventWaker waker_;         // In the epoll set, level-triggered.
  bool have_pwait2_ = true;  // epoll_pwait2 (Linux 5.11) not yet ENOSYS.
  bool cancelling_ = false;  // CancelInFlight was called.
  size_t in_flight_ = 0;
  int hot_reader_fd_ = -1;      // The fd of the reader parked last.
  uint32_t polls_ = 0;          // Looks by Poll(), to pace its epoll_wait.
  size_t parked_ = 0;           // Operations waiting in fds_.
  OpList ready_;                // Completed, callbacks not yet run.
  std::vector<FdWaiters> fds_;  // Indexed by fd.
  // Timeouts: (absolute CLOCK_MONOTONIC deadline, op), a min-heap.
  std::vector<std::pair<int64_t, Op*>> timers_;
  OpPool<Op> ops_;
  IoReactorStats stats_;
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_IO_EPOLL_REACTOR_H_
