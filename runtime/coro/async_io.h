// AsyncIo: the pool's socket and file I/O for coroutines. Each method
// returns an awaitable; `co_await` starts the operation on the reactor of
// the worker the coroutine runs on (ThreadPool::Io, the same io_uring or
// epoll reactor PoolIo uses) and gives the operation's result: a byte count,
// a new fd, 0, or -errno. The coroutine resumes inline on that worker when
// the operation completes, from the completion itself: no task, no extra
// wake.
//
//   haltpool::AsyncIo io(pool);
//   char buf[512];
//   for (;;) {
//     int n = co_await io.Recv(fd, buf, sizeof buf);
//     if (n <= 0) break;                       // end of stream or -errno
//     if (co_await io.SendAll(fd, buf, n) < 0) break;
//   }
//
// The reactor is looked up at each co_await, so a coroutine that moved to
// another worker (Schedule, SleepFor, a TaskGroup) keeps using the right
// one. At shutdown every operation still in flight ends with -ECANCELED
// (IoReactor::CancelInFlight), so no frame is left waiting. Awaiting off
// the pool's workers throws std::logic_error; a reactor that cannot be made
// (HALTPOOL_IO=uring without io_uring) throws std::runtime_error, with the
// reason.

#ifndef HALTPOOL_RUNTIME_CORO_ASYNC_IO_H_
#define HALTPOOL_RUNTIME_CORO_ASYNC_IO_H_

#include <sys/socket.h>

#include <coroutine>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "runtime/coro/task.h"

namespace haltpool {

class ThreadPool;
class IoReactor;

// One operation to start when awaited. Made by AsyncIo's methods; its
// arguments (buffers included) must stay valid until the co_await returns,
// which they do when they are the coroutine's own.
class IoAwaiter {
 public:
  enum class Kind {
    kAccept,
    kConnect,
    kRecv,
    kSend,
    kSendAll,  // Send after Send until all `len` bytes are out.
    kRead,
    kWrite,
    kTimeout
  };
  struct Args {
    Kind kind;
    int fd = -1;
    void* buf = nullptr;
    size_t len = 0;
    int64_t offset = -1;
    const sockaddr* addr = nullptr;
    socklen_t addr_len = 0;
    int64_t duration_ns = 0;
  };

  IoAwaiter(ThreadPool& pool, const Args& args) noexcept
      : pool_(&pool), args_(args) {}

  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h) noexcept;
  int await_resume() const;

 private:
  // Starts the operation (for kSendAll, the rest of the bytes) on reactor_.
  void Start() noexcept;
  // The operation's callback: resumes the coroutine, or for kSendAll sends
  // the rest first.
  void Complete(int result) noexcept;

  ThreadPool* pool_;
  Args args_;
  IoReactor* reactor_ = nullptr;  // The awaiting worker's.
  std::coroutine_handle<> handle_;
  size_t sent_ = 0;  // kSendAll: bytes sent so far.
  int result_ = 0;
  absl::Status status_;  // Why the operation could not start.
};

class AsyncIo {
 public:
  // `pool` must outlive every co_await on this object's awaitables.
  explicit AsyncIo(ThreadPool& pool) noexcept : pool_(&pool) {}

  // As IoReactor's operations of the same names (runtime/io/io_reactor.h).
  IoAwaiter Accept(int listen_fd) noexcept;
  IoAwaiter Connect(int fd, const sockaddr* addr, socklen_t len) noexcept;
  IoAwaiter Recv(int fd, void* buf, size_t len) noexcept;
  IoAwaiter Send(int fd, const void* buf, size_t len) noexcept;
  IoAwaiter Read(int fd, void* buf, size_t len, int64_t offset) noexcept;
  IoAwaiter Write(int fd, const void* buf, size_t len, int64_t offset) noexcept;
  // Completes with 0 once `duration` has passed (the reactor's timer; the
  // pool's timers are ThreadPool::SleepFor).
  IoAwaiter Timeout(absl::Duration duration) noexcept;

  // Sends all `len` bytes, Send after Send, resuming the coroutine once:
  // `len`, or the first -errno. Allocates nothing.
  IoAwaiter SendAll(int fd, const void* buf, size_t len) noexcept;

 private:
  ThreadPool* pool_;
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_CORO_ASYNC_IO_H_
