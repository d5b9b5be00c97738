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
  reactor_ = io->reactor_;
  handle_ = h;
  Start();
  return true;
}

void IoAwaiter::Start() noexcept {
  // The callback runs on this worker from a later ReapCompletions, never
  // inside the Start call: the coroutine is suspended by then. One pointer:
  // AnyInvocable keeps it inline, nothing is allocated.
  IoCallback done = [this](int result) { Complete(result); };
  IoReactor& r = *reactor_;
  switch (args_.kind) {
    case Kind::kAccept:
      r.Accept(args_.fd, std::move(done));
      break;
    case Kind::kConnect:
      r.Connect(args_.fd, args_.addr, args_.addr_len, std::move(done));
      break;
    case Kind::kRecv:
      r.Recv(args_.fd, args_.buf, args_.len, std::move(done));
      break;
    case Kind::kSend:
      r.Send(args_.fd, args_.buf, args_.len, std::move(done));
      break;
    case Kind::kSendAll:
      r.Send(args_.fd, static_cast<char*>(args_.buf) + sent_, args_.len - sent_,
             std::move(done));
      break;
    case Kind::kRead:
      r.Read(args_.fd, args_.buf, args_.len, args_.offset, std::move(done));
      break;
    case Kind::kWrite:
      r.Write(args_.fd, args_.buf, args_.len, args_.offset, std::move(done));
      break;
    case Kind::kTimeout:
      r.Timeout(args_.duration_ns, std::move(done));
      break;
  }
}

void IoAwaiter::Complete(int result) noexcept {
  if (args_.kind == Kind::kSendAll && result > 0) {
    sent_ += static_cast<size_t>(result);
    if (sent_ < args_.len) {
      Start();  // A callback may start operations; this one goes on later.
      return;
    }
    result = static_cast<int>(sent_);
  }
  result_ = result;
  handle_.resume();
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

IoAwaiter AsyncIo::SendAll(int fd, const void* buf, size_t len) noexcept {
  return IoAwaiter(*pool_, {.kind = IoAwaiter::Kind::kSendAll,
                            .fd = fd,
                            .buf = const_cast<void*>(buf),
                            .len = len});
}

}  // namespace haltpool
