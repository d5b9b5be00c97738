// Torture of a worker's I/O idle (docs/DESIGN.md, "I/O idle"), built with
// random delays and sched_yield() at every marked step of the parker and the
// pool (tests/torture/protocol_chaos.cc), the I/O poll and block included
// (Parker::PollWith, Parker::BlockIn). For every governor, on each backend
// and, for io_uring, each task-run mode: pool tasks play ping-pong over
// socket pairs (PoolIo Recv, then Send of the same sequence number back)
// while outside threads write the next number after a random gap. The gaps
// put each completion before the poll, during it, between the poll and the
// block, and while the worker sleeps in its ring. For the first half of the
// round trips another outside thread submits tasks at random, so that wakes
// (and the kicks of workers asleep in their rings) race the completions; in
// the second half a completion is the only thing that can end its worker's
// idle, so a lost one hangs its chain.
//
// Every completion must be delivered exactly once (the sequence numbers
// arrive in order on both sides, the callbacks are counted), every task
// must run once, and nothing may hang: an outside thread that waits kHang
// for a reply fails the test with the chain, the round and the counts
// instead of waiting for Bazel's timeout. A poll that does not see a
// completion the kernel holds for the worker (a poll predicate that
// ignores io_uring's task-run flag) hangs the poll governor's rounds under
// the defer mode, where only the worker's own system call posts it.

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "arch/cpu_wait.h"
#include "gtest/gtest.h"
#include "runtime/io/io_backend.h"
#include "runtime/io/io_reactor.h"
#include "runtime/thread_pool.h"
#include "tests/torture/protocol_chaos.h"

namespace haltpool {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kScale = 4;  // Sanitizers run the same test on fewer rounds.
#else
constexpr int kScale = 1;
#endif
constexpr int kWorkers = 3;  // More than the 2 CPUs of the CI machine.
constexpr int kChains = 4;   // Socket pairs, each with its outside thread.
constexpr uint64_t kRounds = 300 / kScale;  // Round trips per chain.
// Far above a round trip (microseconds), so only a lost completion or wake
// reaches it.
constexpr absl::Duration kHang = absl::Seconds(10);

struct Case {
  const char* governor;
  IoBackend backend;
  IoTaskRun task_run;  // io_uring only.

  friend void PrintTo(const Case& c, std::ostream* os) {
    *os << c.governor << ", "
        << (c.backend == IoBackend::kEpoll
                ? std::string("epoll")
                : absl::StrCat("io_uring ", kIoTaskRuns.Name(c.task_run)));
  }
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  if (c.backend == IoBackend::kEpoll) return absl::StrCat(c.governor, "_epoll");
  return absl::StrCat(c.governor, "_uring_", kIoTaskRuns.Name(c.task_run));
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const char* governor :
       {"haltpoll", "predictive", "poll", "block", "fixed"}) {
    for (IoTaskRun mode :
         {IoTaskRun::kInterrupt, IoTaskRun::kCoop, IoTaskRun::kDefer}) {
      cases.push_back({governor, IoBackend::kUring, mode});
    }
    // epoll has no task-run modes.
    cases.push_back({governor, IoBackend::kEpoll, IoTaskRun::kCoop});
  }
  return cases;
}

// A short random pause before the next write: none, a spin, a yield, a
// sleep that a polling worker may sit through, or one long enough for any
// governor's window to run out and the worker to block in its ring.
void Gap(std::minstd_rand& rng) {
  const uint32_t r = rng();
  switch (r % 8) {
    case 0:
    case 1:
      break;
    case 2:
    case 3:
      for (uint32_t i = (r >> 3) % 2000; i > 0; --i) arch::CpuRelax();
      break;
    case 4:
      std::this_thread::yield();
      break;
    case 5:
    case 6:
      absl::SleepFor(absl::Microseconds(20 + (r >> 3) % 200));
      break;
    default:
      absl::SleepFor(absl::Microseconds(500 + (r >> 3) % 1500));
      break;
  }
}

// The pool's side of one socket pair: a Recv of the next sequence number,
// and once it has all 8 bytes, a Send of it back and the next Recv. Runs on
// the worker that started it (its callbacks run there); the counters are
// read by the test thread.
struct Chain {
  ThreadPool* pool = nullptr;
  int fd = -1;
  uint64_t next = 1;  // The sequence number expected.
  uint64_t in = 0;
  uint64_t out = 0;
  size_t got = 0;                      // Bytes of `in` received so far.
  std::atomic<uint64_t> recvs{0};      // Whole numbers received.
  std::atomic<uint64_t> sends{0};      // Send callbacks.
  std::atomic<uint64_t> callbacks{0};  // Every I/O callback of this chain.
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> out_of_order{0};

  void Start() {
    absl::StatusOr<PoolIo> io = pool->Io();
    if (!io.ok()) {
      ++errors;
      return;
    }
    Recv(*io);
  }

  void Recv(PoolIo& io) {
    io.Recv(fd, reinterpret_cast<char*>(&in) + got, sizeof(in) - got,
            [this](int r) { OnRecv(r); });
  }

  void OnRecv(int r) {
    ++callbacks;
    absl::StatusOr<PoolIo> io = pool->Io();
    if (!io.ok() || r <= 0) {
      ++errors;
      return;
    }
    got += static_cast<size_t>(r);
    if (got < sizeof(in)) {  // A short read: receive the rest.
      Recv(*io);
      return;
    }
    got = 0;
    if (in != next) ++out_of_order;
    next = in + 1;
    ++recvs;
    // The kernel has copied the previous reply: the outside thread read it
    // before it wrote this number.
    out = in;
    io->Send(fd, &out, sizeof(out), [this](int sent) {
      ++callbacks;
      if (sent != static_cast<int>(sizeof(out))) ++errors;
      ++sends;
    });
    if (in < kRounds) Recv(*io);
  }
};

// One outside thread's side of a chain: write 1 .. kRounds, each after a
// random gap, and read each back before the next.
struct Driver {
  int fd = -1;
  uint32_t seed = 1;
  std::atomic<uint64_t>* all_done = nullptr;  // Over every driver.
  uint64_t done = 0;                          // Round trips completed.
  uint64_t stuck_at = 0;  // The round whose reply never came; 0 if none.
  uint64_t wrong_replies = 0;
  int io_error = 0;  // errno of a failed write or read.

  // Reads exactly `len` bytes before `limit`; false on a hang or an error.
  bool ReadAll(char* buf, size_t len, absl::Time limit) {
    while (len > 0) {
      const int64_t ms = absl::ToInt64Milliseconds(limit - absl::Now());
      if (ms <= 0) return false;
      pollfd p{fd, POLLIN, 0};
      const int n = poll(&p, 1, static_cast<int>(ms));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (n < 0) io_error = errno;
        return false;
      }
      const ssize_t r = read(fd, buf, len);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        io_error = r < 0 ? errno : EPIPE;
        return false;
      }
      buf += r;
      len -= static_cast<size_t>(r);
    }
    return true;
  }

  void Run() {
    std::minstd_rand rng(seed);
    for (uint64_t seq = 1; seq <= kRounds; ++seq) {
      Gap(rng);
      if (write(fd, &seq, sizeof(seq)) != static_cast<ssize_t>(sizeof(seq))) {
        io_error = errno;
        stuck_at = seq;
        return;
      }
      uint64_t reply = 0;
      if (!ReadAll(reinterpret_cast<char*>(&reply), sizeof(reply),
                   absl::Now() + kHang)) {
        stuck_at = seq;
        return;
      }
      if (reply != seq) ++wrong_replies;
      done = seq;
      all_done->fetch_add(1);
    }
  }
};

class IoTorture : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (GetParam().backend != IoBackend::kUring) return;
    // The mode asked for, or a skip: a kernel that refuses its flags would
    // make this case test a milder mode under the wrong name.
    IoReactorOptions options;
    options.task_run = GetParam().task_run;
    absl::StatusOr<std::unique_ptr<IoReactor>> probe =
        MakeIoReactor(IoBackend::kUring, nullptr, options);
    if (!probe.ok()) GTEST_SKIP() << "no io_uring here: " << probe.status();
    const std::string setup((*probe)->setup());
    const absl::string_view mode = kIoTaskRuns.Name(GetParam().task_run);
    if (!absl::StartsWith(setup, mode) || absl::StrContains(setup, "refused")) {
      GTEST_SKIP() << "the kernel does not set up io_uring as '" << mode
                   << "': " << setup;
    }
  }
};

TEST_P(IoTorture, EveryCompletionExactlyOnceAndNoHang) {
  const Case& c = GetParam();
  PoolOptions options;
  options.workers = kWorkers;
  options.idle.governor = c.governor;
  options.io = c.backend;
  options.io_task_run = c.task_run;
  // Each governor's choice stands: on two CPUs the back-off would turn most
  // polls into blocks. Calibration would only cost time.
  options.backoff = false;
  options.calibrate = false;
  options.max_pollers = kWorkers;  // Every idle worker may poll its ring.
  std::vector<Chain> chains(kChains);
  std::vector<Driver> drivers(kChains);
  std::vector<int> fds;
  std::atomic<uint64_t> all_done{0};
  for (int i = 0; i < kChains; ++i) {
    int pair[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    fds.push_back(pair[0]);
    fds.push_back(pair[1]);
    drivers[i].fd = pair[0];
    drivers[i].seed = static_cast<uint32_t>(17 * i + 1);
    drivers[i].all_done = &all_done;
    chains[i].fd = pair[1];
  }
  absl::StatusOr<std::unique_ptr<ThreadPool>> created =
      ThreadPool::Create(options, MapEnvironment());
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<ThreadPool> pool = *std::move(created);
  const uint64_t steps_before = torture::ProtocolSteps();

  for (Chain& chain : chains) {
    chain.pool = pool.get();
    ASSERT_TRUE(pool->Submit([&chain] { chain.Start(); }).ok());
  }
  std::vector<std::thread> threads;
  for (Driver& d : drivers) threads.emplace_back([&d] { d.Run(); });

  // Tasks from outside at random moments over the first half of the round
  // trips, so wakes (and the kicks of workers asleep in their rings) race
  // the completions.
  std::atomic<uint64_t> tasks_ran{0};
  uint64_t tasks_submitted = 0;
  std::thread submitter([&] {
    std::minstd_rand rng(4242);
    while (all_done.load() < kChains * kRounds / 2) {
      Gap(rng);
      if (pool->Submit([&tasks_ran] { ++tasks_ran; }).ok()) ++tasks_submitted;
    }
  });
  submitter.join();
  for (std::thread& t : threads) t.join();
  // What each chain's worker had received when its driver stopped: after
  // the shutdown below, a completion that was stuck has been reaped.
  std::vector<uint64_t> recvs_at_end;
  for (const Chain& ch : chains) recvs_at_end.push_back(ch.recvs.load());
  // The last Send's callback may run after its reply was read, and a
  // shutdown drops the callbacks of I/O in flight: wait for them first.
  auto settled = [&] {
    for (const Chain& ch : chains) {
      if (ch.sends.load() < ch.recvs.load()) return false;
    }
    return tasks_ran.load() >= tasks_submitted;
  };
  const absl::Time limit = absl::Now() + kHang;
  while (!settled() && absl::Now() < limit) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  const uint64_t ran_before_shutdown = tasks_ran.load();
  pool->Shutdown();
  const PoolStats stats = pool->Stats();
  uint64_t io_callbacks = 0, polled = 0, posted = 0, woke = 0;
  std::string setup;
  for (const WorkerStats& w : stats.workers) {
    io_callbacks += w.io.callbacks;
    polled += w.io.polled;
    posted += w.io.posted;
    woke += w.io.woke;
    if (setup.empty()) setup = w.io_setup;
  }
  const std::string where =
      absl::StrCat("governor ", c.governor, ", ",
                   c.backend == IoBackend::kUring ? "io_uring " + setup
                                                  : std::string("epoll"));
  absl::PrintF(
      "io torture, %s: %d chains x %d round trips; completions found polling "
      "%d (posted by an interrupt %d), ending a block in the ring %d; %d "
      "tasks\n",
      where, kChains, kRounds, polled, posted, woke, tasks_submitted);

  for (int i = 0; i < kChains; ++i) {
    const Driver& d = drivers[i];
    const Chain& ch = chains[i];
    SCOPED_TRACE(absl::StrCat(where, ", chain ", i));
    EXPECT_EQ(d.stuck_at, 0u)
        << "round trip " << d.stuck_at << " of " << kRounds
        << " hung: no reply within " << absl::FormatDuration(kHang)
        << "; its worker had received " << recvs_at_end[i]
        << " numbers by then: a completion or a wake was lost (errno "
        << d.io_error << ")";
    EXPECT_EQ(d.done, kRounds);
    EXPECT_EQ(d.wrong_replies, 0u) << "replies not echoing their number";
    EXPECT_EQ(ch.recvs.load(), kRounds) << "numbers received";
    EXPECT_EQ(ch.sends.load(), kRounds) << "send callbacks";
    EXPECT_EQ(ch.out_of_order.load(), 0u)
        << "a number received twice or skipped";
    EXPECT_EQ(ch.errors.load(), 0u) << "failed or short operations";
  }
  uint64_t chain_callbacks = 0;
  for (const Chain& ch : chains) chain_callbacks += ch.callbacks.load();
  EXPECT_EQ(io_callbacks, chain_callbacks)
      << where << ": the workers ran callbacks the chains did not see";
  EXPECT_GE(chain_callbacks, 2 * kChains * kRounds) << where;
  EXPECT_EQ(ran_before_shutdown, tasks_submitted)
      << where << ": a task submitted from outside never ran (lost wake)";
  EXPECT_EQ(tasks_ran.load(), tasks_submitted) << where;
  EXPECT_GT(torture::ProtocolSteps(), steps_before)
      << "the protocol's steps were not hooked: not a torture build";
  pool.reset();  // Before the chains its callbacks point to.
  for (int fd : fds) close(fd);
}

INSTANTIATE_TEST_SUITE_P(EveryGovernorBackendAndMode, IoTorture,
                         testing::ValuesIn(AllCases()), CaseName);

}  // namespace
}  // namespace haltpool
