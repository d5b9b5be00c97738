// examples/echo_server as its users see it: the real binary is started as a
// child process (server_process.h) on a free port, 64 clients talk to it at
// once, then SIGTERM (or SIGINT) must stop it cleanly with exit status 0, its
// statistics and the right totals on stdout. Both I/O backends are run;
// io_uring is skipped, with the reason, where the machine has none. Bad
// flags must exit 2 with a message.
//
// The server's path comes as the first argument (BUILD: args =
// ["$(location //examples:echo_server)"], relative to the runfiles
// directory that bazel test starts in).

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <latch>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/examples/server_process.h"

namespace haltpool {
namespace {

using ::testing::HasSubstr;

std::string g_server;  // Set by main().

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
    server_ = std::make_unique<ServerProcess>(g_server, args);
    ASSERT_GT(server_->pid(), 0) << "cannot spawn " << g_server;
    const Listening l = AwaitListening(*server_, GetParam());
    if (!l.skip.empty()) GTEST_SKIP() << l.skip;
    ASSERT_TRUE(l.error.empty()) << l.error;
    port_ = l.port;
    EXPECT_EQ(l.backend, BackendName(GetParam()));
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
      {{"--protocol=http"},
       "--protocol='http' is not a known protocol; accepted: echo, sockperf"},
      {{"--protocol="}, "accepted: echo, sockperf"},
      {{"--workers=0"}, "--workers='0' is out of range; accepted: 1 to"},
      {{"--workers=many"}, "--workers='many'"},
      {{"--io=io_uring"}, "'io_uring'; accepted: auto|uring|epoll"},
      {{"--bogus=1"}, "unknown flag '--bogus'"},
      {{"--port"}, "unexpected argument '--port'"},
      {{"7777"}, "unexpected argument '7777'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args[0]);
    ServerProcess server(g_server, c.args);
    ASSERT_GT(server.pid(), 0);
    const Exit e = server.Wait();
    EXPECT_TRUE(e.exited && e.code == 2) << "the server " << e.Describe();
    EXPECT_THAT(server.err(), HasSubstr(c.message));
    EXPECT_THAT(server.err(), HasSubstr("usage: echo_server"));
    EXPECT_EQ(server.out(), "");
  }
}

TEST(EchoServerFlags, HelpPrintsTheUsageAndExits0) {
  ServerProcess server(g_server, {"--help"});
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
