// The IoReactor contract (runtime/io/io_reactor.h), run against every
// backend: TCP accept/connect/send/recv, large transfers with partial sends,
// files at offsets, timeouts, Wake(), WaitUntil's deadline and completions,
// in_flight() counting, many operations through a small ring, errors, and
// what the destructor does with operations still in flight.

#include "runtime/io/io_reactor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "arch/cycle_clock.h"
#include "gtest/gtest.h"
#include "runtime/io/io_backend.h"

namespace haltpool {
namespace {

using arch::kNoDeadline;
using arch::MonotonicNowNs;

constexpr int64_t kMs = 1000000;
constexpr int64_t kSecond = 1000 * kMs;
// How long a test waits for something that should take microseconds before
// it calls it a hang. Generous: loaded CI machines.
constexpr int64_t kPatienceNs = 20 * kSecond;

// Closes an fd when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    reset(std::exchange(other.fd_, -1));
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// A listening TCP socket on 127.0.0.1 and an ephemeral port.
Fd Listener(sockaddr_in* addr, int flags = 0) {
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0));
  EXPECT_GE(fd.get(), 0) << strerror(errno);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0)
      << strerror(errno);
  EXPECT_EQ(listen(fd.get(), 128), 0) << strerror(errno);
  socklen_t len = sizeof(a);
  EXPECT_EQ(getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
  *addr = a;
  return fd;
}

Fd TcpSocket(int flags = 0) {
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0));
  EXPECT_GE(fd.get(), 0) << strerror(errno);
  return fd;
}

void SocketPair(Fd* a, Fd* b) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0)
      << strerror(errno);
  a->reset(sv[0]);
  b->reset(sv[1]);
}

std::string TempPath() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/io_reactor_XXXXXX";
}

Fd TempFile() {
  std::string path = TempPath();
  Fd fd(mkstemp(path.data()));
  EXPECT_GE(fd.get(), 0) << strerror(errno);
  unlink(path.c_str());
  return fd;
}

// Runs the owner's loop (reap, then wait) until `done` or kPatienceNs pass.
// Returns done().
bool RunUntil(IoReactor& reactor, const std::function<bool()>& done) {
  const int64_t give_up = MonotonicNowNs() + kPatienceNs;
  for (;;) {
    reactor.ReapCompletions();
    if (done()) return true;
    if (MonotonicNowNs() >= give_up) return false;
    reactor.WaitUntil(std::min(give_up, MonotonicNowNs() + 100 * kMs));
  }
}

// Starts `op` with a callback that stores its result, runs the reactor until
// it ran, and returns the result.
int RunOne(IoReactor& reactor, const std::function<void(IoCallback)>& op) {
  bool done = false;
  int result = 0;
  op([&](int r) {
    result = r;
    done = true;
  });
  EXPECT_TRUE(RunUntil(reactor, [&] { return done; })) << "operation hung";
  return result;
}

// A backend, and for io_uring how the kernel hands it completions.
struct Backend {
  IoBackend backend;
  IoTaskRun task_run;
};

class IoReactorTest : public testing::TestWithParam<Backend> {
 protected:
  // The backend under test, or a skip if this machine lacks it.
  std::unique_ptr<IoReactor> Make(IoReactorOptions options = {}) {
    std::string reason;
    options.task_run = GetParam().task_run;
    absl::StatusOr<std::unique_ptr<IoReactor>> r =
        MakeIoReactor(GetParam().backend, &reason, options);
    if (!r.ok()) {
      if (GetParam().backend == IoBackend::kUring &&
          (absl::IsUnimplemented(r.status()) ||
           absl::IsPermissionDenied(r.status()))) {
        skip_reason_ = std::string(r.status().message());
      } else {
        ADD_FAILURE() << r.status();
      }
      return nullptr;
    }
    return std::move(*r);
  }

  std::string skip_reason_;
};

// Makes `reactor` for the test, or skips / fails the test.
#define MAKE_REACTOR_OR_RETURN(reactor, ...)                \
  std::unique_ptr<IoReactor> reactor = Make(__VA_ARGS__);   \
  if (reactor == nullptr) {                                 \
    if (!skip_reason_.empty())                              \
      GTEST_SKIP() << "no io_uring here: " << skip_reason_; \
    return;                                                 \
  }

TEST_P(IoReactorTest, NameNamesTheBackend) {
  MAKE_REACTOR_OR_RETURN(reactor);
  EXPECT_EQ(reactor->name(),
            GetParam().backend == IoBackend::kUring ? "io_uring" : "epoll");
  EXPECT_EQ(reactor->in_flight(), 0u);
  EXPECT_EQ(reactor->ReapCompletions(), 0);
}

TEST_P(IoReactorTest, TcpAcceptConnectSendRecvRoundTrip) {
  MAKE_REACTOR_OR_RETURN(reactor);
  sockaddr_in addr;
  Fd listener = Listener(&addr);
  Fd client = TcpSocket();

  int accepted = 0;
  int connected = 1;
  bool accept_done = false, connect_done = false;
  reactor->Accept(listener.get(), [&](int r) {
    accepted = r;
    accept_done = true;
  });
  reactor->Connect(client.get(), reinterpret_cast<const sockaddr*>(&addr),
                   sizeof(addr), [&](int r) {
                     connected = r;
                     connect_done = true;
                   });
  EXPECT_EQ(reactor->in_flight(), 2u);
  ASSERT_TRUE(RunUntil(*reactor, [&] { return accept_done && connect_done; }));
  ASSERT_GE(accepted, 0) << strerror(-accepted);
  ASSERT_EQ(connected, 0) << strerror(-connected);
  Fd server(accepted);
  EXPECT_EQ(reactor->in_flight(), 0u);
  EXPECT_NE(fcntl(server.get(), F_GETFD) & FD_CLOEXEC, 0) << "SOCK_CLOEXEC";

  // client -> server, then the server echoes it back from its callback.
  const std::string ping = "ping over loopback";
  char server_buf[64] = {};
  char client_buf[64] = {};
  int echoed = -1, received = -1;
  reactor->Recv(server.get(), server_buf, sizeof(server_buf), [&](int r) {
    ASSERT_EQ(r, static_cast<int>(ping.size()));
    reactor->Send(server.get(), server_buf, r, [&](int s) { echoed = s; });
  });
  reactor->Recv(client.get(), client_buf, sizeof(client_buf),
                [&](int r) { received = r; });
  const int sent = RunOne(*reactor, [&](IoCallback cb) {
    reactor->Send(client.get(), ping.data(), ping.size(), std::move(cb));
  });
  EXPECT_EQ(sent, static_cast<int>(ping.size()));
  ASSERT_TRUE(RunUntil(*reactor, [&] { return received >= 0; }));
  EXPECT_EQ(echoed, static_cast<int>(ping.size()));
  EXPECT_EQ(std::string(client_buf, received), ping);
  EXPECT_EQ(reactor->in_flight(), 0u);

  // End of stream: Recv completes with 0.
  client.reset();
  EXPECT_EQ(RunOne(*reactor,
                   [&](IoCallback cb) {
                     reactor->Recv(server.get(), server_buf, sizeof(server_buf),
                                   std::move(cb));
                   }),
            0);
}

TEST_P(IoReactorTest, NonBlockingSocketsWaitLikeBlockingOnes) {
  MAKE_REACTOR_OR_RETURN(reactor);
  sockaddr_in addr;
  Fd listener = Listener(&addr, SOCK_NONBLOCK);
  Fd client = TcpSocket(SOCK_NONBLOCK);
  int accepted = -1;
  bool accept_done = false;
  reactor->Accept(listener.get(), [&](int r) {
    accepted = r;
    accept_done = true;
  });
  // Let the Accept reach the kernel and find no connection yet.
  EXPECT_EQ(reactor->ReapCompletions(), 0);
  EXPECT_EQ(RunOne(*reactor,
                   [&](IoCallback cb) {
                     reactor->Connect(client.get(),
                                      reinterpret_cast<const sockaddr*>(&addr),
                                      sizeof(addr), std::move(cb));
                   }),
            0);
  ASSERT_TRUE(RunUntil(*reactor, [&] { return accept_done; }));
  ASSERT_GE(accepted, 0) << strerror(-accepted);
  Fd server(accepted);
  ASSERT_EQ(fcntl(server.get(), F_SETFL, O_NONBLOCK), 0);

  char buf[8] = {};
  int received = -1;
  reactor->Recv(server.get(), buf, sizeof(buf), [&](int r) { received = r; });
  EXPECT_EQ(reactor->ReapCompletions(), 0);
  EXPECT_EQ(received, -1) << "must wait for data, not fail with EAGAIN";
  ASSERT_EQ(send(client.get(), "x", 1, 0), 1);
  ASSERT_TRUE(RunUntil(*reactor, [&] { return received >= 0; }));
  EXPECT_EQ(received, 1);
}

TEST_P(IoReactorTest, LargeTransferWithPartialSendsCompletedByLooping) {
  MAKE_REACTOR_OR_RETURN(reactor);
  sockaddr_in addr;
  Fd listener = Listener(&addr);
  Fd client = TcpSocket();
  // Small buffers make the kernel accept less than asked.
  const int small = 16 * 1024;
  setsockopt(client.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
  ASSERT_EQ(
      connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)),
      0);
  Fd server(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_GE(server.get(), 0);
  setsockopt(server.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));

  constexpr size_t kBytes = 8 << 20;
  std::vector<unsigned char> out(kBytes), in(kBytes);
  for (size_t i = 0; i < kBytes; ++i)
    out[i] = static_cast<unsigned char>(i * 131 + i / 4096);

  size_t sent = 0, received = 0;
  int sends = 0, partial_sends = 0;
  int error = 0;
  bool eof = false;
  std::function<void()> send_more = [&] {
    const size_t want = kBytes - sent;
    ++sends;
    reactor->Send(client.get(), out.data() + sent, want, [&, want](int r) {
      if (r <= 0) {
        error = r == 0 ? -EIO : r;
        return;
      }
      if (static_cast<size_t>(r) < want) ++partial_sends;
      sent += r;
      if (sent < kBytes) send_more();
    });
  };
  std::function<void()> recv_more = [&] {
    // Uneven chunks: the receiver does not mirror the sender.
    const size_t chunk = std::min<size_t>(kBytes - received, 100003);
    reactor->Recv(server.get(), in.data() + received, chunk, [&](int r) {
      if (r < 0) {
        error = r;
        return;
      }
      if (r == 0) {
        eof = true;
        return;
      }
      received += r;
      if (received < kBytes) recv_more();
    });
  };
  send_more();
  recv_more();
  ASSERT_TRUE(RunUntil(*reactor, [&] {
    return error != 0 || eof || (sent == kBytes && received == kBytes);
  }));
  ASSERT_EQ(error, 0) << strerror(-error);
  ASSERT_FALSE(eof);
  EXPECT_EQ(sent, kBytes);
  ASSERT_EQ(received, kBytes);
  EXPECT_TRUE(out == in) << "the bytes arrived, in order";
  EXPECT_EQ(reactor->in_flight(), 0u);
  RecordProperty("sends", sends);
  RecordProperty("partial_sends", partial_sends);
}

TEST_P(IoReactorTest, FileReadWriteAtOffsets) {
  MAKE_REACTOR_OR_RETURN(reactor);
  Fd file = TempFile();
  const int fd = file.get();
  auto write_at = [&](const std::string& s, int64_t offset) {
    return RunOne(*reactor, [&](IoCallback cb) {
      reactor->Write(fd, s.data(), s.size(), offset, std::move(cb));
    });
  };
  auto read_at = [&](size_t len, int64_t offset, std::string* out) {
    out->assign(len, '\0');
    const int r = RunOne(*reactor, [&](IoCallback cb) {
      reactor->Read(fd, out->data(), len, offset, std::move(cb));
    });
    out->resize(std::max(r, 0));
    return r;
  };

  EXPECT_EQ(write_at("abcdef", 0), 6);
  EXPECT_EQ(write_at("XYZ", 10), 3);  // Leaves a hole at 6..9.
  EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 0) << "pwrite leaves the position";
  std::string s;
  EXPECT_EQ(read_at(4, 2, &s), 4);
  EXPECT_EQ(s, "cdef");
  EXPECT_EQ(read_at(100, 6, &s), 7);
  EXPECT_EQ(s, std::string("\0\0\0\0XYZ", 7));
  EXPECT_EQ(read_at(10, 13, &s), 0) << "end of file";

  // Offset -1: the file's position, advanced as read(2)/write(2) do.
  ASSERT_EQ(lseek(fd, 1, SEEK_SET), 1);
  EXPECT_EQ(write_at("12", -1), 2);
  EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 3);
  EXPECT_EQ(read_at(3, -1, &s), 3);
  EXPECT_EQ(s, "def");
  EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 6);
  EXPECT_EQ(read_at(6, 0, &s), 6);
  EXPECT_EQ(s, "a12def");
}

TEST_P(IoReactorTest, TimeoutFiresNotBeforeItsDuration) {
  MAKE_REACTOR_OR_RETURN(reactor);
  for (int64_t duration : {int64_t{0}, 1 * kMs, 30 * kMs}) {
    SCOPED_TRACE(duration);
    const int64_t start = MonotonicNowNs();
    int64_t fired_at = 0;
    const int result = RunOne(*reactor, [&](IoCallback cb) {
      reactor->Timeout(duration, [&, cb = std::move(cb)](int r) mutable {
        fired_at = MonotonicNowNs();
        cb(r);
      });
    });
    EXPECT_EQ(result, 0);
    EXPECT_GE(fired_at - start, duration) << "a lower bound, not a speed";
  }
}

TEST_P(IoReactorTest, TimeoutsFireInDeadlineOrder) {
  MAKE_REACTOR_OR_RETURN(reactor);
  std::vector<int> order;
  reactor->Timeout(40 * kMs, [&](int) { order.push_back(3); });
  reactor->Timeout(5 * kMs, [&](int) { order.push_back(1); });
  reactor->Timeout(20 * kMs, [&](int) { order.push_back(2); });
  ASSERT_TRUE(RunUntil(*reactor, [&] { return order.size() == 3; }));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST_P(IoReactorTest, WakeFromAnotherThreadEndsWaitWithoutDeadline) {
  MAKE_REACTOR_OR_RETURN(reactor);
  std::atomic<bool> woke{false};
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    woke.store(true, std::memory_order_relaxed);
    reactor->Wake();
  });
  EXPECT_TRUE(reactor->WaitUntil(kNoDeadline));
  EXPECT_TRUE(woke.load(std::memory_order_relaxed));
  waker.join();
  // The wake was consumed: the next wait runs to its deadline.
  EXPECT_FALSE(reactor->WaitUntil(MonotonicNowNs() + 5 * kMs));
}

TEST_P(IoReactorTest, WakeBeforeWaitEndsTheNextWait) {
  MAKE_REACTOR_OR_RETURN(reactor);
  reactor->Wake();
  reactor->Wake();  // Wakes coalesce.
  EXPECT_TRUE(reactor->WaitUntil(MonotonicNowNs() + kPatienceNs));
  EXPECT_FALSE(reactor->WaitUntil(MonotonicNowNs() + 5 * kMs));
  // A Reap between the Wake and the wait does not lose it.
  reactor->Wake();
  reactor->ReapCompletions();
  reactor->ReapCompletions();
  EXPECT_TRUE(reactor->WaitUntil(MonotonicNowNs() + kPatienceNs));
  EXPECT_FALSE(reactor->WaitUntil(MonotonicNowNs() + 5 * kMs));
}

TEST_P(IoReactorTest, ManyWakesFromManyThreads) {
  MAKE_REACTOR_OR_RETURN(reactor);
  constexpr int kRounds = 200;
  std::atomic<int> posted{0};
  std::vector<std::thread> wakers;
  for (int t = 0; t < 2; ++t) {
    wakers.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        posted.fetch_add(1, std::memory_order_release);
        reactor->Wake();
      }
    });
  }
  // Every post is followed by a Wake: waiting while some are unseen never
  // sleeps through them.
  int seen = 0;
  const int64_t give_up = MonotonicNowNs() + kPatienceNs;
  while (seen < 2 * kRounds && MonotonicNowNs() < give_up) {
    seen = posted.load(std::memory_order_acquire);
    if (seen < 2 * kRounds) reactor->WaitUntil(give_up);
  }
  for (std::thread& t : wakers) t.join();
  EXPECT_EQ(seen, 2 * kRounds);
}

TEST_P(IoReactorTest, WaitUntilReturnsFalseAtTheDeadline) {
  MAKE_REACTOR_OR_RETURN(reactor);
  const int64_t deadline = MonotonicNowNs() + 10 * kMs;
  EXPECT_FALSE(reactor->WaitUntil(deadline));
  EXPECT_GE(MonotonicNowNs(), deadline);
  // A deadline in the past returns at once.
  EXPECT_FALSE(reactor->WaitUntil(MonotonicNowNs() - kSecond));
  EXPECT_FALSE(reactor->WaitUntil(0));

  // An operation that does not complete does not end the wait, nor does a
  // timeout due after the deadline.
  Fd a, b;
  SocketPair(&a, &b);
  char buf[4];
  reactor->Recv(a.get(), buf, sizeof(buf), [](int) {});
  reactor->Timeout(kSecond * 3600, [](int) {});
  const int64_t deadline2 = MonotonicNowNs() + 10 * kMs;
  EXPECT_FALSE(reactor->WaitUntil(deadline2));
  EXPECT_GE(MonotonicNowNs(), deadline2);
  EXPECT_EQ(reactor->ReapCompletions(), 0);
}

TEST_P(IoReactorTest, CompletionEndsWaitUntil) {
  MAKE_REACTOR_OR_RETURN(reactor);
  Fd a, b;
  SocketPair(&a, &b);
  char buf[4];
  int received = -1;
  reactor->Recv(a.get(), buf, sizeof(buf), [&](int r) { received = r; });
  EXPECT_EQ(reactor->ReapCompletions(), 0);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(write(b.get(), "abc", 3), 3);
  });
  // Signals, spurious readiness or a slow posting may end a wait early with
  // nothing to run; a completion must end one well before the deadline.
  const int64_t deadline = MonotonicNowNs() + kPatienceNs;
  while (received < 0 && reactor->WaitUntil(deadline)) {
    reactor->ReapCompletions();
  }
  writer.join();
  EXPECT_EQ(received, 3);
  EXPECT_LT(MonotonicNowNs(), deadline);

  // A timer's completion ends a wait without deadline.
  bool fired = false;
  reactor->Timeout(5 * kMs, [&](int) { fired = true; });
  while (!fired) {
    ASSERT_TRUE(reactor->WaitUntil(kNoDeadline));
    reactor->ReapCompletions();
  }
}

TEST_P(IoReactorTest, WaitUntilDoesNotRunCallbacks) {
  MAKE_REACTOR_OR_RETURN(reactor);
  bool ran = false;
  reactor->Timeout(0, [&](int) { ran = true; });
  EXPECT_TRUE(reactor->WaitUntil(MonotonicNowNs() + kPatienceNs));
  EXPECT_FALSE(ran);
  EXPECT_TRUE(reactor->CompletionReady());
  EXPECT_EQ(reactor->ReapCompletions(), 1);
  EXPECT_TRUE(ran);
}

TEST_P(IoReactorTest, InFlightCountsStartedUntilTheCallbackRuns) {
  MAKE_REACTOR_OR_RETURN(reactor);
  Fd a, b;
  SocketPair(&a, &b);
  Fd file = TempFile();
  char buf[8];
  int done = 0;
  EXPECT_EQ(reactor->in_flight(), 0u);
  reactor->Recv(a.get(), buf, sizeof(buf), [&](int) { ++done; });
  EXPECT_EQ(reactor->in_flight(), 1u);
  reactor->Timeout(3600 * kSecond, [&](int) { ++done; });
  EXPECT_EQ(reactor->in_flight(), 2u);
  reactor->Write(file.get(), "abc", 3, 0, [&](int) { ++done; });
  EXPECT_EQ(reactor->in_flight(), 3u);
  ASSERT_TRUE(RunUntil(*reactor, [&] { return done == 1; }));
  EXPECT_EQ(reactor->in_flight(), 2u);
  ASSERT_EQ(write(b.get(), "x", 1), 1);
  ASSERT_TRUE(RunUntil(*reactor, [&] { return done == 2; }));
  EXPECT_EQ(reactor->in_flight(), 1u);
  EXPECT_EQ(reactor->ReapCompletions(), 0);
  EXPECT_EQ(reactor->in_flight(), 1u);
}

TEST_P(IoReactorTest, ManyRecvsThroughASmallRingDropNothing) {
  IoReactorOptions options;
  options.entries = 8;
  MAKE_REACTOR_OR_RETURN(reactor, options);
  // 1000 receives in flight at once (4 on each of 250 socket pairs, 500 fds
  // to stay under a 1024-fd limit), started without reaping: an 8-entry SQ
  // fills 125 times and its 16-entry CQ overflows.
  constexpr int kPairs = 250;
  constexpr int kPerPair = 4;
  std::vector<Fd> ours(kPairs), theirs(kPairs);
  for (int i = 0; i < kPairs; ++i) SocketPair(&ours[i], &theirs[i]);
  std::vector<unsigned char> bufs(kPairs * kPerPair, 0);
  int completed = 0, bytes = 0, errors = 0;
  for (int i = 0; i < kPairs; ++i) {
    for (int j = 0; j < kPerPair; ++j) {
      reactor->Recv(ours[i].get(), &bufs[i * kPerPair + j], 1, [&](int r) {
        ++completed;
        if (r < 0) ++errors;
        if (r > 0) bytes += r;
      });
    }
  }
  EXPECT_EQ(reactor->in_flight(), size_t{kPairs * kPerPair});
  EXPECT_EQ(reactor->ReapCompletions(), 0) << "no data sent yet";
  for (int i = 0; i < kPairs; ++i) {
    const unsigned char data[kPerPair] = {
        static_cast<unsigned char>(i), static_cast<unsigned char>(i + 1),
        static_cast<unsigned char>(i + 2), static_cast<unsigned char>(i + 3)};
    ASSERT_EQ(write(theirs[i].get(), data, kPerPair), kPerPair);
  }
  ASSERT_TRUE(
      RunUntil(*reactor, [&] { return completed == kPairs * kPerPair; }))
      << completed << " of " << kPairs * kPerPair << " completed";
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(bytes, kPairs * kPerPair);
  EXPECT_EQ(reactor->in_flight(), 0u);
  // Each pair's receives got its bytes, in some order.
  for (int i = 0; i < kPairs; ++i) {
    std::vector<int> got(bufs.begin() + i * kPerPair,
                         bufs.begin() + (i + 1) * kPerPair);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, (std::vector<int>{i & 0xff, (i + 1) & 0xff, (i + 2) & 0xff,
                                     (i + 3) & 0xff}))
        << "pair " << i;
  }
}

TEST_P(IoReactorTest, ManyTimeoutsThroughASmallRing) {
  IoReactorOptions options;
  options.entries = 8;
  MAKE_REACTOR_OR_RETURN(reactor, options);
  constexpr int kOps = 500;
  int fired = 0;
  for (int i = 0; i < kOps; ++i) {
    reactor->Timeout((i % 5) * kMs, [&](int r) {
      EXPECT_EQ(r, 0);
      ++fired;
    });
  }
  EXPECT_EQ(reactor->in_flight(), size_t{kOps});
  ASSERT_TRUE(RunUntil(*reactor, [&] { return fired == kOps; }));
  EXPECT_EQ(reactor->in_flight(), 0u);
}

TEST_P(IoReactorTest, FailuresAreNegativeErrno) {
  MAKE_REACTOR_OR_RETURN(reactor);
  char buf[8];
  // A closed fd.
  int bad;
  {
    Fd f = TempFile();
    bad = f.get();
  }
  EXPECT_EQ(RunOne(*reactor,
                   [&](IoCallback cb) {
                     reactor->Recv(bad, buf, sizeof(buf), std::move(cb));
                   }),
            -EBADF);
  EXPECT_EQ(RunOne(*reactor,
                   [&](IoCallback cb) {
                     reactor->Read(bad, buf, sizeof(buf), 0, std::move(cb));
                   }),
            -EBADF);
  // A peer that is gone: -EPIPE, and no SIGPIPE (it would kill the test).
  Fd a, b;
  SocketPair(&a, &b);
  b.reset();
  EXPECT_EQ(RunOne(*reactor,
                   [&](IoCallback cb) {
                     reactor->Send(a.get(), "x", 1, std::move(cb));
                   }),
            -EPIPE);
  // Nobody listens: -ECONNREFUSED.
  sockaddr_in addr;
  { Fd closed = Listener(&addr); }
  Fd client = TcpSocket();
  EXPECT_EQ(RunOne(*reactor,
                   [&](IoCallback cb) {
                     reactor->Connect(client.get(),
                                      reinterpret_cast<const sockaddr*>(&addr),
                                      sizeof(addr), std::move(cb));
                   }),
            -ECONNREFUSED);
  // An address longer than any sockaddr.
  std::vector<char> huge(sizeof(sockaddr_storage) + 1);
  Fd client2 = TcpSocket();
  EXPECT_EQ(RunOne(*reactor,
                   [&](IoCallback cb) {
                     reactor->Connect(
                         client2.get(),
                         reinterpret_cast<const sockaddr*>(huge.data()),
                         huge.size(), std::move(cb));
                   }),
            -EINVAL);
  EXPECT_EQ(reactor->in_flight(), 0u);
}

TEST_P(IoReactorTest, CallbacksRunOnlyFromReapCompletions) {
  MAKE_REACTOR_OR_RETURN(reactor);
  Fd file = TempFile();
  bool ran = false;
  // Completes at once on both backends, and still waits for the reap.
  reactor->Write(file.get(), "abc", 3, 0, [&](int) { ran = true; });
  EXPECT_FALSE(ran);
  ASSERT_TRUE(RunUntil(*reactor, [&] { return ran; }));
  // A callback that starts an operation: the new one does not run inside
  // the same callback.
  int depth = 0, max_depth = 0, runs = 0;
  std::function<void(int)> chain = [&](int) {
    ++depth;
    max_depth = std::max(max_depth, depth);
    if (++runs < 5) reactor->Timeout(0, chain);
    --depth;
  };
  reactor->Timeout(0, chain);
  ASSERT_TRUE(RunUntil(*reactor, [&] { return runs == 5; }));
  EXPECT_EQ(max_depth, 1);
}

TEST_P(IoReactorTest, DestructorDropsCallbacksStillInFlight) {
  MAKE_REACTOR_OR_RETURN(reactor);
  Fd a, b;
  SocketPair(&a, &b);
  auto token = std::make_shared<int>(0);
  bool ran = false;
  char buf[8] = {};
  reactor->Recv(a.get(), buf, sizeof(buf), [&ran, token](int) { ran = true; });
  reactor->Timeout(3600 * kSecond, [&ran, token](int) { ran = true; });
  reactor->ReapCompletions();  // In the kernel now.
  EXPECT_EQ(token.use_count(), 3);
  const int64_t start = MonotonicNowNs();
  reactor.reset();
  EXPECT_LT(MonotonicNowNs() - start, 2 * kSecond) << "cancelled, not waited";
  EXPECT_FALSE(ran);
  EXPECT_EQ(token.use_count(), 1) << "callbacks destroyed";
  // The kernel no longer writes into the receive buffer.
  ASSERT_EQ(write(b.get(), "late", 4), 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(buf[0], '\0');
}

// Every task-run mode of io_uring: the kernel may post completions by
// interrupting the owner, or leave them for the owner to collect.
// Poll() finds a completion that another thread causes, and says how: by
// its own look (epoll_wait, or io_uring's task-run flag) or in a CQE the
// kernel posted behind this thread's back (io_uring without the flags, by
// an interrupt; with COOP_TASKRUN, when this thread, preempted, was
// scheduled back in).
TEST_P(IoReactorTest, PollFindsACompletionFromAnotherThread) {
  MAKE_REACTOR_OR_RETURN(reactor);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  Fd a(sv[0]), b(sv[1]);
  int by_poll = 0;
  int posted = 0;
  // COOP_TASKRUN shows the flag only to a thread on its CPU: on a loaded
  // machine, go on until it has been seen once.
  const bool until_flag = GetParam().backend == IoBackend::kUring &&
                          GetParam().task_run == IoTaskRun::kCoop;
  for (int round = 0; round < (until_flag && by_poll == 0 ? 1000 : 20);
       ++round) {
    char byte = 0;
    int got = -1;
    reactor->Recv(a.get(), &byte, 1, [&](int r) { got = r; });
    reactor->ReapCompletions();  // Submits it; nothing to receive yet.
    ASSERT_EQ(reactor->Poll(), IoFound::kNothing);
    std::thread writer([&] { ASSERT_EQ(write(b.get(), "x", 1), 1); });
    const int64_t give_up = MonotonicNowNs() + kPatienceNs;
    IoFound found = IoFound::kNothing;
    while ((found = reactor->Poll()) == IoFound::kNothing &&
           MonotonicNowNs() < give_up) {
    }
    writer.join();
    ASSERT_NE(found, IoFound::kNothing) << "the completion was never seen";
    (found == IoFound::kByPoll ? by_poll : posted)++;
    EXPECT_TRUE(reactor->CompletionReady());
    EXPECT_EQ(reactor->ReapCompletions(), 1);
    EXPECT_EQ(got, 1);
    EXPECT_EQ(byte, 'x');
  }
  if (GetParam().backend == IoBackend::kEpoll ||
      GetParam().task_run == IoTaskRun::kDefer) {
    EXPECT_EQ(posted, 0) << "nothing is posted behind the owner's back";
  } else if (GetParam().task_run == IoTaskRun::kInterrupt) {
    EXPECT_EQ(by_poll, 0) << "no task-run flag without the setup flags";
  } else {
    EXPECT_GT(by_poll, 0) << "the task-run flag was never seen";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Backends, IoReactorTest,
    testing::Values(Backend{IoBackend::kUring, IoTaskRun::kInterrupt},
                    Backend{IoBackend::kUring, IoTaskRun::kCoop},
                    Backend{IoBackend::kUring, IoTaskRun::kDefer},
                    Backend{IoBackend::kEpoll, IoTaskRun::kCoop}),
    [](const testing::TestParamInfo<Backend>& info) {
      return info.param.backend == IoBackend::kEpoll
                 ? std::string("epoll")
                 : absl::StrCat("uring_",
                                kIoTaskRuns.Name(info.param.task_run));
    });

}  // namespace
}  // namespace haltpool
