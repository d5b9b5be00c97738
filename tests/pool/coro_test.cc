// The coroutine API (runtime/coro/): Task<T> (lazy, values, exceptions,
// symmetric transfer), Schedule, SleepFor/SleepUntil, Spawn and
// `co_await group`, SyncWait, AsyncIo on each backend, and shutdown: every
// frame waiting on I/O or a timer resumes (with -ECANCELED or false) and
// none leaks. io_uring cases skip, with the reason, where the machine has no
// io_uring.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "runtime/coro/async_io.h"
#include "runtime/coro/sync_wait.h"
#include "runtime/coro/task.h"
#include "runtime/io/io_backend.h"
#include "runtime/thread_pool.h"
#include "tests/pool/backend_test.h"

namespace haltpool {
namespace {

std::unique_ptr<ThreadPool> MakePool(
    int workers, IoBackend io,
    std::function<void(std::exception_ptr)> on_exception = nullptr) {
  PoolOptions o;
  o.workers = workers;
  o.io = io;
  if (on_exception) o.on_exception = std::move(on_exception);
  absl::StatusOr<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create(o);
  EXPECT_TRUE(pool.ok()) << pool.status();
  return pool.ok() ? *std::move(pool) : nullptr;
}

std::unique_ptr<ThreadPool> MakePool(int workers) {
  return MakePool(workers, IoBackend::kAuto);
}

Task<int> Constant(int v) { co_return v; }

Task<int> Sum(int n) {
  int total = 0;
  for (int i = 1; i <= n; ++i) total += co_await Constant(i);
  co_return total;
}

Task<std::unique_ptr<int>> MoveOnly(int v) {
  co_return std::make_unique<int>(v);
}

Task<int> Throws() {
  throw std::runtime_error("from a task");
  co_return 0;
}

TEST(CoroTaskTest, ValuesComeBackThroughNestedAwaits) {
  EXPECT_EQ(SyncWait(Sum(100)), 5050);
  EXPECT_EQ(*SyncWait(MoveOnly(7)), 7);
}

TEST(CoroTaskTest, SymmetricTransferKeepsTheStackFlat) {
  // A million tasks awaited one after another, each completing at once: a
  // resume that nested per await would overflow the stack long before.
  auto count = [](int n) -> Task<int> {
    int total = 0;
    for (int i = 0; i < n; ++i) total += co_await Constant(1);
    co_return total;
  };
  EXPECT_EQ(SyncWait(count(1'000'000)), 1'000'000);
}

TEST(CoroTaskTest, ExceptionsReachTheAwaiter) {
  auto outer = []() -> Task<std::string> {
    try {
      co_await Throws();
    } catch (const std::runtime_error& e) {
      co_return std::string("caught: ") + e.what();
    }
    co_return "not thrown";
  };
  EXPECT_EQ(SyncWait(outer()), "caught: from a task");
  EXPECT_THROW(SyncWait(Throws()), std::runtime_error);
}

TEST(CoroTaskTest, TasksAreLazyAndFramesAreFreed) {
  const int64_t before = LiveTaskFrames();
  bool ran = false;
  {
    auto body = [&]() -> Task<void> {
      ran = true;
      co_return;
    };
    Task<void> t = body();
    EXPECT_EQ(LiveTaskFrames(), before + 1);
    EXPECT_FALSE(ran) << "a task runs only when awaited";
  }
  EXPECT_FALSE(ran);
  EXPECT_EQ(LiveTaskFrames(), before) << "an unawaited task's frame leaked";
  SyncWait(Sum(10));
  EXPECT_EQ(LiveTaskFrames(), before);
}

TEST(CoroPoolTest, ScheduleMovesOntoAWorker) {
  auto pool = MakePool(2);
  ASSERT_NE(pool, nullptr);
  auto body = [&]() -> Task<int> {
    EXPECT_EQ(ThreadPool::CurrentWorkerIndex(), -1);
    co_await pool->Schedule();
    co_return ThreadPool::CurrentWorkerIndex();
  };
  const int worker = SyncWait(body());
  EXPECT_GE(worker, 0);
  EXPECT_LT(worker, 2);
}

TEST(CoroPoolTest, SleepForWaitsAtLeastItsDelay) {
  auto pool = MakePool(2);
  ASSERT_NE(pool, nullptr);
  auto body = [&]() -> Task<bool> {
    co_await pool->Schedule();
    const absl::Time start = absl::Now();
    const bool slept = co_await pool->SleepFor(absl::Milliseconds(20));
    EXPECT_GE(absl::Now() - start, absl::Milliseconds(20));
    EXPECT_GE(ThreadPool::CurrentWorkerIndex(), 0);
    const bool until =
        co_await pool->SleepUntil(absl::Now() + absl::Milliseconds(5));
    co_return slept&& until;
  };
  EXPECT_TRUE(SyncWait(body()));
}

TEST(CoroPoolTest, SpawnedTasksCountInTheirGroupUntilTheyEnd) {
  auto pool = MakePool(2);
  ASSERT_NE(pool, nullptr);
  constexpr int kTasks = 2000;
  std::atomic<int> done{0};
  auto child = [&](int i) -> Task<void> {
    // Suspends past its first job: the group must still count it.
    co_await pool->SleepFor(absl::Microseconds(i % 50));
    co_await pool->Schedule();
    done.fetch_add(1);
  };
  auto parent = [&]() -> Task<int> {
    co_await pool->Schedule();
    TaskGroup group;
    for (int i = 0; i < kTasks; ++i) {
      EXPECT_TRUE(pool->Spawn(group, child(i)).ok());
    }
    co_await group;
    co_return done.load();
  };
  EXPECT_EQ(SyncWait(parent()), kTasks);

  // The same group waited for from outside the pool.
  TaskGroup outside;
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(pool->Spawn(outside, child(i)).ok());
  pool->Wait(outside);
  EXPECT_EQ(done.load(), kTasks + 100);
}

TEST(CoroPoolTest, AwaitingAnEmptyGroupGoesOnAtOnce) {
  auto pool = MakePool(1);
  ASSERT_NE(pool, nullptr);
  auto body = [&]() -> Task<int> {
    TaskGroup group;
    co_await group;
    co_return 1;
  };
  EXPECT_EQ(SyncWait(body()), 1);
}

TEST(CoroPoolTest, ASpawnedTasksExceptionGoesToTheHandler) {
  std::mutex mu;
  std::vector<std::string> seen;
  auto pool = MakePool(1, IoBackend::kAuto, [&](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(ex.what());
    }
  });
  ASSERT_NE(pool, nullptr);
  auto body = []() -> Task<void> { co_await Throws(); };
  TaskGroup group;
  ASSERT_TRUE(pool->Spawn(group, body()).ok());
  pool->Wait(group);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], "from a task");
  EXPECT_EQ(pool->Stats().workers[0].exceptions, 1u);
}

TEST(CoroPoolTest, AfterShutdownSpawnAndScheduleSaySo) {
  auto pool = MakePool(1);
  ASSERT_NE(pool, nullptr);
  pool->Shutdown();
  const int64_t before = LiveTaskFrames();
  auto never_runs = []() -> Task<void> { co_await Sum(3); };
  absl::Status s = pool->Spawn(never_runs());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_EQ(LiveTaskFrames(), before) << "the refused task's frame leaked";
  EXPECT_TRUE(absl::IsInvalidArgument(pool->Spawn(Task<void>())));
  auto body = [&]() -> Task<void> { co_await pool->Schedule(); };
  EXPECT_THROW(SyncWait(body()), std::runtime_error);
  auto sleeper = [&]() -> Task<bool> {
    co_return co_await pool->SleepFor(absl::Seconds(1));
  };
  EXPECT_FALSE(SyncWait(sleeper())) << "a refused timer reports no sleep";
}

// An awaiter kept and awaited again sleeps again: each co_await starts its
// own timer, and the earlier timer, long gone, cannot resume the frame.
TEST(CoroPoolTest, ASleepAwaiterAwaitedAgainSleepsAgain) {
  auto pool = MakePool(2);
  ASSERT_NE(pool, nullptr);
  constexpr absl::Duration kTick = absl::Milliseconds(5);
  auto body = [&]() -> Task<int> {
    co_await pool->Schedule();
    SleepAwaiter tick = pool->SleepFor(kTick);
    int slept = 0;
    for (int i = 0; i < 4; ++i) {
      const absl::Time start = absl::Now();
      if (co_await tick) ++slept;
      EXPECT_GE(absl::Now() - start, kTick) << "await " << i;
    }
    // Long enough for a stray timer of an earlier await to fire.
    co_await pool->SleepFor(4 * kTick);
    co_return slept;
  };
  EXPECT_EQ(SyncWait(body()), 4);
}

TEST(CoroPoolTest, AsyncIoOffThePoolThrows) {
  auto pool = MakePool(1);
  ASSERT_NE(pool, nullptr);
  AsyncIo io(*pool);
  auto body = [&]() -> Task<int> {
    co_return co_await io.Timeout(absl::Milliseconds(1));
  };
  EXPECT_THROW(SyncWait(body()), std::logic_error);
}

// Shutdown with frames parked on timers and I/O: each resumes (false from
// a sleep, -ECANCELED from I/O), unwinds, and no frame is left.
TEST(CoroPoolTest, ShutdownResumesEveryWaitingFrame) {
  const int64_t before = LiveTaskFrames();
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  std::atomic<int> sleeps_cancelled{0};
  std::atomic<int> recv_result{1};
  std::atomic<int> started{0};
  {
    auto pool = MakePool(2);
    ASSERT_NE(pool, nullptr);
    AsyncIo io(*pool);
    char byte = 0;
    auto sleeper = [&]() -> Task<void> {
      co_await pool->Schedule();
      started.fetch_add(1);
      if (!co_await pool->SleepFor(absl::Hours(1))) sleeps_cancelled++;
    };
    auto reader = [&]() -> Task<void> {
      co_await pool->Schedule();
      started.fetch_add(1);
      recv_result = co_await io.Recv(fds[0], &byte, 1);
    };
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(pool->Spawn(sleeper()).ok());
    ASSERT_TRUE(pool->Spawn(reader()).ok());
    while (started.load() < 11) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_GT(LiveTaskFrames(), before);
    pool->Shutdown();
  }
  close(fds[0]);
  close(fds[1]);
  EXPECT_EQ(sleeps_cancelled.load(), 10);
  EXPECT_EQ(recv_result.load(), -ECANCELED);
  EXPECT_EQ(LiveTaskFrames(), before) << "frames leaked at shutdown";
}

class CoroIoTest : public BackendTest {};

// An echo over a socketpair: the coroutine's I/O resumes on the worker
// that started it, with the bytes in order.
TEST_P(CoroIoTest, EchoResumesOnTheWorkerThatStartedTheIo) {
  auto pool = MakePool(2, GetParam().backend);
  ASSERT_NE(pool, nullptr);
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  AsyncIo io(*pool);
  constexpr int kRounds = 2000;
  auto echo = [&]() -> Task<int> {
    co_await pool->Schedule();
    char buf[64];
    int rounds = 0;
    for (;;) {
      const int worker = ThreadPool::CurrentWorkerIndex();
      const int n = co_await io.Recv(fds[1], buf, sizeof buf);
      EXPECT_EQ(ThreadPool::CurrentWorkerIndex(), worker);
      if (n <= 0) break;
      if (co_await io.SendAll(fds[1], buf, static_cast<size_t>(n)) != n) break;
      ++rounds;
    }
    co_return rounds;
  };
  auto client = [&]() -> Task<int> {
    co_await pool->Schedule();
    int ok = 0;
    for (int i = 0; i < kRounds; ++i) {
      const std::string msg = "message " + std::to_string(i);
      if (co_await io.SendAll(fds[0], msg.data(), msg.size()) !=
          static_cast<int>(msg.size())) {
        break;
      }
      std::string got;
      char buf[64];
      while (got.size() < msg.size()) {
        const int n = co_await io.Recv(fds[0], buf, msg.size() - got.size());
        if (n <= 0) co_return ok;
        got.append(buf, static_cast<size_t>(n));
      }
      if (got == msg) ++ok;
    }
    shutdown(fds[0], SHUT_WR);
    co_return ok;
  };
  TaskGroup group;
  std::atomic<int> echoed{0};
  auto run_echo = [&]() -> Task<void> { echoed = co_await echo(); };
  ASSERT_TRUE(pool->Spawn(group, run_echo()).ok());
  EXPECT_EQ(SyncWait(client()), kRounds);
  pool->Wait(group);
  EXPECT_EQ(echoed.load(), kRounds);
  close(fds[0]);
  close(fds[1]);
}

// 4 MiB through a socket buffer of a few hundred KiB: SendAll goes on Send
// after Send and resumes once, with every byte sent in order.
TEST_P(CoroIoTest, SendAllSendsEverythingInPieces) {
  auto pool = MakePool(1, GetParam().backend);
  ASSERT_NE(pool, nullptr);
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  std::string data(4 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  std::string got;
  std::thread reader([&] {
    char buf[65536];
    while (got.size() < data.size()) {
      const ssize_t n = read(fds[1], buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
  });
  AsyncIo io(*pool);
  auto body = [&]() -> Task<int> {
    co_await pool->Schedule();
    co_return co_await io.SendAll(fds[0], data.data(), data.size());
  };
  EXPECT_EQ(SyncWait(body()), static_cast<int>(data.size()));
  reader.join();
  EXPECT_TRUE(got == data) << "bytes lost or out of order";
  close(fds[0]);
  close(fds[1]);
}

TEST_P(CoroIoTest, TimeoutAndFileIo) {
  auto pool = MakePool(1, GetParam().backend);
  ASSERT_NE(pool, nullptr);
  char path[] = "/tmp/haltpool-coro-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  AsyncIo io(*pool);
  auto body = [&]() -> Task<std::string> {
    co_await pool->Schedule();
    const absl::Time start = absl::Now();
    EXPECT_EQ(co_await io.Timeout(absl::Milliseconds(10)), 0);
    EXPECT_GE(absl::Now() - start, absl::Milliseconds(10));
    const char text[] = "written by a coroutine";
    EXPECT_EQ(co_await io.Write(fd, text, sizeof text - 1, 0),
              static_cast<int>(sizeof text - 1));
    char back[64] = {};
    const int n = co_await io.Read(fd, back, sizeof back, 0);
    co_return std::string(back, n > 0 ? static_cast<size_t>(n) : 0);
  };
  EXPECT_EQ(SyncWait(body()), "written by a coroutine");
  close(fd);
}

TEST_P(CoroIoTest, AcceptAndConnectOverLoopback) {
  auto pool = MakePool(2, GetParam().backend);
  ASSERT_NE(pool, nullptr);
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 8), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  AsyncIo io(*pool);
  auto server = [&]() -> Task<int> {
    co_await pool->Schedule();
    const int conn = co_await io.Accept(listener);
    if (conn < 0) co_return conn;
    char c = 0;
    const int n = co_await io.Recv(conn, &c, 1);
    close(conn);
    co_return n == 1 ? c : -1;
  };
  auto client = [&]() -> Task<int> {
    co_await pool->Schedule();
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int rc = co_await io.Connect(
        fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    if (rc == 0) co_await io.SendAll(fd, "x", 1);
    close(fd);
    co_return rc;
  };
  std::atomic<int> served{0};
  auto run_server = [&]() -> Task<void> { served = co_await server(); };
  TaskGroup group;
  ASSERT_TRUE(pool->Spawn(group, run_server()).ok());
  EXPECT_EQ(SyncWait(client()), 0);
  pool->Wait(group);
  EXPECT_EQ(served.load(), 'x');
  close(listener);
}

// A task on a worker waits (ThreadPool::Wait) for a coroutine whose Recv,
// on that same worker's reactor, never completes by itself. Shutdown must
// cancel it there: the worker cannot reach its own drain while it waits.
TEST_P(CoroIoTest, ShutdownEndsTheIoAWaitingWorkerWaitsFor) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  const int64_t before = LiveTaskFrames();
  std::atomic<int> recv_result{1};
  std::atomic<bool> started{false};
  std::atomic<bool> waited{false};
  bool unblocked = false;
  {
    auto pool = MakePool(1, GetParam().backend);
    ASSERT_NE(pool, nullptr);
    AsyncIo io(*pool);
    char byte = 0;
    auto reader = [&]() -> Task<void> {
      recv_result = co_await io.Recv(fds[0], &byte, 1);
    };
    TaskGroup group;
    ASSERT_TRUE(pool->Submit([&] {
                      // Inline: the Recv starts on this worker's reactor.
                      EXPECT_TRUE(pool->SpawnInline(group, reader()).ok());
                      started = true;
                      pool->Wait(group);
                      waited = true;
                    })
                    .ok());
    while (!started.load()) std::this_thread::yield();
    std::thread stopper([&] { pool->Shutdown(); });
    const absl::Time give_up = absl::Now() + absl::Seconds(5);
    while (!waited.load() && absl::Now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!waited.load()) {
      // Shutdown hangs: unblock the Recv so that the test can end.
      unblocked = true;
      EXPECT_EQ(write(fds[1], "x", 1), 1);
    }
    stopper.join();
  }
  close(fds[0]);
  close(fds[1]);
  EXPECT_FALSE(unblocked) << "Shutdown hung on a worker waiting for its I/O";
  EXPECT_EQ(recv_result.load(), -ECANCELED);
  EXPECT_EQ(LiveTaskFrames(), before);
}

INSTANTIATE_TEST_SUITE_P(Backends, CoroIoTest, AllBackends(), BackendTestName);

}  // namespace
}  // namespace haltpool
