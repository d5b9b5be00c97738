// examples/echo_server as its users see it: the real binary is started as a
// child process (posix_spawn) on a free port, 64 clients talk to it at once,
// then SIGTERM (or SIGINT) must stop it cleanly with exit status 0, its
// statistics and the right totals on stdout. Both I/O backends are run;
// io_uring is skipped, with the reason, where the machine has none. Bad
// flags must exit 2 with a message.
//
// The server's path comes as the first argument (BUILD: args =
// ["$(location //examples:echo_server)"], relative to the runfiles
// directory that bazel test starts in).

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

extern char** environ;

namespace haltpool {
namespace {

using ::testing::HasSubstr;

std::string g_server;  // Set by main().

// How long the test waits for the server to start, answer or exit. Far
// above what any of it takes (milliseconds), so only a hang trips it.
constexpr int64_t kTimeoutMs = 20000;

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

// How a child ended.
struct Exit {
  bool timed_out = false;  // Still running at the deadline: killed.
  bool exited = false;     // Left through exit (else a signal).
  int code = -1;           // Exit status if `exited`, else the signal.

  std::string Describe() const {
    if (timed_out) return "timed out and was killed";
    if (!exited) return "was killed by signal " + std::to_string(code);
    return "exited with status " + std::to_string(code);
  }
};

// One run of the server: spawned with its stdout and stderr on pipes.
class ServerProcess {
 public:
  // Starts the server with `args`; pid() is -1 if that failed.
  explicit ServerProcess(const std::vector<std::string>& args) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0) return;
    if (pipe2(err, O_CLOEXEC) != 0) {
      close(out[0]);
      close(out[1]);
      return;
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(g_server.c_str()));
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    // Whatever gtest's thread had blocked, the server starts with the
    // default dispositions and an empty mask.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, stops;
    sigemptyset(&none);
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGPIPE);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &stops);
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    if (posix_spawn(&pid, g_server.c_str(), &actions, &attr, argv.data(),
                    environ) == 0) {
      pid_ = pid;
    }
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
  }

  ~ServerProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
  }

  pid_t pid() const { return pid_; }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

  // Reads stdout until it holds a whole line, returning it (without the
  // newline), or "" if the server closed stdout or the deadline passed.
  std::string ReadLine() {
    const int64_t deadline = NowMs() + kTimeoutMs;
    for (;;) {
      const size_t nl = out_.find('\n', line_start_);
      if (nl != std::string::npos) {
        std::string line = out_.substr(line_start_, nl - line_start_);
        line_start_ = nl + 1;
        return line;
      }
      if (!Pump(deadline - NowMs())) return "";
    }
  }

  // Sends `sig`, reads stdout and stderr to their end, and reaps the
  // server; kills it if it is not gone within kTimeoutMs.
  Exit Stop(int sig) {
    kill(pid_, sig);
    return Wait();
  }

  // As Stop, without a signal: for a server expected to exit by itself.
  Exit Wait() {
    const int64_t deadline = NowMs() + kTimeoutMs;
    while (!(out_eof_ && err_eof_) && NowMs() < deadline) {
      Pump(deadline - NowMs());
    }
    Exit r;
    int status = 0;
    for (;;) {
      const pid_t w = waitpid(pid_, &status, WNOHANG);
      if (w == pid_) break;
      if (NowMs() >= deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        reaped_ = true;
        r.timed_out = true;
        return r;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    reaped_ = true;
    if (WIFEXITED(status)) {
      r.exited = true;
      r.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      r.code = WTERMSIG(status);
    }
    return r;
  }

 private:
  // Waits up to `timeout_ms` for output and appends what came. False if
  // nothing more can come (both pipes at their end) or time ran out.
  bool Pump(int64_t timeout_ms) {
    if (timeout_ms <= 0 || (out_eof_ && err_eof_)) return false;
    pollfd fds[2] = {{out_eof_ ? -1 : out_fd_, POLLIN, 0},
                     {err_eof_ ? -1 : err_fd_, POLLIN, 0}};
    const int n = poll(fds, 2, static_cast<int>(timeout_ms));
    if (n < 0) return errno == EINTR;
    if (n == 0) return false;
    char buf[4096];
    struct Stream {
      pollfd& p;
      std::string& text;
      bool& eof;
    };
    for (Stream s :
         {Stream{fds[0], out_, out_eof_}, Stream{fds[1], err_, err_eof_}}) {
      if (s.p.fd < 0 || s.p.revents == 0) continue;
      const ssize_t got = read(s.p.fd, buf, sizeof(buf));
      if (got > 0) {
        s.text.append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        s.eof = true;
      }
    }
    return true;
  }

  pid_t pid_ = -1;
  bool reaped_ = false;
  int out_fd_ = -1;
  int err_fd_ = -1;
  bool out_eof_ = false;
  bool err_eof_ = false;
  std::string out_, err_;
  size_t line_start_ = 0;
};

// Parses "echo_server: listening on 0.0.0.0:PORT (io: BACKEND)". Returns
// the port, -1 if `line` is not that line; `backend` gets BACKEND.
int ParseListeningLine(const std::string& line, std::string* backend) {
  const std::string prefix = "echo_server: listening on 0.0.0.0:";
  if (line.rfind(prefix, 0) != 0) return -1;
  size_t end = 0;
  const int port = std::stoi(line.substr(prefix.size()), &end);
  const std::string rest = line.substr(prefix.size() + end);
  if (rest.rfind(" (io: ", 0) != 0 || rest.back() != ')') return -1;
  *backend = rest.substr(6, rest.size() - 7);
  return port;
}

// A connected TCP socket to 127.0.0.1:`port`, or -1.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) !=
      0) {
    close(fd);
    return -1;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// Sends `message` on `fd` and reads the echo back at the same time (so a
// message larger than the socket buffers cannot deadlock). Returns "" if
// exactly `message` came back within the deadline, else what went wrong.
std::string EchoOnce(int fd, const std::string& message) {
  const int64_t deadline = NowMs() + kTimeoutMs;
  std::string echo;
  size_t sent = 0;
  char buf[65536];
  while (echo.size() < message.size()) {
    pollfd p{fd,
             static_cast<short>(POLLIN | (sent < message.size() ? POLLOUT : 0)),
             0};
    const int64_t left = deadline - NowMs();
    if (left <= 0) {
      return "timed out with " + std::to_string(sent) + " bytes sent, " +
             std::to_string(echo.size()) + " received of " +
             std::to_string(message.size());
    }
    if (poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) {
      return std::string("poll: ") + strerror(errno);
    }
    if ((p.revents & POLLOUT) != 0 && sent < message.size()) {
      const ssize_t n = send(fd, message.data() + sent, message.size() - sent,
                             MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return std::string("send: ") + strerror(errno);
      }
      if (n > 0) sent += static_cast<size_t>(n);
    }
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n == 0) return "the server closed the connection";
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return std::string("recv: ") + strerror(errno);
      }
      if (n > 0) echo.append(buf, static_cast<size_t>(n));
    }
  }
  if (echo.size() != message.size()) {
    return "received " + std::to_string(echo.size()) + " bytes for " +
           std::to_string(message.size());
  }
  if (echo != message) {
    size_t i = 0;
    while (echo[i] == message[i]) ++i;
    return "the echo differs at byte " + std::to_string(i) + " of " +
           std::to_string(message.size());
  }
  return "";
}

// Message sizes each client sends: tiny, around the server's 16 KiB buffer,
// past 64 KiB, and larger than a loopback socket's default buffers.
const std::vector<size_t> kSizes = {1,     7,     1000,  16383,
                                    16384, 16385, 65537, 300000};

size_t TotalBytes() {
  size_t total = 0;
  for (size_t s : kSizes) total += s;
  return total;
}

// Counts non-overlapping occurrences of `needle` in `text`.
int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

// The name the server prints for an --io value.
std::string BackendName(const std::string& io) {
  return io == "uring" ? "io_uring" : io;
}

class EchoServerBackend : public testing::TestWithParam<std::string> {
 protected:
  // Starts the server on a free port with --io=GetParam() and `extra`
  // flags, and reads its port. Skips where the backend is missing.
  void Start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--port=0", "--io=" + GetParam()};
    args.insert(args.end(), extra.begin(), extra.end());
    server_ = std::make_unique<ServerProcess>(args);
    ASSERT_GT(server_->pid(), 0) << "cannot spawn " << g_server;
    const std::string line = server_->ReadLine();
    if (line.empty()) {
      const Exit e = server_->Wait();
      if (GetParam() == "uring" && e.exited && e.code == 1 &&
          server_->err().find("io_uring") != std::string::npos) {
        GTEST_SKIP() << "no io_uring here: " << server_->err();
      }
      FAIL() << "the server " << e.Describe() << " before listening; stderr:\n"
             << server_->err();
    }
    std::string backend;
    port_ = ParseListeningLine(line, &backend);
    ASSERT_GT(port_, 0) << "unexpected first line: " << line;
    EXPECT_EQ(backend, BackendName(GetParam()));
  }

  std::unique_ptr<ServerProcess> server_;
  int port_ = -1;
};

TEST_P(EchoServerBackend, EchoesManyConcurrentClientsExactly) {
  constexpr int kClients = 64;
  constexpr int kWorkers = 2;
  Start({"--workers=" + std::to_string(kWorkers)});
  if (IsSkipped() || HasFatalFailure()) return;

  std::vector<std::string> errors(kClients);
  std::latch all_connected(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      const int fd = Connect(port_);
      all_connected.count_down();
      if (fd < 0) {
        errors[c] = std::string("connect: ") + strerror(errno);
        return;
      }
      // Every connection is open before any talks: 64 at once.
      all_connected.wait();
      std::mt19937 random(c);
      for (size_t size : kSizes) {
        std::string message(size, '\0');
        for (char& ch : message) ch = static_cast<char>(random());
        errors[c] = EchoOnce(fd, message);
        if (!errors[c].empty()) {
          errors[c] += " (message of " + std::to_string(size) + " bytes)";
          break;
        }
      }
      close(fd);
    });
  }
  for (std::thread& t : clients) t.join();
  for (int c = 0; c < kClients; ++c) {
    EXPECT_EQ(errors[c], "") << "client " << c;
  }

  const Exit e = server_->Stop(SIGTERM);
  EXPECT_TRUE(e.exited && e.code == 0)
      << "the server " << e.Describe() << "; stderr:\n"
      << server_->err();
  const std::string& out = server_->out();
  EXPECT_THAT(out, HasSubstr("shutting down"));
  EXPECT_THAT(out, HasSubstr("Timers cancelled at shutdown"));
  EXPECT_EQ(Count(out, "Tasks: "), kWorkers) << out;
  // One acceptor per worker: every worker used its I/O.
  EXPECT_EQ(Count(out, "I/O: " + BackendName(GetParam()) + ", "), kWorkers)
      << out;
  EXPECT_THAT(out,
              HasSubstr("echo_server: served " + std::to_string(kClients) +
                        " connections, echoed " +
                        std::to_string(kClients * TotalBytes()) + " bytes\n"));
  EXPECT_EQ(server_->err(), "");
}

TEST_P(EchoServerBackend, ShutdownEndsIdleAndBlockedConnections) {
  Start();
  if (IsSkipped() || HasFatalFailure()) return;

  // Connections that echoed once and stay open, idle.
  constexpr int kIdle = 8;
  std::vector<int> idle;
  for (int i = 0; i < kIdle; ++i) {
    const int fd = Connect(port_);
    ASSERT_GE(fd, 0) << strerror(errno);
    idle.push_back(fd);
    ASSERT_EQ(EchoOnce(fd, "ping " + std::to_string(i)), "");
  }
  // A client that sends without reading: the server's Send waits for
  // buffer space when the signal comes.
  const int stuck = Connect(port_);
  ASSERT_GE(stuck, 0) << strerror(errno);
  const std::string block(1 << 20, 'x');
  size_t sent = 0;
  const int64_t give_up = NowMs() + kTimeoutMs;
  while (NowMs() < give_up) {
    pollfd p{stuck, POLLOUT, 0};
    if (poll(&p, 1, 200) == 0) break;  // Both directions are full.
    const ssize_t n =
        send(stuck, block.data(), block.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) sent += static_cast<size_t>(n);
  }
  ASSERT_GT(sent, 0u);

  const Exit e = server_->Stop(SIGTERM);
  EXPECT_TRUE(e.exited && e.code == 0)
      << "the server " << e.Describe() << "; stderr:\n"
      << server_->err();
  EXPECT_THAT(server_->out(),
              HasSubstr("echo_server: served " + std::to_string(kIdle + 1) +
                        " connections"));
  EXPECT_EQ(server_->err(), "");
  // The idle clients see the end of the stream.
  for (int fd : idle) {
    char c;
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, kTimeoutMs), 1);
    EXPECT_LE(recv(fd, &c, 1, 0), 0);
    close(fd);
  }
  close(stuck);
}

TEST_P(EchoServerBackend, SigintStopsItAsSigtermDoes) {
  Start({"--workers=1"});
  if (IsSkipped() || HasFatalFailure()) return;
  const int fd = Connect(port_);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(EchoOnce(fd, "hello"), "");
  const Exit e = server_->Stop(SIGINT);
  EXPECT_TRUE(e.exited && e.code == 0)
      << "the server " << e.Describe() << "; stderr:\n"
      << server_->err();
  EXPECT_THAT(server_->out(),
              HasSubstr("echo_server: served 1 connections, echoed 5 bytes"));
  close(fd);
}

INSTANTIATE_TEST_SUITE_P(Backends, EchoServerBackend,
                         testing::Values("uring", "epoll"),
                         [](const auto& info) { return info.param; });

TEST(EchoServerFlags, BadFlagsExit2WithAMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;  // Expected in stderr.
  };
  const std::vector<Case> cases = {
      {{"--port=abc"}, "--port='abc' is not a port; accepted: 0 to 65535"},
      {{"--port=65536"}, "--port='65536'"},
      {{"--port=-1"}, "--port='-1'"},
      {{"--protocol=sockperf"},
       "--protocol='sockperf' is not a known protocol; accepted: echo"},
      {{"--protocol="}, "accepted: echo"},
      {{"--workers=0"}, "--workers='0' is out of range; accepted: 1 to"},
      {{"--workers=many"}, "--workers='many'"},
      {{"--io=io_uring"}, "'io_uring'; accepted: auto|uring|epoll"},
      {{"--bogus=1"}, "unknown flag '--bogus'"},
      {{"--port"}, "unexpected argument '--port'"},
      {{"7777"}, "unexpected argument '7777'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args[0]);
    ServerProcess server(c.args);
    ASSERT_GT(server.pid(), 0);
    const Exit e = server.Wait();
    EXPECT_TRUE(e.exited && e.code == 2) << "the server " << e.Describe();
    EXPECT_THAT(server.err(), HasSubstr(c.message));
    EXPECT_THAT(server.err(), HasSubstr("usage: echo_server"));
    EXPECT_EQ(server.out(), "");
  }
}

TEST(EchoServerFlags, HelpPrintsTheUsageAndExits0) {
  ServerProcess server({"--help"});
  ASSERT_GT(server.pid(), 0);
  const Exit e = server.Wait();
  EXPECT_TRUE(e.exited && e.code == 0) << "the server " << e.Describe();
  EXPECT_THAT(server.out(), HasSubstr("usage: echo_server"));
  EXPECT_THAT(server.out(), HasSubstr("--io=B"));
}

}  // namespace
}  // namespace haltpool

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc > 1) haltpool::g_server = argv[1];
  if (haltpool::g_server.empty()) {
    fprintf(stderr, "usage: echo_server_test PATH_TO_ECHO_SERVER\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
