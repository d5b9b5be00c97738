// examples/asio_echo as its users see it: the real binary started as a
// child process (server_process.h) on a free port with --executor=asio and
// --executor=haltpool; clients echo random data over loopback, checked byte
// for byte; SIGTERM or SIGINT must stop it with exit status 0 and the
// number of connections served. Bad flags must exit 2 with a message.
//
// The server's path comes as the first argument (BUILD: args =
// ["$(location //examples:asio_echo)"]).

#include <signal.h>
#include <unistd.h>

#include <cstdint>
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

// Parses "asio_echo: listening on 0.0.0.0:PORT (executor: NAME)": the
// port, or -1 if `line` is not that line with `executor`.
int ParseAsioListening(const std::string& line, const std::string& executor) {
  const std::string prefix = "asio_echo: listening on 0.0.0.0:";
  const std::string suffix = " (executor: " + executor + ")";
  if (line.rfind(prefix, 0) != 0 ||
      line.size() < prefix.size() + suffix.size() ||
      line.compare(line.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return -1;
  }
  return std::stoi(line.substr(prefix.size()));
}

// Random bytes of random sizes: tiny, around the server's 16 KiB buffer,
// and larger than a loopback socket's buffers.
std::vector<std::string> RandomMessages(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<size_t> sizes = {1, 16383, 16384, 16385, 300000};
  std::uniform_int_distribution<size_t> any_size(1, 100000);
  for (int i = 0; i < 5; ++i) sizes.push_back(any_size(rng));
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::string> messages;
  for (size_t n : sizes) {
    std::string m(n, '\0');
    for (char& c : m) c = static_cast<char>(byte(rng));
    messages.push_back(std::move(m));
  }
  return messages;
}

class AsioEcho : public testing::TestWithParam<const char*> {};

TEST_P(AsioEcho, EchoesRandomDataExactlyThenStopsOnSignal) {
  const std::string executor = GetParam();
  ServerProcess server(g_server, {"--executor=" + executor, "--port=0"});
  ASSERT_GT(server.pid(), 0) << "could not start " << g_server;
  const std::string line = server.ReadLine();
  const int port = ParseAsioListening(line, executor);
  ASSERT_GT(port, 0) << "first line: '" << line << "'; stderr:\n"
                     << server.err();

  constexpr int kClients = 8;
  std::vector<std::string> errors(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      const int fd = Connect(port);
      if (fd < 0) {
        errors[c] = "cannot connect";
        return;
      }
      for (const std::string& m : RandomMessages(1000 + c)) {
        errors[c] = EchoOnce(fd, m);
        if (!errors[c].empty()) break;
      }
      close(fd);
    });
  }
  for (std::thread& t : clients) t.join();
  for (int c = 0; c < kClients; ++c) {
    EXPECT_EQ(errors[c], "") << "client " << c;
  }

  // One connection left open, idle in async_read_some: the stop must end it.
  const int idle = Connect(port);
  ASSERT_GE(idle, 0);
  ASSERT_EQ(EchoOnce(idle, "still here"), "");
  const Exit e =
      server.Stop(executor == std::string("haltpool") ? SIGTERM : SIGINT);
  close(idle);
  EXPECT_TRUE(e.exited && e.code == 0)
      << "the server " << e.Describe() << "; stderr:\n"
      << server.err();
  EXPECT_THAT(server.out(),
              HasSubstr("asio_echo: stopped after " +
                        std::to_string(kClients + 1) + " connections\n"));
}

INSTANTIATE_TEST_SUITE_P(Executors, AsioEcho,
                         testing::Values("asio", "haltpool"));

TEST(AsioEchoFlags, BadFlagsExit2WithAMessage) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--executor=folly", "--executor='folly' is not an executor"},
      {"--port=70000", "--port='70000' is not a port"},
      {"--threads=2", "unknown flag '--threads'"},
      {"serve", "unexpected argument 'serve'"},
  };
  for (const auto& [arg, message] : cases) {
    ServerProcess server(g_server, {arg});
    ASSERT_GT(server.pid(), 0);
    const Exit e = server.Wait();
    EXPECT_TRUE(e.exited && e.code == 2) << arg << ": " << e.Describe();
    EXPECT_THAT(server.err(), HasSubstr(message)) << arg;
    EXPECT_THAT(server.err(), HasSubstr("usage: asio_echo")) << arg;
  }
}

}  // namespace
}  // namespace haltpool

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    fprintf(stderr, "usage: asio_echo_test PATH_TO_ASIO_ECHO\n");
    return 2;
  }
  haltpool::g_server = argv[1];
  return RUN_ALL_TESTS();
}
