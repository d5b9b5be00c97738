// The kernel-pipe endpoint of bench/pipe.

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "arch/cpu_wait.h"
#include "bench/endpoint.h"
#include "idle/governor_registry.h"
#include "idle/idle_loop.h"

namespace haltpool::bench {
namespace {

class PipeEndpoint final : public Endpoint {
 public:
  PipeEndpoint(int read_fd, int write_fd,
               std::unique_ptr<idle::Governor> governor)
      : read_fd_(read_fd),
        write_fd_(write_fd),
        governor_(std::move(governor)) {}

  void Send(uint64_t message) noexcept override {
    // 8 bytes < PIPE_BUF: one atomic write, retried only on a signal.
    while (write(write_fd_, &message, sizeof message) < 0 && errno == EINTR) {
    }
  }

  uint64_t Receive() noexcept override {
    uint64_t message = 0;
    const idle::IdleDevice dev{governor_.get(), &states_, &counters_,
                               &idle::RealClock()};
    idle::RunIdle(
        dev, arch::kNoDeadline,
        [&](int64_t until) {
          do {
            if (TryRead(message)) return true;
            arch::CpuRelax();
          } while (arch::MonotonicNowNs() < until);
          return false;
        },
        [&](int64_t) {
          ReadBlocking(message);
          return true;
        });
    return message;
  }

  idle::IdleStats Stats(absl::string_view label) const override {
    idle::IdleStats st;
    st.label = std::string(label);
    st.driver = "pipe";
    st.governor = std::string(governor_->name());
    st.wait = "read(2)";
    st.states = states_;
    counters_.Snapshot(st);
    return st;
  }

 private:
  // One non-blocking read: preadv2(RWF_NOWAIT) where the kernel allows it on
  // pipes, else FIONREAD then read.
  bool TryRead(uint64_t& message) noexcept {
    if (nowait_works_) {
      iovec iov{&message, sizeof message};
      ssize_t n = preadv2(read_fd_, &iov, 1, -1, RWF_NOWAIT);
      if (n == sizeof message) return true;
      if (n < 0 && errno != EOPNOTSUPP && errno != EINVAL) return false;
      if (n < 0) nowait_works_ = false;
      if (n > 0) {  // A partial message (never written so): finish it.
        ReadRest(reinterpret_cast<char*>(&message), n);
        return true;
      }
    }
    int available = 0;
    if (ioctl(read_fd_, FIONREAD, &available) < 0 ||
        available < static_cast<int>(sizeof message)) {
      return false;
    }
    ReadBlocking(message);
    return true;
  }

  void ReadBlocking(uint64_t& message) noexcept {
    ReadRest(reinterpret_cast<char*>(&message), 0);
  }

  void ReadRest(char* buf, ssize_t have) noexcept {
    while (have < static_cast<ssize_t>(sizeof(uint64_t))) {
      ssize_t n = read(read_fd_, buf + have, sizeof(uint64_t) - have);
      if (n > 0) {
        have += n;
      } else if (n == 0 || errno != EINTR) {
        // The peer is gone: no message will come; stop waiting.
        return;
      }
    }
  }

  int read_fd_;
  int write_fd_;
  bool nowait_works_ = true;
  std::unique_ptr<idle::Governor> governor_;
  idle::StateTable states_ = idle::DefaultStateTable();
  idle::IdleCounters counters_;
};

}  // namespace

absl::StatusOr<PipeLink> OpenPipeLink() {
  PipeLink link;
  for (auto& fds : link.fds) {
    if (pipe(fds) != 0) {
      return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
    }
  }
  return link;
}

absl::StatusOr<std::unique_ptr<Endpoint>> MakePipeEndpoint(
    const PipeLink& link, int side, const idle::IdleOptions& options) {
  absl::StatusOr<std::unique_ptr<idle::Governor>> governor =
      idle::MakeGovernor(options);
  if (!governor.ok()) return governor.status();
  return std::make_unique<PipeEndpoint>(
      link.fds[side][0], link.fds[1 - side][1], *std::move(governor));
}

}  // namespace haltpool::bench
