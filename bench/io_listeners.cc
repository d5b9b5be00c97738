#include "bench/io_listeners.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/cycle_clock.h"
#include "arch/thread_affinity.h"
#include "runtime/pool_io.h"
#include "runtime/thread_pool.h"

namespace haltpool::bench {
namespace {

// Puts 8-byte messages together from what each receive returns (a stream
// socket may split one, though sent one at a time it never does).
struct MessageBuffer {
  char bytes[sizeof(int64_t)];
  size_t have = 0;

  char* next() { return bytes + have; }
  size_t room() const { return sizeof(bytes) - have; }
  // Counts `n` bytes received; true with the stamp once a message is whole.
  bool Add(size_t n, int64_t* stamp_ns) {
    have += n;
    if (have < sizeof(bytes)) return false;
    memcpy(stamp_ns, bytes, sizeof(bytes));
    have = 0;
    return true;
  }
};

class PoolListener final : public Listener {
 public:
  explicit PoolListener(Config config) : config_(std::move(config)) {}

  absl::Status Start(Channel& ch) override {
    ch_ = &ch;
    absl::StatusOr<std::unique_ptr<ThreadPool>> pool =
        ThreadPool::Create(config_);
    if (!pool.ok()) return pool.status();
    pool_ = *std::move(pool);
    std::atomic<bool> ready{false};
    absl::Status status;
    if (absl::Status s = pool_->Submit([&] {
          absl::StatusOr<PoolIo> io = pool_->Io();
          if (!io.ok()) {
            status = io.status();
          } else {
            io_.emplace(*io);
            thread_ = pthread_self();
            Arm();
          }
          ready.store(true, std::memory_order_release);
        });
        !s.ok()) {
      return s;
    }
    while (!ready.load(std::memory_order_acquire)) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    if (!status.ok()) {
      Stop();
      return status;
    }
    const PoolStats stats = pool_->Stats();
    cpu_ = stats.workers[0].cpu;
    setup_ = absl::StrCat(stats.workers[0].io_backend, " ",
                          stats.workers[0].io_setup, ", governor ",
                          stats.workers[0].idle.governor);
    return absl::OkStatus();
  }

  pthread_t thread() const override { return thread_; }
  int cpu() const override { return cpu_; }
  std::optional<WorkerIoCounts> IoCounts() const override {
    return pool_->Stats().workers[0].io;
  }
  std::string Setup() const override { return setup_; }
  void Stop() override { pool_.reset(); }

 private:
  void Arm() {
    io_->Recv(ch_->rx_fd, buffer_.next(), buffer_.room(),
              [this](int result) { OnRecv(result); });
  }

  void OnRecv(int result) {
    const int64_t now = arch::MonotonicNowNs();
    if (result <= 0) {
      ch_->Close(result);
      return;
    }
    int64_t stamp = 0;
    const bool whole = buffer_.Add(static_cast<size_t>(result), &stamp);
    // Re-armed before the acknowledgement, so the next message finds a
    // receive queued.
    Arm();
    if (whole) ch_->Take(stamp, now);
  }

  Config config_;
  Channel* ch_ = nullptr;
  std::unique_ptr<ThreadPool> pool_;
  std::optional<PoolIo> io_;  // The worker's; only the worker uses it.
  MessageBuffer buffer_;      // Only the worker.
  pthread_t thread_{};
  int cpu_ = -1;
  std::string setup_;
};

class ThreadListener final : public Listener {
 public:
  ThreadListener(bool epoll, int cpu) : epoll_(epoll), cpu_(cpu) {}

  absl::Status Start(Channel& ch) override {
    int ep = -1;
    if (epoll_) {
      ep = epoll_create1(EPOLL_CLOEXEC);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = ch.rx_fd;
      if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, ch.rx_fd, &ev) != 0) {
        const int e = errno;
        if (ep >= 0) close(ep);
        return absl::ErrnoToStatus(e, "epoll");
      }
    }
    thread_ = std::thread([this, &ch, ep] { Loop(ch, ep); });
    handle_ = thread_.native_handle();
    return absl::OkStatus();
  }

  pthread_t thread() const override { return handle_; }
  int cpu() const override { return cpu_; }
  void Stop() override {
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop(Channel& ch, int ep) {
    PinThisThread(cpu_);
    MessageBuffer buffer;
    for (;;) {
      if (ep >= 0) {
        epoll_event ev;
        const int n = epoll_wait(ep, &ev, 1, -1);
        if (n < 0 && errno != EINTR) {
          ch.Close(-errno);
          break;
        }
        if (n <= 0) continue;
      }
      const ssize_t r = recv(ch.rx_fd, buffer.next(), buffer.room(),
                             ep >= 0 ? MSG_DONTWAIT : 0);
      const int64_t now = arch::MonotonicNowNs();
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) {
        ch.Close(r < 0 ? -errno : 0);
        break;
      }
      int64_t stamp = 0;
      if (buffer.Add(static_cast<size_t>(r), &stamp)) ch.Take(stamp, now);
    }
    if (ep >= 0) close(ep);
  }

  const bool epoll_;
  const int cpu_;
  std::thread thread_;
  pthread_t handle_{};
};

}  // namespace

void Channel::Take(int64_t stamp_ns, int64_t now_ns) noexcept {
  const uint32_t i = acked.load(std::memory_order_relaxed);
  if (i < latency_ns.size()) latency_ns[i] = now_ns - stamp_ns;
  acked.store(i + 1, std::memory_order_release);
}

void Channel::Close(int result) noexcept {
  if (result < 0) error.store(result, std::memory_order_relaxed);
  closed.store(true, std::memory_order_release);
}

std::unique_ptr<Listener> MakePoolListener(Config config) {
  return std::make_unique<PoolListener>(std::move(config));
}

std::unique_ptr<Listener> MakeThreadListener(bool epoll, int cpu) {
  return std::make_unique<ThreadListener>(epoll, cpu);
}

void PinThisThread(int cpu) {
  if (cpu < 0) return;
  if (const absl::Status s = arch::SetThreadCpus({cpu}); !s.ok()) {
    absl::FPrintF(stderr, "io_wake: %s\n", s.message());
  }
}

}  // namespace haltpool::bench
