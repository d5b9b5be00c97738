// Socket and file I/O for tasks: the calling worker's I/O reactor
// (io_uring, or epoll where io_uring is missing or refused), with callbacks
// that run on that same worker as tasks do: an exception escaping one goes
// to the pool's handler and is counted.
//
// A worker with I/O in flight idles on its reactor: while polling it also
// watches the completion queue; when it blocks it waits in the ring, and a
// waker kicks it through an eventfd only if it is really asleep.

#ifndef HALTPOOL_RUNTIME_POOL_IO_H_
#define HALTPOOL_RUNTIME_POOL_IO_H_

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <utility>

#include "runtime/io/io_reactor.h"

namespace haltpool {

class PoolIo {
 public:
  // `on_exception` receives what a callback throws; `reactor` is the
  // calling worker's. Made by ThreadPool::Io().
  PoolIo(IoReactor* reactor,
         std::function<void(std::exception_ptr)>* on_exception,
         std::atomic<uint64_t>* exceptions) noexcept
      : reactor_(reactor),
        on_exception_(on_exception),
        exceptions_(exceptions) {}

  // As IoReactor's methods of the same names; only on the worker that
  // obtained this PoolIo. Callbacks run later on that worker, never nested:
  // a callback that waits for a group (ThreadPool::Wait) runs other tasks
  // meanwhile, but its worker's other I/O callbacks only after it returns.
  void Accept(int listen_fd, IoCallback cb) {
    reactor_->Accept(listen_fd, Guard(std::move(cb)));
  }
  void Connect(int fd, const sockaddr* addr, socklen_t len, IoCallback cb) {
    reactor_->Connect(fd, addr, len, Guard(std::move(cb)));
  }
  void Recv(int fd, void* buf, size_t len, IoCallback cb) {
    reactor_->Recv(fd, buf, len, Guard(std::move(cb)));
  }
  void Send(int fd, const void* buf, size_t len, IoCallback cb) {
    reactor_->Send(fd, buf, len, Guard(std::move(cb)));
  }
  void Read(int fd, void* buf, size_t len, int64_t offset, IoCallback cb) {
    reactor_->Read(fd, buf, len, offset, Guard(std::move(cb)));
  }
  void Write(int fd, const void* buf, size_t len, int64_t offset,
             IoCallback cb) {
    reactor_->Write(fd, buf, len, offset, Guard(std::move(cb)));
  }
  void Timeout(int64_t duration_ns, IoCallback cb) {
    reactor_->Timeout(duration_ns, Guard(std::move(cb)));
  }

  // "io_uring" or "epoll".
  absl::string_view backend() const { return reactor_->name(); }

 private:
  friend class IoAwaiter;  // Starts operations whose callback resumes a frame.

  IoCallback Guard(IoCallback cb) {
    return [cb = std::move(cb), h = on_exception_,
            n = exceptions_](int r) mutable {
      try {
        cb(r);
      } catch (...) {
        n->store(n->load(std::memory_order_relaxed) + 1,
                 std::memory_order_relaxed);
        (*h)(std::current_exception());
      }
    };
  }

  IoReactor* reactor_;
  std::function<void(std::exception_ptr)>* on_exception_;
  std::atomic<uint64_t>* exceptions_;
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_POOL_IO_H_
