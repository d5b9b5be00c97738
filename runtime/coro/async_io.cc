#include "runtime/coro/async_io.h"

#include <stdexcept>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/pool_io.h"
#include "runtime/thread_pool.h"

namespace haltpool {

bool IoAwaiter::await_suspend(std::coroutine_handle<> h) noexcept {
  absl::StatusOr<PoolIo> io = pool_->Io();
  if (!io.ok()) {
    status_ = io.status();
    return false;  // Go on at once; await_resume throws.
  }
  Start(*io->reactor_, h);
  return true;
}

void IoAwaiter::Start(IoReactor& reactor, std::coroutine_handle<> h) noexcept {
  // The callback runs on this worker from a later ReapCompletions, never
  // inside the Start call: the coroutine is suspended by then. Two
  // pointers: AnyInvocable keeps them inline, nothing is allocated.
  IoCallback resume = [this, h](int result) {
    result_ = result;
    h.resume();
  };
  switch (args_.kind) {
    case Kind::kAccept:
      reactor.Accept(args_.fd, std::move(resume));
      break;
    case Kind::kConnect:
      reactor.Connect(args_.fd, args_.addr, args_.addr_len, std::move(resume));
      break;
    case Kind::kRecv:
      reactor.Recv(args_.fd, args_.buf, args_.len, std::move(resume));
      break;
    case Kind::kSend:
      reactor.Send(args_.fd, args_.buf, args_.len, std::move(resume));
      break;
    case Kind::kRead:
      reactor.Read(args_.fd, args_.buf, args_.len, args_.offset,
                   std::move(resume));
      break;
    case Kind::kWrite:
      reactor.Write(args_.fd, args_.buf, args_.len, args_.offset,
                    std::move(resume));
      break;
    case Kind::kTimeout:
      reactor.Timeout(args_.duration_ns, std::move(resume));
      break;
  }
}

int IoAwaiter::await_resume() const {
  if (status_.ok()) return result_;
  const std::string what =
      "haltpool: co_await on AsyncIo: " + std::string(status_.message());
  if (absl::IsFailedPrecondition(status_)) throw std::logic_error(what);
  throw std::runtime_error(what);
}

IoAwaiter AsyncIo::Accept(int listen_fd) noexcept {
  return IoAwaiter(*pool_, {.kind = IoAwaiter::Kind::kAccept, .fd = listen_fd});
}

IoAwaiter AsyncIo::Connect(int fd, const sockaddr* addr,
                           socklen_t len) noexcept {
  return IoAwaiter(*pool_, {.kind = IoAwaiter::Kind::kConnect,
                            .fd = fd,
                            .addr = addr,
                            .addr_len = len});
}

IoAwaiter AsyncIo::Recv(int fd, void* buf, size_t len) noexcept {
  return IoAwaiter(
      *pool_,
      {.kind = IoAwaiter::Kind::kRecv, .fd = fd, .buf = buf, .len = len});
}

IoAwaiter AsyncIo::Send(int fd, const void* buf, size_t len) noexcept {
  return IoAwaiter(*pool_, {.kind = IoAwaiter::Kind::kSend,
                            .fd = fd,
                            .buf = const_cast<void*>(buf),
                            .len = len});
}

IoAwaiter AsyncIo::Read(int fd, void* buf, size_t len,
                        int64_t offset) noexcept {
  return IoAwaiter(*pool_, {.kind = IoAwaiter::Kind::kRead,
                            .fd = fd,
                            .buf = buf,
                            .len = len,
                            .offset = offset});
}

IoAwaiter AsyncIo::Write(int fd, const void* buf, size_t len,
                         int64_t offset) noexcept {
  return IoAwaiter(*pool_, {.kind = IoAwaiter::Kind::kWrite,
                            .fd = fd,
                            .buf = const_cast<void*>(buf),
                            .len = len,
                            .offset = offset});
}

IoAwaiter AsyncIo::Timeout(absl::Duration duration) noexcept {
  return IoAwaiter(*pool_, {.kind = IoAwaiter::Kind::kTimeout,
                            .duration_ns = absl::ToInt64Nanoseconds(duration)});
}

Task<int> AsyncIo::SendAll(int fd, const void* buf, size_t len) {
  const char* p = static_cast<const char*>(buf);
  size_t sent = 0;
  while (sent < len) {
    const int n = co_await Send(fd, p + sent, len - sent);
    if (n < 0) co_return n;
    sent += static_cast<size_t>(n);
  }
  co_return static_cast<int>(sent);
}

}  // namespace haltpool
