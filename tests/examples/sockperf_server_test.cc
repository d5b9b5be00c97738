// examples/echo_server --protocol=sockperf end to end over loopback: the
// real binary (server_process.h) on a free port, spoken to with messages
// crafted here the way sockperf 3.7's client builds them (no sockperf
// needed). Over TCP: a ping gets its reply, a message that asks for none
// gets none, several messages in one send and one message split over
// several sends are all answered, a malformed header closes the connection
// and the server answers a new client afterwards. Over UDP: the same, with
// short and malformed datagrams dropped. Then SIGTERM must stop it with
// exit status 0 and the totals. Both I/O backends; io_uring is skipped,
// with the reason, where the machine has none.
//
// The server's path comes as the first argument, as for echo_server_test.

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "examples/sockperf_protocol.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/examples/server_process.h"

namespace haltpool {
namespace {

using ::testing::HasSubstr;
using Bytes = std::vector<uint8_t>;

std::string g_server;  // Set by main().

// How long a test waits to be sure that no reply comes: long enough for a
// reply on loopback (tens of microseconds) to have arrived many times over.
constexpr int kNoReplyWaitMs = 100;

constexpr uint16_t kPing = sockperf::kFlagClient | sockperf::kFlagPongRequest;

// A message as sockperf's client builds it: header, then payload bytes.
Bytes Message(uint64_t seq, uint16_t flags, uint32_t length) {
  Bytes m(std::max<size_t>(length, sockperf::kHeaderBytes));
  sockperf::WriteHeader(sockperf::Header{seq, flags, length},
                        absl::MakeSpan(m));
  for (size_t i = sockperf::kHeaderBytes; i < m.size(); ++i) {
    m[i] = static_cast<uint8_t>(seq + i);
  }
  return m;
}

// A header alone, claiming `length` (a bad one, for the malformed cases).
Bytes HeaderOnly(uint64_t seq, uint32_t length) {
  Bytes h(sockperf::kHeaderBytes);
  sockperf::WriteHeader(sockperf::Header{seq, kPing, length},
                        absl::MakeSpan(h));
  return h;
}

// The reply sockperf's server sends: the client flag cleared.
Bytes Reply(Bytes m) {
  m[9] &= static_cast<uint8_t>(~sockperf::kFlagClient);
  return m;
}

// Writes all of `bytes` to `fd` (TCP, or one datagram). "" or the error.
std::string SendAll(int fd, const Bytes& bytes) {
  size_t sent = 0;
  while (sent < bytes.size() || bytes.empty()) {
    const ssize_t n =
        send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::string("send: ") + strerror(errno);
    sent += static_cast<size_t>(n);
    if (bytes.empty()) break;
  }
  return "";
}

// Reads exactly `want` bytes from the TCP socket `fd` into `*got` within
// kTimeoutMs. "" or what went wrong.
std::string RecvExactly(int fd, size_t want, Bytes* got) {
  got->clear();
  const int64_t deadline = NowMs() + kTimeoutMs;
  uint8_t buf[65536];
  while (got->size() < want) {
    pollfd p{fd, POLLIN, 0};
    const int64_t left = deadline - NowMs();
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) == 0) {
      return "timed out with " + std::to_string(got->size()) + " of " +
             std::to_string(want) + " bytes";
    }
    const ssize_t n =
        recv(fd, buf, std::min(sizeof(buf), want - got->size()), 0);
    if (n == 0) return "the server closed the connection";
    if (n < 0 && errno != EINTR) return std::string("recv: ") + strerror(errno);
    if (n > 0) got->insert(got->end(), buf, buf + n);
  }
  return "";
}

// True if nothing arrives on `fd` within kNoReplyWaitMs.
bool Silent(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, kNoReplyWaitMs) == 0;
}

// True if the server closes (or resets) the TCP connection `fd` within
// kTimeoutMs, after any bytes still in flight.
bool ClosedByServer(int fd) {
  const int64_t deadline = NowMs() + kTimeoutMs;
  uint8_t buf[4096];
  while (NowMs() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(deadline - NowMs())) <= 0) return false;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return true;
  }
  return false;
}

// Receives one datagram within kTimeoutMs into `*got`. "" or the error.
std::string RecvDatagram(int fd, Bytes* got) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, kTimeoutMs) != 1) return "no datagram came";
  got->resize(65536);
  const ssize_t n = recv(fd, got->data(), got->size(), 0);
  if (n < 0) return std::string("recv: ") + strerror(errno);
  got->resize(static_cast<size_t>(n));
  return "";
}

class SockperfServer : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(
        g_server,
        std::vector<std::string>{"--port=0", "--protocol=sockperf",
                                 "--workers=2", "--io=" + GetParam()});
    ASSERT_GT(server_->pid(), 0) << "cannot spawn " << g_server;
    const Listening l = AwaitListening(*server_, GetParam());
    if (!l.skip.empty()) GTEST_SKIP() << l.skip;
    ASSERT_TRUE(l.error.empty()) << l.error;
    port_ = l.port;
    EXPECT_EQ(server_->ReadLine(),
              "echo_server: sockperf over TCP and UDP "
              "on port " +
                  std::to_string(port_));
  }

  // Stops the server with SIGTERM; it must exit 0 with `totals` in stdout.
  void StopExpecting(const std::string& totals) {
    const Exit e = server_->Stop(SIGTERM);
    EXPECT_TRUE(e.exited && e.code == 0)
        << "the server " << e.Describe() << "; stderr:\n"
        << server_->err();
    EXPECT_THAT(server_->out(), HasSubstr(totals));
    EXPECT_EQ(server_->err(), "");
  }

  std::unique_ptr<ServerProcess> server_;
  int port_ = -1;
};

TEST_P(SockperfServer, TcpPingsSplitsBatchesAndMalformed) {
  const int fd = Connect(port_);
  ASSERT_GE(fd, 0) << strerror(errno);
  Bytes got;

  // A ping gets exactly its reply.
  const Bytes ping = Message(1, kPing, 64);
  ASSERT_EQ(SendAll(fd, ping), "");
  ASSERT_EQ(RecvExactly(fd, ping.size(), &got), "");
  EXPECT_EQ(got, Reply(ping));

  // Under-load and warmup messages get none.
  ASSERT_EQ(SendAll(fd, Message(2, sockperf::kFlagClient, 30)), "");
  ASSERT_EQ(SendAll(fd, Message(3, kPing | sockperf::kFlagWarmup, 30)), "");
  EXPECT_TRUE(Silent(fd));

  // Several in one send, mixed: only the pings come back, in order.
  Bytes batch, want;
  for (uint64_t seq = 10; seq < 30; ++seq) {
    const Bytes m = Message(seq, seq % 4 == 0 ? sockperf::kFlagClient : kPing,
                            static_cast<uint32_t>(14 + seq));
    batch.insert(batch.end(), m.begin(), m.end());
    if (seq % 4 != 0) {
      const Bytes r = Reply(m);
      want.insert(want.end(), r.begin(), r.end());
    }
  }
  ASSERT_EQ(SendAll(fd, batch), "");
  ASSERT_EQ(RecvExactly(fd, want.size(), &got), "");
  EXPECT_EQ(got, want);

  // One message split inside its header and inside its payload, with
  // pauses so the server receives the parts apart: one reply, once whole.
  const Bytes split = Message(40, kPing, 1000);
  ASSERT_EQ(SendAll(fd, Bytes(split.begin(), split.begin() + 5)), "");
  EXPECT_TRUE(Silent(fd));
  ASSERT_EQ(SendAll(fd, Bytes(split.begin() + 5, split.begin() + 500)), "");
  EXPECT_TRUE(Silent(fd));
  ASSERT_EQ(SendAll(fd, Bytes(split.begin() + 500, split.end())), "");
  ASSERT_EQ(RecvExactly(fd, split.size(), &got), "");
  EXPECT_EQ(got, Reply(split));

  // The largest message.
  const Bytes large = Message(41, kPing, sockperf::kMaxMessageBytes);
  ASSERT_EQ(SendAll(fd, large), "");
  ASSERT_EQ(RecvExactly(fd, large.size(), &got), "");
  EXPECT_EQ(got, Reply(large));

  // A header with a bad length closes the connection.
  ASSERT_EQ(SendAll(fd, HeaderOnly(42, 5)), "");
  EXPECT_TRUE(ClosedByServer(fd));
  close(fd);

  // Too long a length, on another connection, closes it too.
  const int fd2 = Connect(port_);
  ASSERT_GE(fd2, 0) << strerror(errno);
  ASSERT_EQ(SendAll(fd2, HeaderOnly(1, sockperf::kMaxMessageBytes + 1)), "");
  EXPECT_TRUE(ClosedByServer(fd2));
  close(fd2);

  // The server lives on: a new client is answered.
  const int fd3 = Connect(port_);
  ASSERT_GE(fd3, 0) << strerror(errno);
  const Bytes again = Message(1, kPing, 14);
  ASSERT_EQ(SendAll(fd3, again), "");
  ASSERT_EQ(RecvExactly(fd3, again.size(), &got), "");
  EXPECT_EQ(got, Reply(again));
  close(fd3);

  // 1 + 15 + 1 + 1 + 1 replies; 2 + 5 without; 2 closed.
  StopExpecting(
      "echo_server: sockperf: TCP 19 replies, 7 without reply, 2 connections "
      "closed as malformed; UDP 0 replies, 0 without reply, 0 dropped\n");
}

TEST_P(SockperfServer, UdpPingsShortAndMalformedDatagrams) {
  const int fd = ConnectLoopback(port_, SOCK_DGRAM);
  ASSERT_GE(fd, 0) << strerror(errno);
  Bytes got;

  const Bytes ping = Message(1, kPing, 20);
  ASSERT_EQ(SendAll(fd, ping), "");
  ASSERT_EQ(RecvDatagram(fd, &got), "");
  EXPECT_EQ(got, Reply(ping));

  // No reply: under load, warmup; dropped: empty, shorter than the header,
  // shorter than its length, bad lengths.
  const Bytes half = Message(5, kPing, 100);
  for (const Bytes& d :
       {Message(2, sockperf::kFlagClient, 20),
        Message(3, kPing | sockperf::kFlagWarmup, 20), Bytes{},
        Bytes(ping.begin(), ping.begin() + 10),
        Bytes(half.begin(), half.begin() + 50), HeaderOnly(6, 5),
        HeaderOnly(7, sockperf::kMaxMessageBytes + 1)}) {
    ASSERT_EQ(SendAll(fd, d), "");
  }
  EXPECT_TRUE(Silent(fd));

  // The server still answers, this socket and a new one, a large one too.
  const Bytes next = Message(8, kPing, 14);
  ASSERT_EQ(SendAll(fd, next), "");
  ASSERT_EQ(RecvDatagram(fd, &got), "");
  EXPECT_EQ(got, Reply(next));
  const int fd2 = ConnectLoopback(port_, SOCK_DGRAM);
  ASSERT_GE(fd2, 0) << strerror(errno);
  const Bytes large = Message(1, kPing, 60000);
  ASSERT_EQ(SendAll(fd2, large), "");
  ASSERT_EQ(RecvDatagram(fd2, &got), "");
  EXPECT_EQ(got, Reply(large));
  close(fd);
  close(fd2);

  StopExpecting(
      "echo_server: sockperf: TCP 0 replies, 0 without reply, 0 connections "
      "closed as malformed; UDP 3 replies, 2 without reply, 5 dropped\n");
}

INSTANTIATE_TEST_SUITE_P(Backends, SockperfServer,
                         testing::Values("uring", "epoll"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace haltpool

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc > 1) haltpool::g_server = argv[1];
  if (haltpool::g_server.empty()) {
    fprintf(stderr, "usage: sockperf_server_test PATH_TO_ECHO_SERVER\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
