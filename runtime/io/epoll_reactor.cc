#include "runtime/io/epoll_reactor.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <utility>

#include "absl/status/status.h"
#include "arch/cycle_clock.h"
#include "runtime/io/deadline.h"

namespace haltpool {
namespace {

constexpr int64_t kNsPerMs = 1000000;

// Ready fds taken per epoll_wait; more are taken by the next call. A guess.
constexpr int kMaxEvents = 64;

// Poll() looks with epoll_wait(0) once in this many looks, and otherwise
// tries the last parked reader's recv; a guess that keeps the other fds
// seen within a few microseconds (a system call costs about 1 us in a
// guest with page-table isolation).
constexpr uint32_t kEpollEveryPolls = 8;

// Timeouts the heap holds before it first allocates again.
constexpr size_t kInitialTimers = 16;

enum class OpKind : uint8_t {
  kAccept,
  kConnect,
  kRecv,
  kSend,
  kRead,
  kWrite,
  kTimeout,
};

// -errno of the last failed call, with EWOULDBLOCK folded into EAGAIN.
int LastError() { return errno == EWOULDBLOCK ? -EAGAIN : -errno; }

// Puts `fd` into O_NONBLOCK mode if it is not: 0 or -errno.
int SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return -errno;
  if ((flags & O_NONBLOCK) != 0) return 0;
  return fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ? -errno : 0;
}

}  // namespace

struct EpollReactor::Op {
  IoCallback cb;
  Op* next = nullptr;  // Free list, an fd's waiters, or the ready list.
  OpKind kind = OpKind::kTimeout;
  int fd = -1;
  int result = 0;
  void* buf = nullptr;
  size_t len = 0;
};

absl::StatusOr<std::unique_ptr<EpollReactor>> EpollReactor::Create() {
  std::unique_ptr<EpollReactor> r(new EpollReactor());
  r->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (r->epoll_fd_ < 0) {
    return absl::ErrnoToStatus(errno, "epoll_create1 failed");
  }
  absl::StatusOr<EventWaker> waker = EventWaker::Create();
  if (!waker.ok()) return waker.status();
  r->waker_ = *std::move(waker);
  // Level-triggered: it stays ready until WaitUntil drains it.
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = r->waker_.fd();
  if (epoll_ctl(r->epoll_fd_, EPOLL_CTL_ADD, r->waker_.fd(), &ev) < 0) {
    return absl::ErrnoToStatus(errno, "epoll_ctl(eventfd) failed");
  }
  r->timers_.reserve(kInitialTimers);
  return r;
}

EpollReactor::~EpollReactor() {
  if (epoll_fd_ >= 0) close(epoll_fd_);
  // ops_ destroys the callbacks of operations still in flight; waker_
  // closes the eventfd.
}

EpollReactor::Op* EpollReactor::NewOp(IoCallback cb) {
  Op* op = ops_.Take();
  op->cb = std::move(cb);
  ++in_flight_;
  return op;
}

void EpollReactor::Release(Op* op) noexcept {
  op->cb = nullptr;
  ops_.Put(op);
  --in_flight_;
}

bool EpollReactor::Refused(Op* op) noexcept {
  if (!cancelling_) return false;
  Finish(op, -ECANCELED);
  return true;
}

void EpollReactor::CancelInFlight() noexcept {
  cancelling_ = true;
  for (FdWaiters& w : fds_) FailAll(w, -ECANCELED);
  for (auto& [deadline, op] : timers_) Finish(op, -ECANCELED);
  timers_.clear();
}

void EpollReactor::Finish(Op* op, int result) noexcept {
  op->result = result;
  ready_.PushBack(op);
}

int EpollReactor::TryOp(const Op& op) noexcept {
  ssize_t rc = -1;
  switch (op.kind) {
    case OpKind::kAccept:
      do {
        rc = accept4(op.fd, nullptr, nullptr, SOCK_CLOEXEC);
      } while (rc < 0 && errno == EINTR);
      break;
    case OpKind::kRecv:
      do {
        rc = recv(op.fd, op.buf, op.len, MSG_DONTWAIT);
      } while (rc < 0 && errno == EINTR);
      break;
    case OpKind::kSend:
      do {
        rc = send(op.fd, op.buf, op.len, MSG_DONTWAIT | MSG_NOSIGNAL);
      } while (rc < 0 && errno == EINTR);
      break;
    case OpKind::kConnect: {
      // Retried only once epoll reported the connection settled.
      int error = 0;
      socklen_t len = sizeof(error);
      if (getsockopt(op.fd, SOL_SOCKET, SO_ERROR, &error, &len) < 0) {
        return -errno;
      }
      return -error;
    }
    default:
      return -EINVAL;
  }
  return rc < 0 ? LastError() : static_cast<int>(rc);
}

EpollReactor::FdWaiters& EpollReactor::Waiters(int fd) {
  if (static_cast<size_t>(fd) >= fds_.size()) fds_.resize(fd + 1);
  return fds_[fd];
}

void EpollReactor::StartSocketOp(Op* op, bool write) noexcept {
  if (op->fd < 0) {
    Finish(op, -EBADF);
    return;
  }
  FdWaiters& w = Waiters(op->fd);
  // Behind earlier waiters: keep the order, do not overtake them.
  if ((write ? w.writers : w.readers).empty()) {
    const int result = TryOp(*op);
    if (result != -EAGAIN) {
      Finish(op, result);
      return;
    }
  }
  Park(op, write);
}

void EpollReactor::Park(Op* op, bool write) noexcept {
  FdWaiters& w = Waiters(op->fd);
  (write ? w.writers : w.readers).PushBack(op);
  if (!write) hot_reader_fd_ = op->fd;
  ++parked_;
  const int error = Arm(op->fd, w);
  if (error < 0) FailAll(w, error);
}

int EpollReactor::Arm(int fd, FdWaiters& w) noexcept {
  const uint32_t want = (w.readers.empty() ? 0u : uint32_t{EPOLLIN}) |
                        (w.writers.empty() ? 0u : uint32_t{EPOLLOUT});
  if (want == 0 || (w.armed & want) == want) return 0;
  epoll_event ev{};
  ev.events = want | EPOLLONESHOT;
  ev.data.fd = fd;
  int op = w.registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  if (epoll_ctl(epoll_fd_, op, fd, &ev) < 0) {
    // The fd was closed and its number reused (ENOENT), or is still in the
    // set from an earlier registration (EEXIST).
    if (errno != ENOENT && errno != EEXIST) return -errno;
    op = errno == ENOENT ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    if (epoll_ctl(epoll_fd_, op, fd, &ev) < 0) return -errno;
  }
  w.registered = true;
  w.armed = want;
  return 0;
}

void EpollReactor::FailAll(FdWaiters& w, int result) noexcept {
  for (OpList* list : {&w.readers, &w.writers}) {
    while (Op* op = list->PopFront()) {
      --parked_;
      Finish(op, result);
    }
  }
}

void EpollReactor::Retry(OpList& list) noexcept {
  while (!list.empty()) {
    ++stats_.retries;
    const int result = TryOp(*list.head);
    if (result == -EAGAIN) return;
    Op* op = list.PopFront();
    --parked_;
    Finish(op, result);
  }
}

void EpollReactor::OnReady(int fd, uint32_t events) noexcept {
  if (fd < 0 || static_cast<size_t>(fd) >= fds_.size()) return;
  FdWaiters& w = fds_[fd];
  w.armed = 0;  // EPOLLONESHOT disarmed the whole registration.
  if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0) Retry(w.readers);
  if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0) Retry(w.writers);
  const int error = Arm(fd, w);
  if (error < 0) FailAll(w, error);
}

bool EpollReactor::Epoll(int64_t timeout_ns, bool take_wake) noexcept {
  epoll_event events[kMaxEvents];
  int n = -1;
  bool done = false;
  if (timeout_ns != 0 && have_pwait2_) {
    timespec ts;
    timespec* tsp = nullptr;
    if (timeout_ns > 0) {
      ts = ToTimespec<timespec>(timeout_ns);
      tsp = &ts;
    }
    n = epoll_pwait2(epoll_fd_, events, kMaxEvents, tsp, nullptr);
    if (n < 0 && errno == ENOSYS) {
      have_pwait2_ = false;  // Before Linux 5.11, or under qemu-user.
    } else {
      done = true;
    }
  }
  if (!done) {
    // Milliseconds, rounded up: never earlier than asked.
    const int ms = timeout_ns < 0
                       ? -1
                       : static_cast<int>(std::min<int64_t>(
                             (timeout_ns + kNsPerMs - 1) / kNsPerMs, INT_MAX));
    n = epoll_wait(epoll_fd_, events, kMaxEvents, ms);
  }
  bool woken = false;
  for (int i = 0; i < n; ++i) {
    const int fd = events[i].data.fd;
    if (fd == waker_.fd()) {
      woken = true;
      if (take_wake) waker_.Drain();
      continue;
    }
    OnReady(fd, events[i].events);
  }
  return woken;
}

void EpollReactor::ExpireTimers(int64_t now_ns) noexcept {
  while (!timers_.empty() && timers_.front().first <= now_ns) {
    std::pop_heap(timers_.begin(), timers_.end(), std::greater<>());
    Op* op = timers_.back().second;
    timers_.pop_back();
    Finish(op, 0);
  }
}

void EpollReactor::Accept(int listen_fd, IoCallback cb) {
  Op* op = NewOp(std::move(cb));
  if (Refused(op)) return;
  op->kind = OpKind::kAccept;
  op->fd = listen_fd;
  // accept4 must not block when another thread or process took the
  // connection epoll reported.
  const int error = SetNonBlocking(listen_fd);
  if (error < 0) {
    Finish(op, error);
    return;
  }
  StartSocketOp(op, /*write=*/false);
}

void EpollReactor::Connect(int fd, const sockaddr* addr, socklen_t len,
                           IoCallback cb) {
  Op* op = NewOp(std::move(cb));
  if (Refused(op)) return;
  op->kind = OpKind::kConnect;
  op->fd = fd;
  if (addr == nullptr || len > sizeof(sockaddr_storage)) {
    Finish(op, -EINVAL);
    return;
  }
  const int error = SetNonBlocking(fd);
  if (error < 0) {
    Finish(op, error);
    return;
  }
  if (connect(fd, addr, len) == 0) {
    Finish(op, 0);
  } else if (errno == EINPROGRESS || errno == EINTR) {
    Park(op, /*write=*/true);  // EPOLLOUT when it settles; SO_ERROR says how.
  } else {
    Finish(op, -errno);
  }
}

void EpollReactor::Recv(int fd, void* buf, size_t len, IoCallback cb) {
  Op* op = NewOp(std::move(cb));
  if (Refused(op)) return;
  op->kind = OpKind::kRecv;
  op->fd = fd;
  op->buf = buf;
  op->len = len;
  StartSocketOp(op, /*write=*/false);
}

void EpollReactor::Send(int fd, const void* buf, size_t len, IoCallback cb) {
  Op* op = NewOp(std::move(cb));
  if (Refused(op)) return;
  op->kind = OpKind::kSend;
  op->fd = fd;
  op->buf = const_cast<void*>(buf);
  op->len = len;
  StartSocketOp(op, /*write=*/true);
}

void EpollReactor::Read(int fd, void* buf, size_t len, int64_t offset,
                        IoCallback cb) {
  Op* op = NewOp(std::move(cb));
  if (Refused(op)) return;
  op->kind = OpKind::kRead;
  ssize_t rc;
  do {
    rc = offset < 0 ? read(fd, buf, len) : pread(fd, buf, len, offset);
  } while (rc < 0 && errno == EINTR);
  Finish(op, rc < 0 ? -errno : static_cast<int>(rc));
}

void EpollReactor::Write(int fd, const void* buf, size_t len, int64_t offset,
                         IoCallback cb) {
  Op* op = NewOp(std::move(cb));
  if (Refused(op)) return;
  op->kind = OpKind::kWrite;
  ssize_t rc;
  do {
    rc = offset < 0 ? write(fd, buf, len) : pwrite(fd, buf, len, offset);
  } while (rc < 0 && errno == EINTR);
  Finish(op, rc < 0 ? -errno : static_cast<int>(rc));
}

void EpollReactor::Timeout(int64_t duration_ns, IoCallback cb) {
  Op* op = NewOp(std::move(cb));
  if (Refused(op)) return;
  op->kind = OpKind::kTimeout;
  timers_.emplace_back(DeadlineAfterNs(arch::MonotonicNowNs(), duration_ns),
                       op);
  std::push_heap(timers_.begin(), timers_.end(), std::greater<>());
}

int EpollReactor::ReapCompletions() noexcept {
  if (parked_ > 0) Epoll(0, /*take_wake=*/false);
  if (!timers_.empty()) ExpireTimers(arch::MonotonicNowNs());
  // Only what completed so far: operations that callbacks start and that
  // finish at once run in the next call.
  OpList batch = ready_;
  ready_ = OpList();
  int ran = 0;
  while (Op* op = batch.PopFront()) {
    const int result = op->result;
    IoCallback cb = std::move(op->cb);
    Release(op);
    if (cb) cb(result);
    ++ran;
  }
  return ran;
}

bool EpollReactor::CompletionReady() const noexcept {
  return !ready_.empty() ||
         (!timers_.empty() && timers_.front().first <= arch::MonotonicNowNs());
}

IoFound EpollReactor::Poll() noexcept {
  if (CompletionReady()) return IoFound::kByPoll;
  if (parked_ == 0) return IoFound::kNothing;
  FdWaiters* hot =
      hot_reader_fd_ >= 0 && static_cast<size_t>(hot_reader_fd_) < fds_.size()
          ? &fds_[hot_reader_fd_]
          : nullptr;
  if (hot != nullptr && !hot->readers.empty() &&
      ++polls_ % kEpollEveryPolls != 0) {
    // The reader parked last is the likeliest to be answered next. Its
    // recv with MSG_DONTWAIT finds the data one system call sooner than
    // epoll_wait's report followed by the recv. Its fd stays armed; a
    // report that comes later finds no waiter, or retries the next one.
    const int result = TryOp(*hot->readers.head);
    if (result == -EAGAIN) return IoFound::kNothing;
    --parked_;
    Finish(hot->readers.PopFront(), result);
    return IoFound::kByPoll;
  }
  // A wake found here stays in the eventfd for WaitUntil to take.
  Epoll(0, /*take_wake=*/false);
  return ready_.empty() ? IoFound::kNothing : IoFound::kByPoll;
}

bool EpollReactor::WaitUntil(int64_t deadline_ns) noexcept {
  for (;;) {
    if (!ready_.empty()) return true;
    const int64_t now = arch::MonotonicNowNs();
    int64_t until = deadline_ns;
    if (!timers_.empty()) {
      if (timers_.front().first <= now) return true;
      until = std::min(until, timers_.front().first);
    }
    if (deadline_ns != arch::kNoDeadline && now >= deadline_ns) return false;
    const int64_t timeout_ns = until == arch::kNoDeadline ? -1 : until - now;
    if (Epoll(timeout_ns, /*take_wake=*/true)) return true;
    // Else: fds became ready (the loop looks for completions), a timer or
    // the deadline came, a spurious readiness, or a signal.
  }
}

void EpollReactor::Wake() noexcept { waker_.Wake(); }

}  // namespace haltpool
