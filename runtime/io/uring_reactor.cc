#include "runtime/io/uring_reactor.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "arch/cycle_clock.h"
#include "runtime/io/deadline.h"

namespace haltpool {
namespace {

// user_data of the CQEs that are not operations. Operation records are
// pointers to aligned structs, never 1 or 2; liburing keeps ~0
// (LIBURING_UDATA_TIMEOUT) for itself.
constexpr uint64_t kWakeTag = 1;
constexpr uint64_t kCancelTag = 2;

// The most one read or write transfers on Linux (MAX_RW_COUNT: INT_MAX
// rounded down to a page); it also keeps lengths within the SQE's 32 bits.
constexpr size_t kMaxIoBytes = 0x7ffff000;

// How long the destructor waits for cancelled operations to complete.
// Sockets and timers cancel at once; a file read already at the device
// finishes first, which takes milliseconds, not seconds.
constexpr int64_t kCancelWaitNs = 5 * kNsPerSecond;

enum class OpKind : uint8_t {
  kAccept,
  kConnect,
  kRecv,
  kSend,
  kRead,
  kWrite,
  kTimeout,
  kFail,  // Completes with fail_result through a NOP.
};

// The opcodes this backend uses, with their names for the error message.
struct NeededOp {
  int opcode;
  const char* name;
};
constexpr NeededOp kNeededOps[] = {
    {IORING_OP_NOP, "IORING_OP_NOP"},
    {IORING_OP_ACCEPT, "IORING_OP_ACCEPT"},
    {IORING_OP_CONNECT, "IORING_OP_CONNECT"},
    {IORING_OP_RECV, "IORING_OP_RECV"},
    {IORING_OP_SEND, "IORING_OP_SEND"},
    {IORING_OP_READ, "IORING_OP_READ"},
    {IORING_OP_WRITE, "IORING_OP_WRITE"},
    {IORING_OP_TIMEOUT, "IORING_OP_TIMEOUT"},
    {IORING_OP_POLL_ADD, "IORING_OP_POLL_ADD"},
    {IORING_OP_ASYNC_CANCEL, "IORING_OP_ASYNC_CANCEL"},
};

// The setup flags of each task-run mode, from the most to the least
// cooperative: a kernel that refuses one (EINVAL) is offered the next.
struct TaskRunFlags {
  IoTaskRun mode;
  unsigned flags;
  const char* names;
};
constexpr TaskRunFlags kTaskRunFlags[] = {
    {IoTaskRun::kDefer,
     IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
         IORING_SETUP_TASKRUN_FLAG,
     "SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG"},
    {IoTaskRun::kCoop, IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
     "COOP_TASKRUN|TASKRUN_FLAG"},
    {IoTaskRun::kInterrupt, 0, "no task-run flags"},
};

unsigned ClampLen(size_t len) {
  return static_cast<unsigned>(std::min(len, kMaxIoBytes));
}

// io_uring's offset: ~0 means the file's current position.
uint64_t FileOffset(int64_t offset) {
  return offset < 0 ? ~uint64_t{0} : static_cast<uint64_t>(offset);
}

}  // namespace

struct UringReactor::Op {
  IoCallback cb;
  Op* next = nullptr;  // Free list or backlog.
  OpKind kind = OpKind::kFail;
  bool in_flight = false;
  int fd = -1;
  int fail_result = 0;
  void* buf = nullptr;
  unsigned len = 0;
  uint64_t offset = 0;
  socklen_t addr_len = 0;
  union {
    __kernel_timespec deadline;  // kTimeout: absolute CLOCK_MONOTONIC.
    sockaddr_storage addr;       // kConnect: the kernel reads it at issue.
  };
};

absl::StatusOr<std::unique_ptr<UringReactor>> UringReactor::Create(
    const IoReactorOptions& options) {
  std::unique_ptr<UringReactor> r(new UringReactor());
  const int rc = options.fake_uring_setup_errno != 0
                     ? -options.fake_uring_setup_errno
                     : r->SetUpRing(options);
  if (rc < 0) return absl::ErrnoToStatus(-rc, "io_uring_setup failed");
  r->ring_ready_ = true;

  io_uring_probe* probe = io_uring_get_probe_ring(&r->ring_);
  if (probe == nullptr) {
    return absl::UnimplementedError(
        "io_uring has no opcode probe (IORING_REGISTER_PROBE: Linux 5.6)");
  }
  for (const NeededOp& op : kNeededOps) {
    if (!io_uring_opcode_supported(probe, op.opcode)) {
      io_uring_free_probe(probe);
      return absl::UnimplementedError(
          absl::StrCat("io_uring lacks ", op.name, " (kernel too old)"));
    }
  }
  io_uring_free_probe(probe);

  absl::StatusOr<EventWaker> waker = EventWaker::Create();
  if (!waker.ok()) return waker.status();
  r->waker_ = *std::move(waker);
  r->unsubmitted_.reserve(r->sq_entries());
  r->FlushBacklog();  // Arms the wake poll.
  r->SubmitPending();
  return r;
}

int UringReactor::SetUpRing(const IoReactorOptions& options) noexcept {
  std::string refused;
  for (const TaskRunFlags& m : kTaskRunFlags) {
    if (m.mode > options.task_run) continue;  // Milder modes only.
    const int rc = (m.flags & options.fake_refused_setup_flags) != 0
                       ? -EINVAL
                       : io_uring_queue_init(options.entries, &ring_, m.flags);
    if (rc == 0) {
      task_run_ = m.mode;
      setup_ =
          absl::StrCat(kIoTaskRuns.Name(m.mode), " (", m.names, ")", refused);
      return 0;
    }
    if (rc != -EINVAL || m.flags == 0) return rc;
    absl::StrAppend(&refused, "; the kernel refused ", m.names, " (EINVAL)");
  }
  return -EINVAL;
}

UringReactor::~UringReactor() {
  if (ring_ready_) {
    CancelAll();
    io_uring_queue_exit(&ring_);
  }
  // waker_ closes the eventfd.
}

void UringReactor::CancelAll() noexcept {
  // Never sent to the kernel: drop them, and turn queued SQEs into NOPs so
  // that nothing new starts.
  while (Op* op = backlog_.PopFront()) Drop(op);
  for (io_uring_sqe* sqe : unsubmitted_) {
    const uint64_t data = sqe->user_data;
    if (data == kWakeTag) {
      wake_armed_ = false;
    } else if (data != kCancelTag && data != LIBURING_UDATA_TIMEOUT) {
      Drop(reinterpret_cast<Op*>(data));
    }
    io_uring_prep_nop(sqe);
    io_uring_sqe_set_data64(sqe, kCancelTag);
  }
  // In the kernel: cancel each.
  auto cancel = [this](uint64_t data) {
    io_uring_sqe* sqe = GetSqe();
    if (sqe == nullptr) return;
    io_uring_prep_cancel64(sqe, data, 0);
    io_uring_sqe_set_data64(sqe, kCancelTag);
  };
  ops_.ForEach([&](Op& op) {
    if (op.in_flight) cancel(reinterpret_cast<uint64_t>(&op));
  });
  if (wake_armed_) cancel(kWakeTag);
  SubmitPending();

  const int64_t give_up = arch::MonotonicNowNs() + kCancelWaitNs;
  while (in_flight_ > 0 || wake_armed_) {
    const int64_t left = give_up - arch::MonotonicNowNs();
    if (left <= 0) break;
    __kernel_timespec ts = ToTimespec<__kernel_timespec>(left);
    io_uring_cqe* cqe = nullptr;
    const int rc = io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
    NoteSubmitted(/*helper_timeout=*/true);
    if (rc == -EINTR) continue;
    if (rc < 0) break;
    const uint64_t data = io_uring_cqe_get_data64(cqe);
    io_uring_cqe_seen(&ring_, cqe);
    if (data == kWakeTag) {
      wake_armed_ = false;
    } else if (data != kCancelTag) {
      Drop(reinterpret_cast<Op*>(data));
    }
  }
}

UringReactor::Op* UringReactor::NewOp(IoCallback cb) {
  Op* op = ops_.Take();
  op->cb = std::move(cb);
  op->in_flight = true;
  ++in_flight_;
  return op;
}

void UringReactor::Drop(Op* op) noexcept {
  op->cb = nullptr;
  op->in_flight = false;
  ops_.Put(op);
  --in_flight_;
}

void UringReactor::Complete(Op* op, int result) noexcept {
  if (op->kind == OpKind::kTimeout && result == -ETIME) {
    result = 0;
  } else if (op->kind == OpKind::kFail) {
    result = op->fail_result;
  } else if (cancelling_ && result == -EINTR) {
    result = -ECANCELED;  // Some operations report a cancel as EINTR.
  }
  // Take the callback first: it may start operations that reuse the record.
  IoCallback cb = std::move(op->cb);
  Drop(op);
  if (cb) cb(result);
}

io_uring_sqe* UringReactor::GetSqe() noexcept {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    // The SQ is full: send it now to make room (one io_uring_enter).
    ++stats_.retries;
    NoteOverflowFlush();
    io_uring_submit(&ring_);
    NoteSubmitted();
    sqe = io_uring_get_sqe(&ring_);
  }
  if (sqe != nullptr) unsubmitted_.push_back(sqe);
  return sqe;
}

void UringReactor::Prep(io_uring_sqe* sqe, Op* op) noexcept {
  switch (op->kind) {
    case OpKind::kAccept:
      io_uring_prep_accept(sqe, op->fd, nullptr, nullptr, SOCK_CLOEXEC);
      break;
    case OpKind::kConnect:
      io_uring_prep_connect(sqe, op->fd,
                            reinterpret_cast<const sockaddr*>(&op->addr),
                            op->addr_len);
      break;
    case OpKind::kRecv:
      io_uring_prep_recv(sqe, op->fd, op->buf, op->len, 0);
      break;
    case OpKind::kSend:
      io_uring_prep_send(sqe, op->fd, op->buf, op->len, MSG_NOSIGNAL);
      break;
    case OpKind::kRead:
      io_uring_prep_read(sqe, op->fd, op->buf, op->len, op->offset);
      break;
    case OpKind::kWrite:
      io_uring_prep_write(sqe, op->fd, op->buf, op->len, op->offset);
      break;
    case OpKind::kTimeout:
      io_uring_prep_timeout(sqe, &op->deadline, 0, IORING_TIMEOUT_ABS);
      break;
    case OpKind::kFail:
      io_uring_prep_nop(sqe);
      break;
  }
  io_uring_sqe_set_data(sqe, op);
}

void UringReactor::CancelInFlight() noexcept {
  cancelling_ = true;
  // Not yet in the kernel: complete through a NOP instead.
  for (Op* op = backlog_.head; op != nullptr; op = op->next) {
    Refuse(*op);
  }
  for (io_uring_sqe* sqe : unsubmitted_) {
    const uint64_t data = sqe->user_data;
    if (data == kWakeTag || data == kCancelTag ||
        data == LIBURING_UDATA_TIMEOUT) {
      continue;
    }
    Op* op = reinterpret_cast<Op*>(data);
    Refuse(*op);
    Prep(sqe, op);
  }
  SubmitPending();
  // In the kernel: ask it to cancel each. A full queue is submitted to make
  // room (GetSqe); an operation whose cancel found no room at all still
  // completes on its own, as it would have without the cancel.
  ops_.ForEach([&](Op& op) {
    if (!op.in_flight || op.kind == OpKind::kFail) return;
    if (io_uring_sqe* sqe = GetSqe()) {
      io_uring_prep_cancel64(sqe, reinterpret_cast<uint64_t>(&op), 0);
      io_uring_sqe_set_data64(sqe, kCancelTag);
    }
  });
  SubmitPending();
}

void UringReactor::Refuse(Op& op) noexcept {
  op.kind = OpKind::kFail;
  op.fail_result = -ECANCELED;
}

void UringReactor::Push(Op* op) noexcept {
  if (cancelling_) Refuse(*op);
  if (backlog_.empty()) {
    if (io_uring_sqe* sqe = GetSqe()) {
      Prep(sqe, op);
      return;
    }
  }
  // Even a submit found no room (the kernel refused it, e.g. EBUSY): keep
  // the operation, in order, for the next ReapCompletions or WaitUntil.
  backlog_.PushBack(op);
}

void UringReactor::FlushBacklog() noexcept {
  while (!backlog_.empty()) {
    io_uring_sqe* sqe = GetSqe();
    if (sqe == nullptr) return;
    Prep(sqe, backlog_.PopFront());
  }
  // Re-arm only once the eventfd is drained, else the poll fires at once.
  if (!wake_armed_ && !wake_pending_) {
    if (io_uring_sqe* sqe = GetSqe()) {
      io_uring_prep_poll_add(sqe, waker_.fd(), POLLIN);
      io_uring_sqe_set_data64(sqe, kWakeTag);
      wake_armed_ = true;
    }
  }
}

void UringReactor::SubmitPending() noexcept {
  if (io_uring_sq_ready(&ring_) > 0) {
    NoteOverflowFlush();
    const int rc = io_uring_submit(&ring_);
    if (rc == -EBUSY || rc == -EAGAIN) ++stats_.retries;
    NoteSubmitted();
  }
}

void UringReactor::NoteSubmitted(bool helper_timeout) noexcept {
  size_t left = io_uring_sq_ready(&ring_);
  // liburing's own timeout SQE, if it queued one, is the last; count it out.
  // Should it have failed to queue one, one SQE of ours is forgotten too
  // early: CancelAll then cancels it in the kernel instead of making it a
  // NOP, never the reverse.
  if (helper_timeout && left > 0 &&
      (ring_.features & IORING_FEAT_EXT_ARG) == 0) {
    --left;
  }
  if (left < unsubmitted_.size()) {
    // The kernel takes SQEs in ring order: those left are the last ones.
    unsubmitted_.erase(unsubmitted_.begin(),
                       unsubmitted_.end() - static_cast<ptrdiff_t>(left));
  }
}

void UringReactor::Accept(int listen_fd, IoCallback cb) {
  Op* op = NewOp(std::move(cb));
  op->kind = OpKind::kAccept;
  op->fd = listen_fd;
  Push(op);
}

void UringReactor::Connect(int fd, const sockaddr* addr, socklen_t len,
                           IoCallback cb) {
  Op* op = NewOp(std::move(cb));
  if (addr == nullptr || len > sizeof(op->addr)) {
    op->kind = OpKind::kFail;
    op->fail_result = -EINVAL;
  } else {
    op->kind = OpKind::kConnect;
    op->fd = fd;
    std::memcpy(&op->addr, addr, len);
    op->addr_len = len;
  }
  Push(op);
}

void UringReactor::Recv(int fd, void* buf, size_t len, IoCallback cb) {
  Op* op = NewOp(std::move(cb));
  op->kind = OpKind::kRecv;
  op->fd = fd;
  op->buf = buf;
  op->len = ClampLen(len);
  Push(op);
}

void UringReactor::Send(int fd, const void* buf, size_t len, IoCallback cb) {
  Op* op = NewOp(std::move(cb));
  op->kind = OpKind::kSend;
  op->fd = fd;
  op->buf = const_cast<void*>(buf);
  op->len = ClampLen(len);
  Push(op);
}

void UringReactor::Read(int fd, void* buf, size_t len, int64_t offset,
                        IoCallback cb) {
  Op* op = NewOp(std::move(cb));
  op->kind = OpKind::kRead;
  op->fd = fd;
  op->buf = buf;
  op->len = ClampLen(len);
  op->offset = FileOffset(offset);
  Push(op);
}

void UringReactor::Write(int fd, const void* buf, size_t len, int64_t offset,
                         IoCallback cb) {
  Op* op = NewOp(std::move(cb));
  op->kind = OpKind::kWrite;
  op->fd = fd;
  op->buf = const_cast<void*>(buf);
  op->len = ClampLen(len);
  op->offset = FileOffset(offset);
  Push(op);
}

void UringReactor::Timeout(int64_t duration_ns, IoCallback cb) {
  Op* op = NewOp(std::move(cb));
  op->kind = OpKind::kTimeout;
  // Absolute, from now: a submission that waits for the next Reap does not
  // stretch the timeout.
  op->deadline = ToTimespec<__kernel_timespec>(
      DeadlineAfterNs(arch::MonotonicNowNs(), duration_ns));
  Push(op);
}

unsigned UringReactor::RingFlags() const noexcept {
  return IO_URING_READ_ONCE(*ring_.sq.kflags);
}

void UringReactor::NoteOverflowFlush() noexcept {
  if (RingFlags() & IORING_SQ_CQ_OVERFLOW) ++stats_.cq_overflows;
}

void UringReactor::CollectFromKernel() noexcept {
  if ((RingFlags() & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) == 0) return;
  NoteOverflowFlush();
  io_uring_get_events(&ring_);
}

int UringReactor::ReapCompletions() noexcept {
  FlushBacklog();
  SubmitPending();
  CollectFromKernel();
  int ran = 0;
  io_uring_cqe* cqe = nullptr;
  // io_uring_peek_cqe enters the kernel only to flush overflowed CQEs,
  // once the ring is empty.
  for (;;) {
    if (io_uring_cq_ready(&ring_) == 0) NoteOverflowFlush();
    if (io_uring_peek_cqe(&ring_, &cqe) != 0) break;
    const uint64_t data = io_uring_cqe_get_data64(cqe);
    const int result = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    if (data == kWakeTag) {
      // WaitUntil drains the eventfd and re-arms the poll.
      wake_armed_ = false;
      wake_pending_ = true;
    } else if (data != kCancelTag) {
      Complete(reinterpret_cast<Op*>(data), result);
      ++ran;
    }
  }
  return ran;
}

bool UringReactor::CompletionReady() const noexcept {
  return io_uring_cq_ready(&ring_) > 0 ||
         (RingFlags() & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) != 0;
}

IoFound UringReactor::Poll() noexcept {
  // The owner runs in user space here, so a CQE in the ring was posted
  // behind its back; the flags are the kernel's note for it to act on.
  if (io_uring_cq_ready(&ring_) > 0) return IoFound::kPosted;
  if (RingFlags() & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) {
    return IoFound::kByPoll;
  }
  return IoFound::kNothing;
}

IoReactorStats UringReactor::stats() const noexcept {
  IoReactorStats s = stats_;
  s.cqes_dropped = *ring_.cq.koverflow;
  return s;
}

void UringReactor::TakeWakeCqes() noexcept {
  io_uring_cqe* cqe = nullptr;
  while (io_uring_peek_cqe(&ring_, &cqe) == 0 &&
         io_uring_cqe_get_data64(cqe) == kWakeTag) {
    io_uring_cqe_seen(&ring_, cqe);
    wake_armed_ = false;
    wake_pending_ = true;
  }
}

bool UringReactor::WaitUntil(int64_t deadline_ns) noexcept {
  for (;;) {
    // Again on every pass: a refused submit may have left work (or the wake
    // poll) unqueued.
    FlushBacklog();
    TakeWakeCqes();
    if (wake_pending_) {
      waker_.Drain();
      wake_pending_ = false;
      FlushBacklog();  // Re-arms the poll.
      SubmitPending();
      return true;
    }
    if (io_uring_cq_ready(&ring_) > 0) {
      SubmitPending();
      return true;
    }
    __kernel_timespec ts;
    __kernel_timespec* tsp = nullptr;
    if (deadline_ns != arch::kNoDeadline) {
      const int64_t left = deadline_ns - arch::MonotonicNowNs();
      if (left <= 0) {
        SubmitPending();
        return false;
      }
      ts = ToTimespec<__kernel_timespec>(left);
      tsp = &ts;
    }
    io_uring_cqe* cqe = nullptr;
    NoteOverflowFlush();
    const int rc =
        io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, tsp, nullptr);
    NoteSubmitted(/*helper_timeout=*/tsp != nullptr);
    // -ETIME: the loop sees the deadline; -EINTR: a signal, wait again;
    // -EBUSY/-EAGAIN: the kernel is short of room, the loop retries.
    // Anything else is unexpected: return, the caller re-checks.
    if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EBUSY &&
        rc != -EAGAIN) {
      return true;
    }
  }
}

void UringReactor::Wake() noexcept { waker_.Wake(); }

}  // namespace haltpool
