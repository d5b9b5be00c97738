// What only the epoll backend (runtime/io/epoll_reactor.h) promises: it
// needs nothing from the kernel beyond epoll and eventfd, it tries socket
// calls before waiting, operations on one fd complete in order, immediate
// completions are visible to CompletionReady(), timers bound WaitUntil, and
// Accept/Connect put their sockets into non-blocking mode.

#include "runtime/io/epoll_reactor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "arch/cycle_clock.h"
#include "gtest/gtest.h"

namespace haltpool {
namespace {

using arch::kNoDeadline;
using arch::MonotonicNowNs;

constexpr int64_t kMs = 1000000;
constexpr int64_t kSecond = 1000 * kMs;

class EpollReactorTest : public testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<EpollReactor>> r = EpollReactor::Create();
    ASSERT_TRUE(r.ok()) << r.status();
    reactor_ = std::move(*r);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv_), 0);
  }
  void TearDown() override {
    reactor_.reset();
    close(sv_[0]);
    close(sv_[1]);
  }

  std::unique_ptr<EpollReactor> reactor_;
  int sv_[2] = {-1, -1};
};

TEST_F(EpollReactorTest, ImmediateCompletionsAreReadyWithoutASystemCall) {
  EXPECT_FALSE(reactor_->CompletionReady());
  // Data is there already: recv succeeds inside Recv().
  ASSERT_EQ(write(sv_[1], "hi", 2), 2);
  int got = -1;
  char buf[4];
  reactor_->Recv(sv_[0], buf, sizeof(buf), [&](int r) { got = r; });
  EXPECT_TRUE(reactor_->CompletionReady());
  EXPECT_EQ(got, -1) << "callbacks run from ReapCompletions only";
  EXPECT_EQ(reactor_->ReapCompletions(), 1);
  EXPECT_EQ(got, 2);
  EXPECT_FALSE(reactor_->CompletionReady());

  // A due timer is a completion too.
  reactor_->Timeout(0, [](int) {});
  EXPECT_TRUE(reactor_->CompletionReady());
  EXPECT_EQ(reactor_->ReapCompletions(), 1);
}

TEST_F(EpollReactorTest, OperationsOnOneFdCompleteInOrder) {
  std::string order;
  char a = 0, b = 0, c = 0;
  reactor_->Recv(sv_[0], &a, 1, [&](int r) {
    ASSERT_EQ(r, 1);
    order += a;
  });
  reactor_->Recv(sv_[0], &b, 1, [&](int r) {
    ASSERT_EQ(r, 1);
    order += b;
  });
  reactor_->Recv(sv_[0], &c, 1, [&](int r) {
    ASSERT_EQ(r, 1);
    order += c;
  });
  EXPECT_EQ(reactor_->ReapCompletions(), 0);
  ASSERT_EQ(write(sv_[1], "xyz", 3), 3);
  const int64_t give_up = MonotonicNowNs() + 20 * kSecond;
  while (order.size() < 3 && MonotonicNowNs() < give_up) {
    reactor_->WaitUntil(give_up);
    reactor_->ReapCompletions();
  }
  EXPECT_EQ(order, "xyz");
}

TEST_F(EpollReactorTest, ReadersAndWritersOfOneFdWaitIndependently) {
  // Fill the send buffer so a Send has to wait, with a Recv waiting too.
  const int small = 4096;
  setsockopt(sv_[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
  std::string filler(1 << 20, 'f');
  while (send(sv_[0], filler.data(), filler.size(), MSG_DONTWAIT) > 0) {
  }
  int sent = -1, received = -1;
  char buf[4];
  reactor_->Send(sv_[0], "abc", 3, [&](int r) { sent = r; });
  reactor_->Recv(sv_[0], buf, sizeof(buf), [&](int r) { received = r; });
  EXPECT_EQ(reactor_->ReapCompletions(), 0);
  EXPECT_EQ(reactor_->in_flight(), 2u);
  // Data for the reader first: the writer stays parked.
  ASSERT_EQ(write(sv_[1], "r", 1), 1);
  const int64_t give_up = MonotonicNowNs() + 20 * kSecond;
  while (received < 0 && MonotonicNowNs() < give_up) {
    reactor_->WaitUntil(give_up);
    reactor_->ReapCompletions();
  }
  EXPECT_EQ(received, 1);
  EXPECT_EQ(sent, -1);
  // Drain the peer: the writer goes.
  std::string sink(1 << 20, '\0');
  while (sent < 0 && MonotonicNowNs() < give_up) {
    while (recv(sv_[1], sink.data(), sink.size(), MSG_DONTWAIT) > 0) {
    }
    reactor_->WaitUntil(MonotonicNowNs() + 10 * kMs);
    reactor_->ReapCompletions();
  }
  EXPECT_EQ(sent, 3);
}

TEST_F(EpollReactorTest, TimerBoundsAWaitWithoutDeadline) {
  const int64_t start = MonotonicNowNs();
  reactor_->Timeout(20 * kMs, [](int) {});
  EXPECT_TRUE(reactor_->WaitUntil(kNoDeadline));
  EXPECT_GE(MonotonicNowNs() - start, 20 * kMs);
  EXPECT_EQ(reactor_->ReapCompletions(), 1);
}

TEST_F(EpollReactorTest, AcceptAndConnectMakeTheirSocketsNonBlocking) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)),
            0);
  ASSERT_EQ(listen(listener, 8), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(client, 0);

  int accepted = -1, connected = -1;
  reactor_->Accept(listener, [&](int r) { accepted = r; });
  reactor_->Connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr),
                    [&](int r) { connected = r; });
  EXPECT_NE(fcntl(listener, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(fcntl(client, F_GETFL) & O_NONBLOCK, 0);
  const int64_t give_up = MonotonicNowNs() + 20 * kSecond;
  while ((accepted < 0 || connected < 0) && MonotonicNowNs() < give_up) {
    reactor_->ReapCompletions();
    reactor_->WaitUntil(MonotonicNowNs() + 10 * kMs);
  }
  ASSERT_GE(accepted, 0);
  EXPECT_EQ(connected, 0);
  EXPECT_EQ(fcntl(accepted, F_GETFL) & O_NONBLOCK, 0)
      << "the accepted socket is left blocking, as with io_uring";
  close(accepted);
  close(client);
  close(listener);
}

TEST_F(EpollReactorTest, ClosedAndReusedFdNumberIsRearmed) {
  // An fd number the reactor once armed, closed and handed out again.
  char buf[4];
  int first = -1;
  reactor_->Recv(sv_[0], buf, sizeof(buf), [&](int r) { first = r; });
  ASSERT_EQ(write(sv_[1], "a", 1), 1);
  const int64_t give_up = MonotonicNowNs() + 20 * kSecond;
  while (first < 0 && MonotonicNowNs() < give_up) {
    reactor_->WaitUntil(give_up);
    reactor_->ReapCompletions();
  }
  ASSERT_EQ(first, 1);
  const int number = sv_[0];
  close(sv_[0]);
  int again[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, again), 0);
  if (again[0] != number) std::swap(again[0], again[1]);
  ASSERT_EQ(again[0], number) << "the kernel reuses the lowest free fd";
  sv_[0] = again[0];
  int second = -1;
  reactor_->Recv(sv_[0], buf, sizeof(buf), [&](int r) { second = r; });
  ASSERT_EQ(write(again[1], "b", 1), 1);
  while (second < 0 && MonotonicNowNs() < give_up) {
    reactor_->WaitUntil(give_up);
    reactor_->ReapCompletions();
  }
  EXPECT_EQ(second, 1);
  close(again[1]);
}

}  // namespace
}  // namespace haltpool
