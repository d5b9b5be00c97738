// Randomized producer/consumer torture of the parker protocol, for every
// governor: between threads and between processes (a WakeWord constructed
// with FutexScope::kShared in a MAP_SHARED mapping, the child fork()ed as
// the waker or as the waiter), with one waker and with several.
//
// The producer stores 1, 2, ..., n to a shared counter and calls Unpark()
// after each store; the consumer parks until it has seen n. Random short
// delays (a spin of random length, now and then sched_yield()) on both sides
// move the race between "the consumer decides to park" and "the producer
// wakes" across every point of Poll() and Block(). After a random eighth of
// its wakes the producer waits until the consumer has caught up, so that
// wake is the only one that can end the consumer's park (otherwise the next
// wake would hide a lost one). A lost wake shows up as a consumer that has
// waited kHangNs (5 s) for a wake while increments it has not seen are
// pending: the test fails with that message instead of hanging.
// After each run every Unpark() must be counted exactly once, and a governor
// that never polls (block) must have no polling wakes, one that never sleeps
// (poll) no FUTEX_WAKE. With an ExternalWait (an "I/O ring" that never has
// an event) every wake that finds the waiter blocked must Kick() the ring.
//
// HOW MANY: the environment variable PARKER_TORTURE_PAIRS is the total number
// of park/unpark pairs (Unpark calls the consumer must observe) over the
// single-waker runs of this file: half between threads, half between
// processes (a quarter with the child waking, a quarter with it waiting),
// each share split evenly over the four governors. tests/idle/BUILD sets it
// to 1000000 for `bazel test`. Unset, it defaults to 40000 so that
// tools/cross-test (everything in one binary under qemu-user, 10-50x slower)
// stays fast. The multi-waker, external-wait and per-wait-mechanism runs come
// on top. The name deliberately lacks the HALTPOOL_ prefix: the runtime
// rejects unknown HALTPOOL_* variables, and a test knob must not trip a real
// program.

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "arch/cpu_wait.h"
#include "arch/cycle_clock.h"
#include "arch/futex.h"
#include "arch/wait_mechanism.h"
#include "gtest/gtest.h"
#include "idle/idle_loop.h"
#include "idle/idle_options.h"
#include "idle/idle_stats.h"
#include "idle/parker.h"
#include "tests/idle/child_process.h"
#include "tests/idle/fake_external_wait.h"

namespace haltpool::idle {
namespace {

using test_support::ChildExit;
using test_support::ForkChild;
using test_support::SharedMemory;
using test_support::WaitChild;

constexpr const char* kPairsVariable = "PARKER_TORTURE_PAIRS";
constexpr int64_t kDefaultPairs = 40000;
constexpr int64_t kHangNs = int64_t{5} * 1000000000;
// How long the parent waits for a child beyond the child's own hang check.
constexpr int64_t kChildTimeoutMs = 60000;

const char* const kTortureGovernors[] = {"haltpoll", "predictive", "poll", "block", "fixed"};

// The total pairs to run, from PARKER_TORTURE_PAIRS; -1 if it is malformed.
int64_t TorturePairs() {
  const char* v = getenv(kPairsVariable);
  if (v == nullptr) return kDefaultPairs;
  int64_t n = 0;
  if (!absl::SimpleAtoi(v, &n) || n < 16) return -1;
  return n;
}

// Pairs run so far by this process, printed at the end.
std::atomic<uint64_t> g_pairs_run{0};

class PairsReport : public ::testing::Environment {
 public:
  void TearDown() override {
    printf("parker torture: %" PRIu64
           " single-waker park/unpark pairs run (%s=%s)\n",
           g_pairs_run.load(), kPairsVariable,
           getenv(kPairsVariable) ? getenv(kPairsVariable) : "unset");
  }
};
::testing::Environment* const g_pairs_report =
    ::testing::AddGlobalTestEnvironment(new PairsReport);

int64_t Now() { return arch::MonotonicNowNs(); }

// A short random pause: mostly nothing or a few relax hints, sometimes a
// spin long enough for a short poll window to run out (up to a few tens of
// microseconds), now and then a yield to the scheduler.
void RandomDelay(std::minstd_rand& rng) {
  const uint32_t r = rng();
  switch (r % 32) {
    case 0:
      sched_yield();
      break;
    case 1:
      for (uint32_t i = (r >> 5) % 2000; i > 0; --i) arch::CpuRelax();
      break;
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
    case 8:
    case 9:
      for (uint32_t i = (r >> 5) % 256; i > 0; --i) arch::CpuRelax();
      break;
    default:
      break;
  }
}

// Everything producer and consumer share; placed in a MAP_SHARED mapping for
// the process forms, so only lock-free atomics and plain bytes.
struct Torture {
  explicit Torture(arch::FutexScope scope) : word(scope) {}

  WakeWord word;
  alignas(64) std::atomic<uint64_t> produced{0};
  alignas(64) std::atomic<uint64_t> seen{0};
  std::atomic<uint64_t> parks{0};
  std::atomic<uint64_t> woken_parks{0};
  std::atomic<bool> consumer_failed{false};  // Producers stop waiting for it.
  char failure[512] = {};
};

// Waits until the consumer has seen `count` increments; false if that takes
// kHangNs (the consumer has lost a wake, and reports it).
bool AwaitSeen(const Torture& t, uint64_t count) {
  const int64_t give_up = Now() + 2 * kHangNs;
  for (int spins = 0; t.seen.load(std::memory_order_acquire) < count; ++spins) {
    if (spins % 16 == 15) {
      if (t.consumer_failed.load(std::memory_order_relaxed) ||
          Now() > give_up) {
        return false;
      }
      sched_yield();
    } else {
      arch::CpuRelax();
    }
  }
  return true;
}

// The producer side: n increments, each followed by a wake. Every few
// increments (at random) it waits until the consumer has caught up, so that
// its last wake is the only one that can end the consumer's next park: a
// lost wake there hangs the consumer instead of being papered over by the
// wakes that follow.
void Produce(Torture& t, uint64_t n, uint32_t seed) {
  std::minstd_rand rng(seed);
  for (uint64_t i = 1; i <= n; ++i) {
    t.produced.store(i, std::memory_order_release);
    if (rng() % 8 == 0) RandomDelay(rng);  // Between the store and its wake.
    t.word.Unpark();
    RandomDelay(rng);
    if (rng() % 8 == 0 && !AwaitSeen(t, i)) return;
  }
}

// Several producers share the n increments; now and then each waits for
// the consumer to catch up with what it produced.
void ProduceShared(Torture& t, uint64_t n, uint32_t seed) {
  std::minstd_rand rng(seed);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t mine =
        t.produced.fetch_add(1, std::memory_order_release) + 1;
    t.word.Unpark();
    RandomDelay(rng);
    if (rng() % 8 == 0 && !AwaitSeen(t, mine)) return;
  }
}

// The consumer side: parks until it has seen n. Returns false, with a
// message in t.failure, if it waited kHangNs for a wake.
bool Consume(Torture& t, Parker& p, uint64_t n, uint32_t seed,
             ExternalWait* external = nullptr) {
  std::minstd_rand rng(seed);
  uint64_t seen = 0;
  while (seen < n) {
    const uint64_t c = t.produced.load(std::memory_order_acquire);
    if (c > seen) {
      if (c > n) {
        snprintf(t.failure, sizeof t.failure,
                 "counter overshoot: %" PRIu64 " > %" PRIu64, c, n);
        t.consumer_failed.store(true);
        return false;
      }
      seen = c;
      t.seen.store(seen, std::memory_order_relaxed);
      if (rng() % 4 == 0) RandomDelay(rng);
      continue;
    }
    // Between "nothing new" and the park: a wake may land anywhere here.
    if (rng() % 4 == 0) RandomDelay(rng);
    t.parks.fetch_add(1, std::memory_order_relaxed);
    if (p.Park(Now() + kHangNs, true, external) == IdleResult::kTimedOut) {
      const uint64_t now = t.produced.load(std::memory_order_acquire);
      if (now > seen) {
        snprintf(
            t.failure, sizeof t.failure,
            "LOST WAKE: the consumer parked %d s without being woken while "
            "%" PRIu64 " increments were pending (seen %" PRIu64
            ", produced %" PRIu64 " of %" PRIu64 ", governor %s, wait %s)",
            static_cast<int>(kHangNs / 1000000000), now - seen, seen, now, n,
            std::string(p.governor().name()).c_str(),
            std::string(arch::WaitMechanismName(p.wait_mechanism())).c_str());
      } else {
        snprintf(t.failure, sizeof t.failure,
                 "the producer made no progress for %d s (seen %" PRIu64
                 " of %" PRIu64 ")",
                 static_cast<int>(kHangNs / 1000000000), seen, n);
      }
      t.consumer_failed.store(true);
      return false;
    }
    t.woken_parks.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

IdleOptions Options(const std::string& governor,
                    std::optional<arch::WaitMechanism> wait = std::nullopt) {
  IdleOptions o;
  o.governor = governor;
  o.wait = wait;
  return o;
}

// The exact counts every finished run must show.
void ExpectExactCounts(const Torture& t, uint64_t n,
                       const std::string& governor) {
  const WakeStats ws = t.word.wake_stats();
  printf("  %s: %" PRIu64 " unparks (%" PRIu64 " while polling, %" PRIu64
         " while running, %" PRIu64 " by FUTEX_WAKE), %" PRIu64
         " parks, %" PRIu64 " woken\n",
         governor.c_str(), n, ws.polling, ws.not_idle, ws.syscall,
         t.parks.load(), t.woken_parks.load());
  EXPECT_EQ(t.produced.load(), n);
  EXPECT_EQ(t.seen.load(), n) << t.failure;
  const WakeStats w = t.word.wake_stats();
  EXPECT_EQ(w.total(), n) << "every Unpark is counted exactly once (polling "
                          << w.polling << ", not idle " << w.not_idle
                          << ", syscall " << w.syscall << ")";
  EXPECT_LE(t.woken_parks.load(), n) << "more wakes taken than given";
  EXPECT_GT(t.parks.load(), 0u) << "the consumer never parked: no race was run";
  if (governor == "block") {
    EXPECT_EQ(w.polling, 0u) << "block never polls";
  }
  if (governor == "poll") {
    EXPECT_EQ(w.syscall, 0u) << "poll never sleeps in the kernel";
  }
}

class ParkerTorture : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    total_ = TorturePairs();
    ASSERT_GT(total_, 0) << kPairsVariable << "='" << getenv(kPairsVariable)
                         << "' is not a whole number >= 16";
  }
  // This run's share of the total: `parts` equal parts of it per governor.
  uint64_t Share(int parts) const {
    return static_cast<uint64_t>(total_) / parts / std::size(kTortureGovernors);
  }
  std::string governor() const { return GetParam(); }

  int64_t total_ = 0;
};

TEST_P(ParkerTorture, Threads) {
  const uint64_t n = Share(2);
  auto t = std::make_unique<Torture>(arch::FutexScope::kPrivate);
  absl::StatusOr<Parker> p = Parker::Create(t->word, Options(governor()));
  ASSERT_TRUE(p.ok()) << p.status();
  std::thread producer([&] { Produce(*t, n, 1); });
  const bool ok = Consume(*t, *p, n, 2);
  producer.join();
  EXPECT_TRUE(ok) << t->failure;
  ExpectExactCounts(*t, n, governor());
  g_pairs_run += n;
}

TEST_P(ParkerTorture, ProcessesChildWakes) {
  const uint64_t n = Share(4);
  SharedMemory<Torture> t(arch::FutexScope::kShared);
  absl::StatusOr<Parker> p = Parker::Create(t->word, Options(governor()));
  ASSERT_TRUE(p.ok()) << p.status();
  const pid_t pid = ForkChild([&] {
    Produce(*t, n, 3);
    return 0;
  });
  ASSERT_GT(pid, 0) << "fork failed";
  const bool ok = Consume(*t, *p, n, 4);
  const ChildExit e = WaitChild(pid, kChildTimeoutMs);
  EXPECT_TRUE(ok) << t->failure;
  EXPECT_TRUE(e.ok()) << "producer child " << e.Describe();
  ExpectExactCounts(*t, n, governor());
  g_pairs_run += n;
}

TEST_P(ParkerTorture, ProcessesChildWaits) {
  const uint64_t n = Share(4);
  SharedMemory<Torture> t(arch::FutexScope::kShared);
  const std::string g = governor();
  const pid_t pid = ForkChild([&] {
    absl::StatusOr<Parker> p = Parker::Create(t->word, Options(g));
    if (!p.ok()) {
      snprintf(t->failure, sizeof t->failure,
               "Parker::Create failed in the child");
      return 2;
    }
    return Consume(*t, *p, n, 5) ? 0 : 1;
  });
  ASSERT_GT(pid, 0) << "fork failed";
  Produce(*t, n, 6);
  const ChildExit e = WaitChild(pid, kChildTimeoutMs);
  EXPECT_TRUE(e.ok()) << "consumer child " << e.Describe() << ": "
                      << t->failure;
  ExpectExactCounts(*t, n, governor());
  g_pairs_run += n;
}

TEST_P(ParkerTorture, SeveralWakersOneWaiter) {
  constexpr int kWakers = 3;
  const uint64_t each = std::max<uint64_t>(1, Share(8) / kWakers);
  const uint64_t n = each * kWakers;
  auto t = std::make_unique<Torture>(arch::FutexScope::kPrivate);
  absl::StatusOr<Parker> p = Parker::Create(t->word, Options(governor()));
  ASSERT_TRUE(p.ok()) << p.status();
  std::vector<std::thread> wakers;
  for (int i = 0; i < kWakers; ++i) {
    wakers.emplace_back([&, i] { ProduceShared(*t, each, 10 + i); });
  }
  const bool ok = Consume(*t, *p, n, 20);
  for (std::thread& w : wakers) w.join();
  EXPECT_TRUE(ok) << t->failure;
  ExpectExactCounts(*t, n, governor());
}

TEST_P(ParkerTorture, ThreadsWithAnExternalWait) {
  // The waiter also watches an "I/O ring" that never has an event: every
  // park ends by a wake, and a wake that finds the waiter blocked must
  // Kick() the ring (the waiter never sleeps in FUTEX_WAIT here).
  const uint64_t n = Share(8);
  auto t = std::make_unique<Torture>(arch::FutexScope::kPrivate);
  fakes::FakeExternalWait ring;
  absl::StatusOr<Parker> p = Parker::Create(t->word, Options(governor()));
  ASSERT_TRUE(p.ok()) << p.status();
  std::thread producer([&] { Produce(*t, n, 40); });
  const bool ok = Consume(*t, *p, n, 41, &ring);
  producer.join();
  EXPECT_TRUE(ok) << t->failure;
  ExpectExactCounts(*t, n, governor());
  const WakeStats w = t->word.wake_stats();
  EXPECT_EQ(w.syscall, ring.kicks())
      << "wakes that found the waiter blocked must have kicked the ring";
  if (governor() == "block") {
    EXPECT_GT(ring.blocks(), 0u) << "the block state must be the ring's";
  }
  if (governor() == "poll") {
    EXPECT_GT(ring.ready_checks(), 0u) << "the poll must watch the ring";
  }
}

INSTANTIATE_TEST_SUITE_P(AllGovernors, ParkerTorture,
                         ::testing::ValuesIn(kTortureGovernors),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

TEST(ParkerTortureWaits, EverySupportedWaitMechanism) {
  // The poll state with each wait instruction this CPU has, under the two
  // governors that alternate poll and block.
  const int64_t total = TorturePairs();
  ASSERT_GT(total, 0);
  const uint64_t n = std::max<int64_t>(1000, total / 100);
  for (arch::WaitMechanism m : arch::kAllWaitMechanisms) {
    if (!arch::CheckWaitMechanism(m).ok()) continue;
    for (const char* governor : {"haltpoll", "fixed"}) {
      SCOPED_TRACE(absl::StrCat(governor, "/", arch::WaitMechanismName(m)));
      auto t = std::make_unique<Torture>(arch::FutexScope::kPrivate);
      absl::StatusOr<Parker> p = Parker::Create(t->word, Options(governor, m));
      ASSERT_TRUE(p.ok()) << p.status();
      std::thread producer([&] { Produce(*t, n, 30); });
      const bool ok = Consume(*t, *p, n, 31);
      producer.join();
      EXPECT_TRUE(ok) << t->failure;
      ExpectExactCounts(*t, n, governor);
    }
  }
}

}  // namespace
}  // namespace haltpool::idle
