// examples/echo_server under load, over loopback: 1,000 TCP connections at
// once, each a stream of messages of random sizes (1 B to 64 KiB, log-uniform
// from a seeded PRNG) sent one at a time, every byte of each echo checked
// in order as it comes back, for 30 s on each I/O backend. The server runs
// two workers, each with a tiny io_uring ring (HALTPOOL_IO_ENTRIES=4: 4
// submission and 8 completion queue entries for some 500 connections), so
// its completion queue overflows again and again. The test then checks that
// nothing was lost:
//   - every connection got back exactly the bytes it sent, in order, and the
//     server's "echoed N bytes" equals the clients' total;
//   - the server's statistics ("I/O queues: ...", printed at SIGTERM) count
//     overflow flushes, retries (a full submission queue) and no dropped
//     completion under io_uring; under epoll, whose overflow counter stays 0
//     (it is io_uring's), they count retries;
//   - the server holds as many file descriptors once the clients have
//     closed as before they connected, and exactly 1,000 more while they
//     are connected;
//   - SIGTERM stops it with exit status 0 and nothing on stderr (under the
//     sanitizer configs the server is instrumented too, so a report there
//     fails the test).
// The clients are two threads of this process, each driving 500 non-blocking
// sockets with epoll, so the test itself stays cheap next to the server.
//
// Arguments: the server's path (BUILD passes it), then optionally
// --seconds=N, how long the load lasts on each backend (default 30):
//   ./bazelw test //tests/examples:echo_load_test --test_arg=--seconds=5

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/examples/server_process.h"

namespace haltpool {
namespace {

std::string g_server;  // Set by main().
int g_seconds = 30;    // --seconds: how long the load lasts per backend.

constexpr int kConnections = 1000;
// Client threads, each with its own epoll set and its share of connections.
constexpr int kClientThreads = 2;
// Server workers: one per CPU of the 2-vCPU CI machine, so that each ring
// serves some 500 connections.
constexpr int kWorkers = 2;
// io_uring submission queue entries per worker (the completion queue gets
// twice as many): 8 completion entries for some 500 connections per worker
// were found overflowed about 300 times a second on the 2-vCPU CI machine,
// 70 under ThreadSanitizer (docs/POOL.md, "Reliability", has the figures).
constexpr int kRingEntries = 4;
// Messages are shorter than 2^16 bytes: 1 B to 64 KiB.
constexpr int kMaxMessageLog2 = 16;
// Seeds every connection's message sizes and bytes.
constexpr uint64_t kSeed = 20240611;
// No byte moved on any connection for this long: the test reports a hang.
// Far above any pause a loaded 2-vCPU machine (or a sanitizer) causes.
constexpr int64_t kStallMs = 20000;

// SplitMix64's output function (Steele, Lea and Flood, 2014): every input
// gives a well-mixed 64-bit word.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
  x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
  return x ^ (x >> 31);
}

// Byte `offset` of connection `stream`'s byte stream is byte offset % 8 of
// Mix(stream << 40 | offset / 8): any byte can be computed from its
// position, so neither side stores what it sent, and a byte lost, repeated
// or out of order shows as a mismatch. Fills out[0, n) with bytes
// [offset, offset + n).
void FillStream(uint64_t stream, uint64_t offset, char* out, size_t n) {
  const uint64_t base = stream << 40;
  size_t i = 0;
  while (i < n) {
    const uint64_t at = offset + i;
    const uint64_t word = Mix(base | (at / 8));
    const size_t skip = at % 8;
    const size_t take = std::min<size_t>(8 - skip, n - i);
    std::memcpy(out + i, reinterpret_cast<const char*>(&word) + skip, take);
    i += take;
  }
}

// One client connection and where its stream stands.
struct Connection {
  int fd = -1;
  uint64_t stream = 0;       // Which byte stream (FillStream) it sends.
  uint64_t size_state = 0;   // PRNG state of its message sizes.
  uint64_t sent = 0;         // Stream bytes sent.
  uint64_t received = 0;     // Stream bytes received back and checked.
  uint64_t message_end = 0;  // End of the message in flight; == received
                             // when none is.
  uint64_t messages = 0;     // Messages echoed whole.
  std::string error;         // What went wrong, if anything.

  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    if (fd >= 0) close(fd);
  }

  // The next message's size, 1 B to 64 KiB - 1: 2^k to 2^(k+1) - 1 bytes
  // for k uniform in [0, 16), so that every octave is as frequent.
  uint64_t NextSize() {
    const uint64_t k = Mix(size_state++) % kMaxMessageLog2;
    return (uint64_t{1} << k) + Mix(size_state++) % (uint64_t{1} << k);
  }
};

// A share of the connections, driven by one thread through one epoll set:
// edge-triggered, each ready socket sent to and received from until EAGAIN.
class ClientGroup {
 public:
  explicit ClientGroup(std::vector<Connection*> connections)
      : connections_(std::move(connections)) {}

  // Sends messages on every connection until `stop_ms` (NowMs), then lets
  // the messages in flight come back and returns. Errors go to each
  // connection's `error`, a stall to stall().
  void Run(int64_t stop_ms) {
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) {
      stall_ = std::string("epoll_create1: ") + strerror(errno);
      return;
    }
    for (size_t i = 0; i < connections_.size(); ++i) {
      epoll_event e{};
      e.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
      e.data.u64 = i;
      if (epoll_ctl(ep, EPOLL_CTL_ADD, connections_[i]->fd, &e) != 0) {
        connections_[i]->error = std::string("epoll_ctl: ") + strerror(errno);
      }
    }
    for (Connection* c : connections_) Pump(*c);
    int64_t last_progress = NowMs();
    std::vector<epoll_event> events(256);
    for (;;) {
      const int64_t now = NowMs();
      if (!stopping_ && now >= stop_ms) stopping_ = true;
      if (stopping_ && Idle()) break;
      if (now - last_progress > kStallMs) {
        stall_ =
            Describe("no byte moved for " + std::to_string(kStallMs) + " ms");
        break;
      }
      const int n =
          epoll_wait(ep, events.data(), static_cast<int>(events.size()), 100);
      if (n < 0 && errno != EINTR) {
        stall_ = std::string("epoll_wait: ") + strerror(errno);
        break;
      }
      for (int i = 0; i < n; ++i) {
        if (Pump(*connections_[events[i].data.u64])) last_progress = NowMs();
      }
    }
    close(ep);
  }

  // Why Run gave up ("" if it did not): a stall, with the connections that
  // still had a message in flight.
  const std::string& stall() const { return stall_; }

 private:
  // Sends what the message in flight has left and checks what came back,
  // starting the next message when one is echoed whole (until stopping),
  // until the socket would block both ways. True if any byte moved.
  bool Pump(Connection& c) {
    bool moved = false;
    while (c.error.empty()) {
      while (c.sent < c.message_end) {
        const size_t n = static_cast<size_t>(
            std::min<uint64_t>(c.message_end - c.sent, sizeof(out_)));
        FillStream(c.stream, c.sent, out_, n);
        const ssize_t r = send(c.fd, out_, n, MSG_NOSIGNAL);
        if (r > 0) {
          c.sent += static_cast<uint64_t>(r);
          moved = true;
        } else if (r < 0 && errno == EAGAIN) {
          break;
        } else if (r == 0 || errno != EINTR) {
          c.error = std::string("send: ") + strerror(errno);
          return moved;
        }
      }
      for (;;) {
        const ssize_t r = recv(c.fd, in_, sizeof(in_), 0);
        if (r > 0) {
          moved = true;
          Check(c, static_cast<size_t>(r));
          if (!c.error.empty()) return moved;
        } else if (r == 0) {
          c.error = "the server closed the connection";
          return moved;
        } else if (errno == EAGAIN) {
          break;
        } else if (errno != EINTR) {
          c.error = std::string("recv: ") + strerror(errno);
          return moved;
        }
      }
      if (c.received < c.message_end || stopping_) return moved;
      // The message in flight came back whole (or none was in flight yet):
      // start the next.
      c.message_end += c.NextSize();
    }
    return moved;
  }

  // Checks the `n` bytes just received into in_ against the stream.
  void Check(Connection& c, size_t n) {
    if (c.received + n > c.sent) {
      c.error = "received " + std::to_string(c.received + n) +
                " bytes, more than the " + std::to_string(c.sent) + " sent";
      return;
    }
    FillStream(c.stream, c.received, expected_, n);
    if (std::memcmp(in_, expected_, n) != 0) {
      size_t i = 0;
      while (in_[i] == expected_[i]) ++i;
      c.error = "byte " + std::to_string(c.received + i) +
                " of the stream differs (message " +
                std::to_string(c.messages) + ")";
      return;
    }
    c.received += n;
    if (c.received == c.message_end) ++c.messages;
  }

  // True once no connection has a message in flight (or every one failed).
  bool Idle() const {
    for (const Connection* c : connections_) {
      if (c->error.empty() && c->received < c->message_end) return false;
    }
    return true;
  }

  // `what`, and the first connections still waiting for their echo.
  std::string Describe(const std::string& what) const {
    std::ostringstream s;
    s << what << "; waiting:";
    int waiting = 0;
    for (const Connection* c : connections_) {
      if (!c->error.empty() || c->received >= c->message_end) continue;
      if (++waiting > 5) continue;
      s << " [stream " << c->stream << ": sent " << c->sent << ", received "
        << c->received << ", message ends at " << c->message_end << "]";
    }
    s << " (" << waiting << " connections in all)";
    return s.str();
  }

  std::vector<Connection*> connections_;
  bool stopping_ = false;  // Past stop_ms: no new message starts.
  std::string stall_;
  char out_[1 << kMaxMessageLog2];
  char in_[1 << kMaxMessageLog2];
  char expected_[1 << kMaxMessageLog2];
};

// Open file descriptors of process `pid` (entries of /proc/PID/fd), or -1.
int CountFds(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

// The fewest descriptors process `pid` held over 10 reads 20 ms apart: its
// steady count, without those it holds for a moment (the pool's contention
// monitor opens /proc/stat every 10 ms). -1 if it cannot be read.
int SteadyFds(pid_t pid) {
  int fewest = CountFds(pid);
  for (int i = 1; i < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    fewest = std::min(fewest, CountFds(pid));
  }
  return fewest;
}

// SteadyFds(pid) once it equals `want`, or after kTimeoutMs whatever it is.
int AwaitFds(pid_t pid, int want) {
  const int64_t deadline = NowMs() + kTimeoutMs;
  int n = SteadyFds(pid);
  while (n != want && NowMs() < deadline) n = SteadyFds(pid);
  return n;
}

// The per-worker counters of the server's statistics, summed.
struct IoTotals {
  int workers = 0;  // "I/O queues:" lines found.
  uint64_t cq_overflows = 0;
  uint64_t cqes_dropped = 0;
  uint64_t retries = 0;
  uint64_t polled = 0;
  uint64_t posted = 0;
  int wake_lines = 0;  // "I/O wakes" lines parsed, one per worker.
  uint64_t woke = 0;
};

IoTotals ParseIoTotals(const std::string& out) {
  IoTotals t;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    unsigned long long a = 0, b = 0, c = 0;
    if (sscanf(line.c_str(),
               "I/O queues: %llu completion queue overflows, %llu "
               "completions dropped, %llu retries",
               &a, &b, &c) == 3) {
      ++t.workers;
      t.cq_overflows += a;
      t.cqes_dropped += b;
      t.retries += c;
    } else if (sscanf(line.c_str(),
                      "I/O wakes: %llu found by polling, %llu posted while "
                      "polling, %llu ended a block",
                      &a, &b, &c) == 3) {
      ++t.wake_lines;
      t.polled += a;
      t.posted += b;
      t.woke += c;
    }
  }
  return t;
}

// The N of "echo_server: served C connections, echoed N bytes", or -1.
int64_t EchoedBytes(const std::string& out, int connections) {
  const std::string prefix = "echo_server: served " +
                             std::to_string(connections) +
                             " connections, echoed ";
  const size_t at = out.find(prefix);
  if (at == std::string::npos) return -1;
  return std::stoll(out.substr(at + prefix.size()));
}

class EchoLoad : public testing::TestWithParam<std::string> {};

TEST_P(EchoLoad, ThousandConnectionsLoseNothing) {
  const std::string& io = GetParam();
  rlimit limit;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0) << strerror(errno);
  if (limit.rlim_max < kConnections + 100) {
    GTEST_SKIP() << "the hard limit on open files, " << limit.rlim_max
                 << ", is too low for " << kConnections << " connections";
  }
  // Both this process and the server (which inherits it) hold a descriptor
  // per connection.
  limit.rlim_cur = limit.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0) << strerror(errno);

  ServerProcess server(g_server,
                       {"--port=0", "--workers=" + std::to_string(kWorkers)},
                       {"HALTPOOL_IO=" + io,
                        "HALTPOOL_IO_ENTRIES=" + std::to_string(kRingEntries)});
  ASSERT_GT(server.pid(), 0) << "cannot spawn " << g_server;
  const Listening l = AwaitListening(server, io);
  if (!l.skip.empty()) GTEST_SKIP() << l.skip;
  ASSERT_TRUE(l.error.empty()) << l.error;
  ASSERT_EQ(l.backend, io == "uring" ? "io_uring" : io);

  // Its descriptors before any client: stdio, the listening socket, each
  // worker's ring or epoll set and eventfd.
  const int fds_before = SteadyFds(server.pid());
  ASSERT_GT(fds_before, 0);

  std::vector<Connection> connections(kConnections);
  for (int i = 0; i < kConnections; ++i) {
    Connection& c = connections[i];
    c.fd = Connect(l.port);
    ASSERT_GE(c.fd, 0) << "connection " << i << ": " << strerror(errno);
    ASSERT_EQ(fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK), 0);
    c.stream = static_cast<uint64_t>(i);
    c.size_state = Mix(kSeed + static_cast<uint64_t>(i));
  }
  // All accepted and open at once on the server.
  const int fds_loaded = AwaitFds(server.pid(), fds_before + kConnections);
  EXPECT_EQ(fds_loaded, fds_before + kConnections);

  std::vector<std::unique_ptr<ClientGroup>> groups;
  for (int g = 0; g < kClientThreads; ++g) {
    std::vector<Connection*> share;
    for (int i = g; i < kConnections; i += kClientThreads) {
      share.push_back(&connections[i]);
    }
    groups.push_back(std::make_unique<ClientGroup>(std::move(share)));
  }
  const int64_t start_ms = NowMs();
  const int64_t stop_ms = start_ms + int64_t{g_seconds} * 1000;
  std::vector<std::thread> threads;
  for (auto& g : groups) {
    threads.emplace_back([&g, stop_ms] { g->Run(stop_ms); });
  }
  for (std::thread& t : threads) t.join();
  const int64_t took_ms = NowMs() - start_ms;
  for (auto& g : groups) EXPECT_EQ(g->stall(), "");

  uint64_t bytes = 0, messages = 0;
  int errors = 0;
  for (int i = 0; i < kConnections; ++i) {
    const Connection& c = connections[i];
    if (!c.error.empty() && ++errors <= 10) {
      ADD_FAILURE() << "connection " << i << ": " << c.error << " (sent "
                    << c.sent << ", received " << c.received << ")";
    }
    EXPECT_EQ(c.received, c.sent) << "connection " << i;
    EXPECT_GT(c.messages, 0u) << "connection " << i << " echoed nothing";
    bytes += c.received;
    messages += c.messages;
  }
  EXPECT_EQ(errors, 0);

  for (Connection& c : connections) {
    close(c.fd);
    c.fd = -1;
  }
  const int fds_after = AwaitFds(server.pid(), fds_before);
  EXPECT_EQ(fds_after, fds_before)
      << "the server holds descriptors its closed connections left";

  const Exit e = server.Stop(SIGTERM);
  EXPECT_TRUE(e.exited && e.code == 0)
      << "the server " << e.Describe() << "; stderr:\n"
      << server.err();
  EXPECT_EQ(server.err(), "");
  const std::string& out = server.out();
  EXPECT_EQ(EchoedBytes(out, kConnections), static_cast<int64_t>(bytes)) << out;
  const IoTotals io_totals = ParseIoTotals(out);
  EXPECT_EQ(io_totals.workers, kWorkers) << out;
  EXPECT_EQ(io_totals.wake_lines, kWorkers) << out;
  EXPECT_EQ(io_totals.cqes_dropped, 0u) << out;
  if (io == "uring") {
    EXPECT_GT(io_totals.cq_overflows, 0u)
        << "a completion queue of " << 2 * kRingEntries << " entries for "
        << kConnections / kWorkers
        << " connections per worker never overflowed:\n"
        << out;
    EXPECT_GT(io_totals.retries, 0u) << "a submission queue of " << kRingEntries
                                     << " entries was never found full:\n"
                                     << out;
  } else {
    // The queue counters are io_uring's; epoll has no completion queue.
    EXPECT_EQ(io_totals.cq_overflows, 0u) << out;
    // Every Recv that finds no data yet waits for readiness and is retried.
    EXPECT_GT(io_totals.retries, 0u) << out;
  }

  std::ostringstream summary;
  summary << "echo_load " << io << ": " << took_ms / 1000.0 << " s, "
          << kConnections << " connections, " << messages << " messages, "
          << bytes << " bytes echoed; server: " << io_totals.cq_overflows
          << " completion queue overflows, " << io_totals.cqes_dropped
          << " completions dropped, " << io_totals.retries
          << " retries; I/O wakes " << io_totals.polled << " polled, "
          << io_totals.posted << " posted, " << io_totals.woke
          << " ended a block; fds " << fds_before << " before, " << fds_loaded
          << " loaded, " << fds_after << " after";
  printf("%s\nThe server's output:\n%s\n", summary.str().c_str(), out.c_str());
  RecordProperty("summary", summary.str());
}

INSTANTIATE_TEST_SUITE_P(Backends, EchoLoad, testing::Values("uring", "epoll"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace haltpool

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--seconds=", 0) == 0) {
      char* end = nullptr;
      const long s = strtol(arg.c_str() + 10, &end, 10);
      if (*end != '\0' || s < 1 || s > 3600) {
        fprintf(stderr, "echo_load_test: --seconds: 1 to 3600\n");
        return 2;
      }
      haltpool::g_seconds = static_cast<int>(s);
    } else if (haltpool::g_server.empty()) {
      haltpool::g_server = arg;
    } else {
      fprintf(stderr, "echo_load_test: unexpected argument '%s'\n",
              arg.c_str());
      return 2;
    }
  }
  if (haltpool::g_server.empty()) {
    fprintf(stderr,
            "usage: echo_load_test PATH_TO_ECHO_SERVER [--seconds=N]\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
