// ThreadPool::Io() (runtime/pool_io.h) with each backend: the reactor a task
// gets, callbacks that run on the worker that started the operation,
// exceptions from callbacks, timeouts, a worker blocked in its ring woken by
// an outside Submit (the eventfd kick), the I/O statistics, shutdown with
// I/O in flight, and a callback that waits for tasks. io_uring cases skip,
// with the reason, where the machine has no io_uring.
//
// The last two tests hold the pool to what a server needs beyond the
// header's words: I/O keeps completing while a worker always has a task,
// and an idle worker notices I/O whatever governor idles it.

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "runtime/io/io_backend.h"
// PoolIo comes through thread_pool.h: runtime/pool_io.h alone does not
// compile first in a file (it uses std::atomic without <atomic>).
#include "runtime/thread_pool.h"
#include "tests/pool/backend_test.h"

namespace haltpool {
namespace {

using Clock = std::chrono::steady_clock;

// How long a test waits for something that takes microseconds; only a hang
// (or a lost wake) reaches it.
constexpr auto kPatience = std::chrono::seconds(5);

// How long the liveness tests give I/O to complete. Orders of magnitude
// above a loopback round trip, short enough that a failure is quick.
constexpr auto kLiveness = std::chrono::seconds(2);

// Waits until `done()` or `limit` passes; returns done().
bool WaitFor(const std::function<bool()>& done,
             Clock::duration limit = kPatience) {
  const Clock::time_point give_up = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() >= give_up) return done();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// A connected pair of stream sockets, closed at scope exit.
struct SocketPair {
  SocketPair() {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0) {
      a = fds[0];
      b = fds[1];
    }
  }
  ~SocketPair() {
    if (a >= 0) close(a);
    if (b >= 0) close(b);
  }
  SocketPair(const SocketPair&) = delete;
  SocketPair& operator=(const SocketPair&) = delete;

  int a = -1;
  int b = -1;
};

// Exceptions handed to PoolOptions::on_exception, from any worker.
struct ExceptionLog {
  std::mutex mu;
  std::vector<std::string> messages;

  void Add(std::exception_ptr e) {
    std::string what = "not a std::exception";
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      what = ex.what();
    } catch (...) {
    }
    std::lock_guard<std::mutex> lock(mu);
    messages.push_back(what);
  }
  std::vector<std::string> Get() {
    std::lock_guard<std::mutex> lock(mu);
    return messages;
  }
};

class PoolIoTest : public BackendTest {
 protected:
  // A pool of `workers` on this test's backend; `governor` "" keeps the
  // default.
  std::unique_ptr<ThreadPool> MakePool(
      int workers, const std::string& governor = "",
      std::optional<IoTaskRun> task_run = std::nullopt, bool backoff = true) {
    PoolOptions o;
    o.workers = workers;
    o.io = GetParam().backend;
    o.io_task_run = task_run;
    if (!backoff) o.backoff = false;
    if (!governor.empty()) o.idle.governor = governor;
    o.on_exception = [this](std::exception_ptr e) { exceptions_.Add(e); };
    absl::StatusOr<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create(o);
    EXPECT_TRUE(pool.ok()) << pool.status();
    return pool.ok() ? *std::move(pool) : nullptr;
  }

  // Runs `fn` as a task and waits for it to return.
  static void RunTask(ThreadPool& pool, std::function<void()> fn) {
    TaskGroup group;
    ASSERT_TRUE(pool.Submit(group, [&fn] { fn(); }).ok());
    pool.Wait(group);
  }

  static uint64_t TotalIoCallbacks(const PoolStats& stats) {
    uint64_t n = 0;
    for (const WorkerStats& w : stats.workers) n += w.io.callbacks;
    return n;
  }

  ExceptionLog exceptions_;
};

TEST_P(PoolIoTest, IoFromATaskNamesItsBackend) {
  auto pool = MakePool(2);
  ASSERT_NE(pool, nullptr);
  absl::Status status;
  std::string backend;
  RunTask(*pool, [&] {
    absl::StatusOr<PoolIo> io = pool->Io();
    status = io.status();
    if (io.ok()) backend = std::string(io->backend());
  });
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(backend, GetParam().name);
}

TEST_P(PoolIoTest, CallbacksRunOnTheWorkerThatStartedTheOperation) {
  constexpr int kWorkers = 4;
  constexpr int kTasks = 32;  // So that every worker starts some.

  struct Trip {
    SocketPair pair;
    char out[6] = "hello";
    char in[16] = {};
    std::atomic<int> started_on{-2};
    std::atomic<int> send_on{-2}, recv_on{-2};
    std::atomic<int> send_result{0}, recv_result{0};
  };
  std::vector<std::unique_ptr<Trip>> trips;
  for (int i = 0; i < kTasks; ++i) trips.push_back(std::make_unique<Trip>());
  std::atomic<int> failures{0};
  auto pool = MakePool(kWorkers);
  ASSERT_NE(pool, nullptr);
  for (auto& trip : trips) {
    Trip* t = trip.get();
    ASSERT_TRUE(pool->Submit([&pool, t, &failures] {
                      absl::StatusOr<PoolIo> io = pool->Io();
                      if (!io.ok()) {
                        failures++;
                        return;
                      }
                      t->started_on = ThreadPool::CurrentWorkerIndex();
                      // The Recv first, so it waits for the data.
                      io->Recv(t->pair.b, t->in, sizeof(t->in), [t](int r) {
                        t->recv_result = r;
                        t->recv_on = ThreadPool::CurrentWorkerIndex();
                      });
                      io->Send(t->pair.a, t->out, 5, [t](int r) {
                        t->send_result = r;
                        t->send_on = ThreadPool::CurrentWorkerIndex();
                      });
                    })
                    .ok());
  }
  for (auto& trip : trips) {
    Trip* t = trip.get();
    ASSERT_TRUE(WaitFor([t] { return t->recv_on >= 0 && t->send_on >= 0; }))
        << "a round trip did not complete";
  }
  EXPECT_EQ(failures.load(), 0);
  for (auto& trip : trips) {
    EXPECT_GE(trip->started_on.load(), 0);
    EXPECT_EQ(trip->send_on.load(), trip->started_on.load());
    EXPECT_EQ(trip->recv_on.load(), trip->started_on.load());
    EXPECT_EQ(trip->send_result.load(), 5);
    EXPECT_EQ(trip->recv_result.load(), 5);
    EXPECT_STREQ(trip->in, "hello");
  }
  pool->Shutdown();
  EXPECT_EQ(TotalIoCallbacks(pool->Stats()), 2u * kTasks);
}

TEST_P(PoolIoTest, IoOffThePoolFailsWithFailedPrecondition) {
  auto pool = MakePool(1);
  ASSERT_NE(pool, nullptr);
  absl::StatusOr<PoolIo> io = pool->Io();
  EXPECT_EQ(io.status().code(), absl::StatusCode::kFailedPrecondition)
      << io.status();

  // Nor from a worker of another pool.
  auto other = MakePool(1);
  ASSERT_NE(other, nullptr);
  absl::Status from_other;
  RunTask(*other, [&] { from_other = pool->Io().status(); });
  EXPECT_EQ(from_other.code(), absl::StatusCode::kFailedPrecondition)
      << from_other;

  // Nothing was made for either pool.
  other->Shutdown();
  pool->Shutdown();
  for (const WorkerStats& w : pool->Stats().workers) {
    EXPECT_EQ(w.io_backend, "");
  }
}

TEST_P(PoolIoTest,
       ExceptionFromACallbackIsCountedAndHandledAndTheWorkerGoesOn) {
  std::atomic<bool> after{false};
  auto pool = MakePool(1);
  ASSERT_NE(pool, nullptr);
  RunTask(*pool, [&] {
    absl::StatusOr<PoolIo> io = pool->Io();
    ASSERT_TRUE(io.ok()) << io.status();
    io->Timeout(0, [](int) { throw std::runtime_error("callback boom"); });
    io->Timeout(1000000, [&after](int) { after = true; });
  });
  ASSERT_TRUE(WaitFor([&] { return after.load(); }))
      << "the callback after the throwing one never ran";
  // A task runs afterwards too.
  std::atomic<bool> task_ran{false};
  RunTask(*pool, [&] { task_ran = true; });
  EXPECT_TRUE(task_ran);
  pool->Shutdown();

  EXPECT_EQ(exceptions_.Get(), std::vector<std::string>{"callback boom"});
  const PoolStats stats = pool->Stats();
  ASSERT_EQ(stats.workers.size(), 1u);
  EXPECT_EQ(stats.workers[0].exceptions, 1u);
  EXPECT_EQ(stats.workers[0].io.callbacks, 2u);
}

TEST_P(PoolIoTest, TimeoutFiresNoEarlierThanAsked) {
  constexpr auto kDelay = std::chrono::milliseconds(20);
  std::atomic<bool> fired{false};
  std::atomic<int> result{-1};
  Clock::time_point started;
  std::atomic<int64_t> elapsed_ns{-1};
  auto pool = MakePool(2);
  ASSERT_NE(pool, nullptr);
  RunTask(*pool, [&] {
    absl::StatusOr<PoolIo> io = pool->Io();
    ASSERT_TRUE(io.ok()) << io.status();
    started = Clock::now();
    io->Timeout(std::chrono::nanoseconds(kDelay).count(), [&](int r) {
      elapsed_ns = std::chrono::nanoseconds(Clock::now() - started).count();
      result = r;
      fired = true;
    });
  });
  ASSERT_TRUE(WaitFor([&] { return fired.load(); })) << "never fired";
  EXPECT_EQ(result.load(), 0);
  EXPECT_GE(elapsed_ns.load(), std::chrono::nanoseconds(kDelay).count());
}

TEST_P(PoolIoTest, SubmitFromOutsideWakesAWorkerBlockedInItsRing) {
  // One worker that never polls: with a Recv in flight it blocks in its
  // reactor, where only the eventfd kick reaches it.
  SocketPair pair;
  char byte = 0;
  std::atomic<int> recv_result{-1000};
  auto pool = MakePool(1, "block");
  ASSERT_NE(pool, nullptr);
  RunTask(*pool, [&] {
    absl::StatusOr<PoolIo> io = pool->Io();
    ASSERT_TRUE(io.ok()) << io.status();
    io->Recv(pair.b, &byte, 1, [&](int r) { recv_result = r; });
  });
  // Give the worker time to go to sleep in its ring.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const uint64_t kicks_before = pool->Stats().workers[0].idle.wakes.syscall;

  std::atomic<bool> ran{false};
  ASSERT_TRUE(pool->Submit([&] { ran = true; }).ok());
  EXPECT_TRUE(WaitFor([&] { return ran.load(); }))
      << "a worker blocked in its ring missed a Submit";
  EXPECT_EQ(recv_result.load(), -1000) << "nothing was sent yet";
  EXPECT_GT(pool->Stats().workers[0].idle.wakes.syscall, kicks_before);

  // The Recv is still in flight and completes when data comes.
  ASSERT_EQ(write(pair.a, "x", 1), 1);
  EXPECT_TRUE(WaitFor([&] { return recv_result.load() != -1000; }));
  EXPECT_EQ(recv_result.load(), 1);
  EXPECT_EQ(byte, 'x');
}

TEST_P(PoolIoTest, StatsNameTheBackendAndCountCallbacks) {
  constexpr int kOps = 10;
  std::atomic<int> done{0};
  std::atomic<int> worker{-1};
  auto pool = MakePool(2);
  ASSERT_NE(pool, nullptr);
  RunTask(*pool, [&] {
    absl::StatusOr<PoolIo> io = pool->Io();
    ASSERT_TRUE(io.ok()) << io.status();
    worker = ThreadPool::CurrentWorkerIndex();
    for (int i = 0; i < kOps; ++i) io->Timeout(0, [&](int) { done++; });
  });
  ASSERT_TRUE(WaitFor([&] { return done.load() == kOps; }));
  pool->Shutdown();
  const PoolStats stats = pool->Stats();
  for (const WorkerStats& w : stats.workers) {
    SCOPED_TRACE(w.index);
    if (w.index == worker.load()) {
      EXPECT_EQ(w.io_backend, GetParam().name);
      EXPECT_EQ(w.io.callbacks, static_cast<uint64_t>(kOps));
      EXPECT_FALSE(w.io_note.empty());
    } else {
      EXPECT_EQ(w.io_backend, "");  // Never used.
      EXPECT_EQ(w.io.callbacks, 0u);
    }
  }
  const std::string text = FormatPoolStatsText(stats);
  EXPECT_NE(text.find(std::string("I/O: ") + GetParam().name + ", " +
                      std::to_string(kOps) + " completions"),
            std::string::npos)
      << text;
}

// A worker under `poll` (back-off off) idles by polling, so every message
// that arrives while it idles ends a poll, and the statistics say how the
// poll found it. io_uring without task-run flags: always a CQE the kernel
// posted behind the worker's back (by an interrupt); with DEFER_TASKRUN
// and with epoll: always the poll's own look (the task-run flag,
// epoll_wait). COOP_TASKRUN leaves the flag for a running worker, but
// posts the CQE when a preempted one is scheduled back in, so on a loaded
// machine either may end the poll.
TEST_P(PoolIoTest, APollingWorkerCountsHowEachCompletionReachedIt) {
  constexpr int kMessages = 100;
  const std::vector<IoTaskRun> modes =
      GetParam().backend == IoBackend::kUring
          ? std::vector<IoTaskRun>{IoTaskRun::kInterrupt, IoTaskRun::kCoop,
                                   IoTaskRun::kDefer}
          : std::vector<IoTaskRun>{IoTaskRun::kCoop};  // Ignored by epoll.
  for (IoTaskRun mode : modes) {
    SCOPED_TRACE(kIoTaskRuns.Name(mode));
    SocketPair pair;
    char byte = 0;
    std::atomic<int> received{0};
    auto pool = MakePool(1, "poll", mode, /*backoff=*/false);
    ASSERT_NE(pool, nullptr);
    std::function<void(PoolIo&)> arm;
    std::optional<PoolIo> worker_io;
    arm = [&](PoolIo& io) {
      io.Recv(pair.b, &byte, 1, [&](int r) {
        if (r != 1) return;
        received.fetch_add(1);
        arm(*worker_io);
      });
    };
    RunTask(*pool, [&] {
      absl::StatusOr<PoolIo> io = pool->Io();
      ASSERT_TRUE(io.ok()) << io.status();
      worker_io = *io;
      arm(*worker_io);
    });
    for (int i = 0; i < kMessages; ++i) {
      // Long enough that the worker is polling when the byte lands.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ASSERT_EQ(write(pair.a, "x", 1), 1);
      ASSERT_TRUE(WaitFor([&] { return received.load() == i + 1; }))
          << "message " << i << " was not received";
    }
    pool->Shutdown();
    const WorkerIoCounts c = pool->Stats().workers[0].io;
    // Every message, and the Recv re-armed last, cancelled at shutdown.
    EXPECT_EQ(c.callbacks, static_cast<uint64_t>(kMessages) + 1);
    SCOPED_TRACE(testing::Message() << "polled " << c.polled << ", posted "
                                    << c.posted << ", woke " << c.woke);
    EXPECT_GE(c.polled + c.posted, kMessages * 9 / 10);
    if (GetParam().backend == IoBackend::kEpoll || mode == IoTaskRun::kDefer) {
      EXPECT_EQ(c.posted, 0u) << "nothing is posted behind the worker's back";
    } else if (mode == IoTaskRun::kInterrupt) {
      EXPECT_EQ(c.polled, 0u) << "no task-run flag without the setup flags";
    }
  }
}

TEST_P(PoolIoTest, ShutdownRunsInFlightCallbacksWithECANCELED) {
  SocketPair pair;
  char byte = 0;
  std::atomic<int> result{1};
  std::atomic<int> started_after{1};
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> watch = token;
  auto pool = MakePool(1, "block");
  ASSERT_NE(pool, nullptr);
  RunTask(*pool, [&] {
    absl::StatusOr<PoolIo> io = pool->Io();
    ASSERT_TRUE(io.ok()) << io.status();
    io->Recv(pair.b, &byte, 1,
             [&, again = *io, t = std::move(token)](int r) mutable {
               result = r;
               // An operation started while the worker stops is refused at
               // once, and its callback still runs.
               again.Recv(pair.b, &byte, 1,
                          [&](int r2) { started_after = r2; });
             });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // Blocked.
  const Clock::time_point start = Clock::now();
  pool->Shutdown();
  EXPECT_LT(Clock::now() - start, kPatience);
  EXPECT_EQ(result.load(), -ECANCELED);
  EXPECT_EQ(started_after.load(), -ECANCELED);
  pool.reset();
  EXPECT_TRUE(watch.expired()) << "the callback was not destroyed";
}

// An I/O callback runs "as tasks do", so it may wait for a task it spawned;
// while the task runs on the other worker, the waiting worker runs its
// other completions (ReapCompletions, called from inside a callback).
TEST_P(PoolIoTest, CallbackMayWaitForATaskItSpawned) {
  constexpr int kOthers = 8;
  std::atomic<bool> subtask_started{false};
  std::atomic<bool> subtask_done{false};
  std::atomic<int> others{0};
  std::atomic<int> others_while_waiting{-1};
  std::atomic<bool> waited{false};
  auto pool = MakePool(2);
  ASSERT_NE(pool, nullptr);
  RunTask(*pool, [&] {
    absl::StatusOr<PoolIo> io = pool->Io();
    ASSERT_TRUE(io.ok()) << io.status();
    io->Timeout(0, [&](int) {
      TaskGroup group;
      EXPECT_TRUE(pool->Submit(group,
                               [&] {
                                 subtask_started = true;
                                 std::this_thread::sleep_for(
                                     std::chrono::milliseconds(50));
                                 subtask_done = true;
                               })
                      .ok());
      // Let the other worker take it, so that Wait here finds no task.
      EXPECT_TRUE(WaitFor([&] { return subtask_started.load(); }));
      pool->Wait(group);
      others_while_waiting = others.load();
      waited = subtask_done.load();
    });
    for (int i = 0; i < kOthers; ++i) {
      io->Timeout(1000000, [&](int) { others++; });
    }
  });
  ASSERT_TRUE(WaitFor([&] { return waited.load() && others == kOthers; }))
      << "waited " << waited.load() << ", other callbacks " << others.load();
  // Callbacks never nest (the reactor is not reentrant): the worker's other
  // completions run after the waiting callback returns, not inside it.
  EXPECT_EQ(others_while_waiting.load(), 0)
      << "another I/O callback ran nested inside the waiting one";
  pool->Shutdown();
  EXPECT_EQ(TotalIoCallbacks(pool->Stats()), 1u + kOthers);
}

// A worker that always finds another task (here one that resubmits itself,
// as a cooperative loop or a steady stream of short tasks would) must still
// complete its I/O. Tokio and Go check their I/O driver every so many tasks
// for this reason.
TEST_P(PoolIoTest, IoCompletesWhileTheWorkerAlwaysHasATask) {
  SocketPair pair;
  char byte = 0;
  std::atomic<int> recv_result{-1000};
  std::atomic<bool> spinning{false};
  // Both written on the one worker, so their order is the worker's.
  std::atomic<bool> gave_up{false};
  std::atomic<bool> completed_while_busy{false};
  const Clock::time_point give_up = Clock::now() + kLiveness;
  ThreadPool* pool_ptr = nullptr;
  // Declared before the pool, which runs what is still queued when it is
  // destroyed. Resubmits itself until the Recv completes or time is up.
  std::function<void()> spin = [&] {
    spinning = true;
    if (recv_result.load() != -1000) return;
    if (Clock::now() >= give_up) {
      gave_up = true;
      return;
    }
    ASSERT_TRUE(pool_ptr->Submit([&] { spin(); }).ok());
  };
  auto pool = MakePool(1);
  ASSERT_NE(pool, nullptr);
  pool_ptr = pool.get();
  ASSERT_TRUE(pool->Submit([&] {
                    absl::StatusOr<PoolIo> io = pool->Io();
                    ASSERT_TRUE(io.ok()) << io.status();
                    io->Recv(pair.b, &byte, 1, [&](int r) {
                      completed_while_busy = !gave_up.load();
                      recv_result = r;
                    });
                    spin();
                  })
                  .ok());
  ASSERT_TRUE(WaitFor([&] { return spinning.load(); }));
  ASSERT_EQ(write(pair.a, "x", 1), 1);  // After the Recv started.
  ASSERT_TRUE(WaitFor([&] { return recv_result.load() != -1000; },
                      kLiveness + kPatience))
      << "the Recv never completed, even once the tasks stopped";
  EXPECT_TRUE(completed_while_busy.load())
      << "the Recv's data came, but its callback ran only after the worker "
         "ran out of tasks ("
      << std::chrono::duration_cast<std::chrono::milliseconds>(kLiveness)
             .count()
      << " ms later)";
  EXPECT_EQ(recv_result.load(), 1);
  pool->Shutdown();
}

// An idle worker with a Recv in flight must notice the data under every
// governor, including `poll`, whose window never ends.
TEST_P(PoolIoTest, IdleWorkerNoticesIoUnderEveryGovernor) {
  for (const char* governor :
       {"haltpoll", "predictive", "poll", "block", "fixed"}) {
    SCOPED_TRACE(governor);
    SocketPair pair;
    char byte = 0;
    std::atomic<int> recv_result{-1000};
    auto pool = MakePool(1, governor);
    ASSERT_NE(pool, nullptr);
    RunTask(*pool, [&] {
      absl::StatusOr<PoolIo> io = pool->Io();
      ASSERT_TRUE(io.ok()) << io.status();
      io->Recv(pair.b, &byte, 1, [&](int r) { recv_result = r; });
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // Idle now.
    ASSERT_EQ(write(pair.a, "x", 1), 1);
    EXPECT_TRUE(WaitFor([&] { return recv_result.load() != -1000; }, kLiveness))
        << "an idle worker under `" << governor
        << "` did not notice its Recv's data";
    // Shutdown wakes the worker, which then reaps whatever is ready.
    pool->Shutdown();
    pool.reset();
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, PoolIoTest, AllBackends(), BackendTestName);

}  // namespace
}  // namespace haltpool
