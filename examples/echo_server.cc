// examples/echo_server: a TCP echo server on the pool's I/O. Shows how a
// server starts socket operations from tasks (ThreadPool::Io()), keeps each
// connection on the worker that accepted it, and shuts down cleanly on
// SIGINT or SIGTERM.
//
// ./bazelw run //examples:echo_server -- --port=7777
//
// --protocol picks what a connection speaks:
//   echo      (default) every byte received is sent back.
//   sockperf  the server side of `sockperf ping-pong` (Debian's sockperf
//             3.7), over TCP and over UDP on the same port number: each
//             message that asks for a reply comes back with the client flag
//             cleared; other messages get none (sockperf_protocol.h). A TCP
//             connection that sends a malformed header is closed; a short or
//             malformed datagram is dropped. UDP is served by
//             sockperf_udp_server.h (a receiver thread hands each datagram
//             to the pool: the pool's I/O has no recvfrom). Measure with
//               sockperf ping-pong -i 127.0.0.1 -p 7777 [--tcp] -t 2
//             or tools/bench-sockperf, which compares it with `sockperf sr`.
//
// Design. Every acceptor and every connection is a coroutine
// (runtime/coro/): one accept loop per worker, started inline by a start-up
// task on that worker (ThreadPool::SpawnInline), so its Accepts go through
// that worker's reactor; each connection it accepts is a coroutine started
// inline there too, and since an I/O completion resumes its coroutine on the
// worker that started the operation, connections spread over the workers
// as the kernel hands them to the pending accepts, with no locking between
// workers on the data path. An echo connection receives into a 16 KiB
// buffer in its frame, sends back what came, receives again; end of stream
// or an error ends it (echo_connection.h). A sockperf connection is the
// same loop around a StreamFramer: receive, frame whole messages, send the
// replies they ask for, receive again (sockperf_tcp_connection.h).
//
// Shutdown. main() blocks SIGINT and SIGTERM before the pool starts (the
// workers inherit the mask) and waits for them in sigwait(). Then: stop the
// UDP receiver (sockperf), stop accepting (shutdown() of the listening socket
// completes every pending Accept with an error), shutdown() every open
// connection (their pending Recv and Send complete), wait until no connection
// and no acceptor is left, shut the pool down, print its statistics and the
// totals. Nothing is in flight when the pool stops (and were it, the pool
// would end it with -ECANCELED, so each coroutine would still finish).
//
// Limits. At start-up the soft limit on open files is raised to the hard
// limit (RLIMIT_NOFILE), as Go's runtime does since Go 1.19: each connection
// holds a descriptor, and the usual soft limit of 1024 (kept low for
// programs that still use select(), which this one does not) stops a server
// near a thousand connections. Past the hard limit, accept fails with
// EMFILE and the acceptor retries after kAcceptRetry.
//
// Metrics. --metrics_port=N also serves GET /metrics on that port: the pool's
// statistics in the OpenMetrics text format (metrics_endpoint.h), for
// Prometheus; 0 picks a free port and prints it. It stops before the
// connections do.
//
// Exit status: 0 after a clean shutdown; 1 if the server could not start or
// connections were still open when the drain timed out; 2 on a bad flag.

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "examples/connection_owner.h"
#include "examples/echo_connection.h"
#include "examples/metrics_endpoint.h"
#include "examples/sockperf_tcp_connection.h"
#include "examples/sockperf_udp_server.h"
#include "runtime/coro/async_io.h"
#include "runtime/coro/task.h"
#include "runtime/io/io_backend.h"
#include "runtime/pool_io.h"
#include "runtime/pool_stats.h"
#include "runtime/thread_pool.h"

namespace {

// The port when --port is not given: an unassigned one, easy to type.
constexpr int kDefaultPort = 7777;

// How long shutdown waits for connections and acceptors to finish. Every
// pending operation completes as soon as its socket is shut down, so this
// only bounds a bug; two seconds is what an operator waits for Ctrl-C.
constexpr absl::Duration kDrainTimeout = absl::Seconds(2);

// How long each start-up task holds its worker waiting for the others, so
// that the acceptors land on distinct workers. Past it (a worker not
// scheduled for a second), the ones that arrived go on alone.
constexpr absl::Duration kSpreadTimeout = absl::Seconds(1);

// Pause before accepting again after a failure that may pass by itself
// (EMFILE, ENFILE, ENOBUFS, ENOMEM), instead of spinning on it.
constexpr absl::Duration kAcceptRetry = absl::Milliseconds(10);

// --workers above this is taken for a typo; the pool itself has no limit.
constexpr int kMaxWorkers = 1024;

constexpr absl::string_view kProtocols = "echo, sockperf";

constexpr char kUsage[] =
    "usage: echo_server [--help] [--port=N] [--protocol=echo|sockperf] "
    "[--workers=N] [--io=auto|uring|epoll] [--metrics_port=N]\n"
    "  --port=N       TCP port to listen on, 0-65535 (default 7777; 0: a "
    "free port, printed)\n"
    "  --protocol=P   what to speak: echo, or sockperf (sockperf ping-pong's "
    "server, over TCP and UDP on the same port) (default echo)\n"
    "  --workers=N    pool workers, 1-1024 (default: one per usable CPU)\n"
    "  --io=B         I/O backend: auto, uring or epoll (default auto)\n"
    "  --metrics_port=N  serve GET /metrics (OpenMetrics) on this TCP port, "
    "0-65535 (0: a free port, printed; default -1: off)\n";

enum class Protocol { kEcho, kSockperf };

struct Flags {
  bool help = false;  // --help: print the usage and exit 0.
  int port = kDefaultPort;
  Protocol protocol = Protocol::kEcho;
  int workers = 0;  // 0: the pool's default.
  haltpool::IoBackend io = haltpool::IoBackend::kAuto;
  int metrics_port = -1;  // -1: no metrics endpoint.
};

// Parses --name=value flags. InvalidArgument naming the flag, the value and
// what is accepted; the caller prints it with the usage.
absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--help") {
      flags.help = true;
      continue;
    }
    const size_t eq = arg.find('=');
    if (!absl::StartsWith(arg, "--") || eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg,
                       "'; flags are --port, --protocol, --workers, --io, "
                       "--metrics_port, each as --name=value"));
    }
    const absl::string_view name = arg.substr(0, eq);
    const absl::string_view value = arg.substr(eq + 1);
    if (name == "--port") {
      if (!absl::SimpleAtoi(value, &flags.port) || flags.port < 0 ||
          flags.port > 65535) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--port='", value, "' is not a port; accepted: 0 to 65535"));
      }
    } else if (name == "--protocol") {
      if (value == "echo") {
        flags.protocol = Protocol::kEcho;
      } else if (value == "sockperf") {
        flags.protocol = Protocol::kSockperf;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--protocol='", value,
                         "' is not a known protocol; accepted: ", kProtocols));
      }
    } else if (name == "--workers") {
      if (!absl::SimpleAtoi(value, &flags.workers) || flags.workers < 1 ||
          flags.workers > kMaxWorkers) {
        return absl::InvalidArgumentError(
            absl::StrCat("--workers='", value,
                         "' is out of range; accepted: 1 to ", kMaxWorkers));
      }
    } else if (name == "--metrics_port") {
      if (!absl::SimpleAtoi(value, &flags.metrics_port) ||
          flags.metrics_port < -1 || flags.metrics_port > 65535) {
        return absl::InvalidArgumentError(
            absl::StrCat("--metrics_port='", value,
                         "' is not a port; accepted: 0 to 65535, or -1 (off)"));
      }
    } else if (name == "--io") {
      absl::StatusOr<haltpool::IoBackend> io = haltpool::ParseIoBackend(value);
      if (!io.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--io: ", io.status().message()));
      }
      flags.io = *io;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", name,
                       "'; accepted: --port, --protocol, --workers, --io, "
                       "--metrics_port"));
    }
  }
  return flags;
}

// A TCP socket listening on 0.0.0.0:`port` (0: a free port), SOCK_CLOEXEC,
// blocking; the port it got goes to `bound_port`.
absl::StatusOr<int> Listen(int port, int* bound_port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "socket failed");
  const int one = 1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
      bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) < 0 ||
      listen(fd, SOMAXCONN) < 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) < 0) {
    const int error = errno;
    close(fd);
    return absl::ErrnoToStatus(error,
                               absl::StrCat("cannot listen on 0.0.0.0:", port));
  }
  *bound_port = ntohs(addr.sin_port);
  return fd;
}

// Raises the soft limit on open files to the hard limit (see "Limits"
// above). Best effort: should setrlimit fail, the soft limit stays.
void RaiseOpenFileLimit() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 &&
      limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// The server: its acceptors, its open connections and its totals. Created
// and stopped by main(); its callbacks run on the pool's workers.
class EchoServer final : public haltpool::examples::ConnectionOwner {
 public:
  // Serves `listen_fd` (owned by the caller, open until after Stop) on
  // `pool`'s workers, speaking `protocol` on every connection.
  EchoServer(haltpool::ThreadPool* pool, int listen_fd, Protocol protocol)
      : pool_(pool), listen_fd_(listen_fd), protocol_(protocol) {}

  // Starts one acceptor per worker and returns the I/O backend's name once
  // every one is accepting. Fails with the reactor's setup error (io=uring
  // without io_uring). Blocks up to about kSpreadTimeout; main thread only,
  // once.
  absl::StatusOr<std::string> Start();

  // Stops accepting, shuts down every open connection, and waits up to
  // `timeout` until no connection and no acceptor is left. True if that
  // happened in time. Main thread only, once, after Start.
  bool Stop(absl::Duration timeout);

  uint64_t connections_served() const {
    return served_.load(std::memory_order_relaxed);
  }

  // ConnectionOwner. CloseConnection runs under the mutex, so that Stop
  // never shuts down a number that has been closed and reused.
  void CloseConnection(int fd) override;
  haltpool::examples::ConnectionTotals& totals() override { return totals_; }

 private:
  // One worker's accept loop.
  haltpool::Task<void> AcceptLoop();

  // The body of each start-up task.
  void StartOnWorker(int workers);
  // Takes a freshly accepted `fd`: serves it on the calling worker, or
  // closes it if the server is stopping.
  void Serve(int fd);
  void AcceptorEnded();
  bool stopping() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  }

  haltpool::ThreadPool* const pool_;
  const int listen_fd_;
  const Protocol protocol_;
  std::atomic<uint64_t> served_{0};
  haltpool::examples::ConnectionTotals totals_;

  // std::mutex, not absl::Mutex: the system's absl is not built for
  // ThreadSanitizer, which would not see its synchronization.
  mutable std::mutex mu_;
  std::condition_variable changed_;     // Any field below changed.
  bool stopping_ = false;               // Guarded by mu_.
  std::unordered_set<int> open_;        // Guarded by mu_.
  int acceptors_ = 0;                   // Guarded by mu_.
  int arrived_ = 0;                     // Start-up tasks running; mu_.
  int started_ = 0;                     // Start-up tasks done; mu_.
  std::vector<bool> worker_accepting_;  // By worker index; mu_.
  absl::Status start_error_;            // Guarded by mu_.
  std::string backend_;                 // Guarded by mu_.
};

// Accepts connections on the calling worker until the listening socket
// fails, and starts each connection's coroutine here, on this worker.
haltpool::Task<void> EchoServer::AcceptLoop() {
  haltpool::AsyncIo io(*pool_);
  for (;;) {
    const int result = co_await io.Accept(listen_fd_);
    if (result >= 0) Serve(result);
    if (stopping() || result == -EINVAL || result == -EBADF ||
        result == -ECANCELED) {
      break;  // Stop shut the listening socket down, or it is gone.
    }
    if (result == -EMFILE || result == -ENFILE || result == -ENOBUFS ||
        result == -ENOMEM) {
      fprintf(stderr, "echo_server: accept: %s; retrying in %lld ms\n",
              strerror(-result),
              static_cast<long long>(absl::ToInt64Milliseconds(kAcceptRetry)));
      co_await io.Timeout(kAcceptRetry);
      if (stopping()) break;
    }
    // Else a connection, or one that was aborted before we took it.
  }
  AcceptorEnded();
}

absl::StatusOr<std::string> EchoServer::Start() {
  const int workers = pool_->size();
  {
    std::lock_guard<std::mutex> lock(mu_);
    worker_accepting_.assign(workers, false);
  }
  for (int i = 0; i < workers; ++i) {
    absl::Status s = pool_->Submit([this, workers] { StartOnWorker(workers); });
    if (!s.ok()) return s;
  }
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this, workers] { return started_ == workers; });
  if (!start_error_.ok()) return start_error_;
  return backend_;
}

void EchoServer::StartOnWorker(int workers) {
  {
    // Hold this worker until every start-up task runs: a worker running
    // one cannot run another, so they land on distinct workers.
    std::unique_lock<std::mutex> lock(mu_);
    ++arrived_;
    changed_.notify_all();
    changed_.wait_for(lock, absl::ToChronoMilliseconds(kSpreadTimeout),
                      [this, workers] { return arrived_ >= workers; });
  }
  absl::StatusOr<haltpool::PoolIo> io = pool_->Io();
  const int worker = haltpool::ThreadPool::CurrentWorkerIndex();
  bool accept_here = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!io.ok()) {
      start_error_ = io.status();
    } else if (!worker_accepting_[worker]) {
      worker_accepting_[worker] = true;
      backend_ = std::string(io->backend());
      ++acceptors_;
      accept_here = true;
    }
  }
  // Started here, it issues its first Accept on this worker's reactor.
  if (accept_here) pool_->SpawnInline(AcceptLoop()).IgnoreError();
  std::lock_guard<std::mutex> lock(mu_);
  ++started_;
  changed_.notify_all();
}

void EchoServer::Serve(int fd) {
  bool refused = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      open_.insert(fd);
      served_.fetch_add(1, std::memory_order_relaxed);
      refused = false;
    }
  }
  if (refused) {
    close(fd);  // Accepted while stopping: Stop has shut the others down.
    return;
  }
  // Registered: from now on only the connection itself closes `fd`.
  // Started inline: its first Recv goes out from this worker at once.
  pool_
      ->SpawnInline(
          protocol_ == Protocol::kSockperf
              ? haltpool::sockperf::SockperfConnection(*pool_, fd, this)
              : haltpool::examples::EchoConnection(*pool_, fd, this))
      .IgnoreError();
}

void EchoServer::CloseConnection(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.erase(fd);
  close(fd);
  changed_.notify_all();
}

void EchoServer::AcceptorEnded() {
  std::lock_guard<std::mutex> lock(mu_);
  --acceptors_;
  changed_.notify_all();
}

bool EchoServer::Stop(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  // Pending Accepts complete with -EINVAL; pending Recvs with 0 and Sends
  // with -EPIPE, so every callback runs and frees its record.
  shutdown(listen_fd_, SHUT_RDWR);
  for (int fd : open_) shutdown(fd, SHUT_RDWR);
  return changed_.wait_for(lock, absl::ToChronoMilliseconds(timeout),
                           [this] { return open_.empty() && acceptors_ == 0; });
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<Flags> flags = ParseFlags(argc, argv);
  if (!flags.ok()) {
    absl::FPrintF(stderr, "echo_server: %s\n%s", flags.status().message(),
                  kUsage);
    return 2;
  }
  if (flags->help) {
    printf("%s", kUsage);
    return 0;
  }

  // Before any thread exists, so every worker inherits the mask and the
  // signals wait for sigwait() below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  if (int e = pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr); e != 0) {
    fprintf(stderr, "echo_server: pthread_sigmask: %s\n", strerror(e));
    return 1;
  }

  RaiseOpenFileLimit();
  int port = 0;
  absl::StatusOr<int> listen_fd = Listen(flags->port, &port);
  if (!listen_fd.ok()) {
    absl::FPrintF(stderr, "echo_server: %s\n", listen_fd.status().message());
    return 1;
  }

  haltpool::PoolOptions options;
  options.workers = flags->workers;
  options.io = flags->io;
  absl::StatusOr<std::unique_ptr<haltpool::ThreadPool>> pool =
      haltpool::ThreadPool::Create(options);
  if (!pool.ok()) {
    absl::FPrintF(stderr, "echo_server: %s\n", pool.status().message());
    return 1;
  }

  // sockperf's UDP on the TCP port's number. Destroyed (closing its
  // socket) only after the pool has shut down: queued replies use it.
  std::unique_ptr<haltpool::sockperf::UdpServer> udp;
  if (flags->protocol == Protocol::kSockperf) {
    absl::StatusOr<std::unique_ptr<haltpool::sockperf::UdpServer>> created =
        haltpool::sockperf::UdpServer::Create(pool->get(), port);
    if (!created.ok()) {
      absl::FPrintF(stderr, "echo_server: %s\n", created.status().message());
      return 1;
    }
    udp = *std::move(created);
  }

  EchoServer server(pool->get(), *listen_fd, flags->protocol);
  absl::StatusOr<std::string> backend = server.Start();
  if (!backend.ok()) {
    absl::FPrintF(stderr, "echo_server: --io=%s: %s\n",
                  haltpool::IoBackendName(flags->io),
                  backend.status().message());
    // Acceptors that did start hold operations in flight: stop them first.
    server.Stop(kDrainTimeout);
    (*pool)->Shutdown();
    return 1;
  }
  printf("echo_server: listening on 0.0.0.0:%d (io: %s)\n", port,
         backend->c_str());
  if (udp != nullptr) {
    udp->Start();
    printf("echo_server: sockperf over TCP and UDP on port %d\n", port);
  }
  std::unique_ptr<haltpool::examples::MetricsEndpoint> metrics;
  int metrics_fd = -1;
  if (flags->metrics_port >= 0) {
    int bound = 0;
    absl::StatusOr<int> fd = Listen(flags->metrics_port, &bound);
    absl::Status started = fd.status();
    if (fd.ok()) {
      metrics_fd = *fd;
      metrics = std::make_unique<haltpool::examples::MetricsEndpoint>(
          pool->get(), metrics_fd);
      started = metrics->Start();
    }
    if (!started.ok()) {
      absl::FPrintF(stderr, "echo_server: --metrics_port: %s\n",
                    started.message());
      if (udp != nullptr) udp->Stop();
      server.Stop(kDrainTimeout);
      (*pool)->Shutdown();
      return 1;
    }
    printf("echo_server: metrics on 0.0.0.0:%d (GET /metrics)\n", bound);
  }
  fflush(stdout);

  int signal_number = 0;
  while (sigwait(&stop_signals, &signal_number) != 0) {
  }
  printf("echo_server: %s, shutting down\n", strsignal(signal_number));
  fflush(stdout);

  if (udp != nullptr) udp->Stop();
  bool drained = metrics == nullptr || metrics->Stop(kDrainTimeout);
  drained = server.Stop(kDrainTimeout) && drained;
  if (!drained) {
    absl::FPrintF(stderr,
                  "echo_server: connections still open after %s; the pool's "
                  "shutdown cancels their I/O\n",
                  absl::FormatDuration(kDrainTimeout));
  }
  (*pool)->Shutdown();
  close(*listen_fd);
  if (metrics_fd >= 0) close(metrics_fd);

  absl::PrintF("\n%s\n", haltpool::FormatPoolStatsText((*pool)->Stats()));
  haltpool::examples::ConnectionTotals& totals = server.totals();
  printf("echo_server: served %llu connections, echoed %llu bytes\n",
         static_cast<unsigned long long>(server.connections_served()),
         static_cast<unsigned long long>(totals.bytes_sent.load()));
  if (udp != nullptr) {
    printf(
        "echo_server: sockperf: TCP %llu replies, %llu without reply, %llu "
        "connections closed as malformed; UDP %llu replies, %llu without "
        "reply, %llu dropped\n",
        static_cast<unsigned long long>(totals.sockperf_replies.load()),
        static_cast<unsigned long long>(totals.sockperf_no_reply.load()),
        static_cast<unsigned long long>(totals.sockperf_malformed.load()),
        static_cast<unsigned long long>(udp->replies()),
        static_cast<unsigned long long>(udp->no_reply()),
        static_cast<unsigned long long>(udp->dropped()));
  }
  fflush(stdout);
  return drained ? 0 : 1;
}
