// The parker protocol (idle/parker.h): wakes before, during and after a
// park, deadlines, how wakes are counted, every governor and every wait
// mechanism this CPU offers, between threads and between processes.
//
// The long randomized producer/consumer runs live in parker_torture_test.cc.

#include "idle/parker.h"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "arch/cpu_wait.h"
#include "arch/cycle_clock.h"
#include "arch/futex.h"
#include "arch/wait_mechanism.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "idle/governor.h"
#include "idle/governor_registry.h"
#include "idle/idle_loop.h"
#include "idle/idle_options.h"
#include "idle/idle_state.h"
#include "idle/idle_stats.h"
#include "tests/idle/child_process.h"
#include "tests/idle/fake_external_wait.h"

namespace haltpool::idle {
namespace {

using test_support::ChildExit;
using test_support::ForkChild;
using test_support::SharedMemory;
using test_support::WaitChild;
using ::testing::HasSubstr;

constexpr int64_t kMs = 1000000;
constexpr int64_t kSecond = 1000 * kMs;
// Long enough that only a lost wake reaches it; a passing test never waits
// for it.
constexpr int64_t kHangNs = 10 * kSecond;
// How long a waker waits, after the waiter said it is about to park, before
// it assumes the waiter is polling or asleep. Generous for a loaded 2-CPU
// machine or qemu; it bounds nothing but test time.
constexpr int64_t kSettleMs = 50;

const char* const kGovernors[] = {"haltpoll", "predictive", "poll", "block",
                                  "fixed"};

int64_t Now() { return arch::MonotonicNowNs(); }

void SleepMs(int64_t ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

IdleOptions Options(const std::string& governor,
                    std::optional<arch::WaitMechanism> wait = std::nullopt) {
  IdleOptions o;
  o.governor = governor;
  o.wait = wait;
  return o;
}

// Every mechanism CheckWaitMechanism accepts on this machine.
std::vector<arch::WaitMechanism> SupportedWaits() {
  std::vector<arch::WaitMechanism> out;
  for (arch::WaitMechanism m : arch::kAllWaitMechanisms) {
    if (arch::CheckWaitMechanism(m).ok()) out.push_back(m);
  }
  return out;
}

std::string WaitName(arch::WaitMechanism m) {
  return std::string(arch::WaitMechanismName(m));
}

// --- Creation ----------------------------------------------------------------

TEST(ParkerCreate, EveryGovernorAndSupportedWait) {
  ASSERT_FALSE(SupportedWaits().empty()) << "spin, at least, builds everywhere";
  for (const char* governor : kGovernors) {
    WakeWord word;
    absl::StatusOr<Parker> p = Parker::Create(word, Options(governor));
    ASSERT_TRUE(p.ok()) << governor << ": " << p.status();
    EXPECT_EQ(p->governor().name(), governor);
    EXPECT_EQ(p->wait_mechanism(), arch::BestWaitMechanism())
        << "unset wait is the CPU's best";
    for (arch::WaitMechanism m : SupportedWaits()) {
      absl::StatusOr<Parker> q = Parker::Create(word, Options(governor, m));
      ASSERT_TRUE(q.ok()) << governor << "/" << WaitName(m) << ": "
                          << q.status();
      EXPECT_EQ(q->wait_mechanism(), m);
    }
  }
}

TEST(ParkerCreate, BlockStateCostsComeFromTheOptions) {
  WakeWord word;
  IdleOptions o;
  o.block_exit_latency_ns = 1500;
  o.block_target_residency_ns = 3500;
  absl::StatusOr<Parker> p = Parker::Create(word, o);
  ASSERT_TRUE(p.ok()) << p.status();
  const IdleStats st = p->Stats("w", "d");
  EXPECT_EQ(st.states[kBlockState].exit_latency_ns, 1500);
  EXPECT_EQ(st.states[kBlockState].target_residency_ns, 3500);
  EXPECT_EQ(st.states[kPollState].exit_latency_ns, 0);
  o.block_target_residency_ns = -1;
  EXPECT_THAT(std::string(Parker::Create(word, o).status().message()),
              HasSubstr("block_target_residency_ns = -1 is out of range"));
}

TEST(ParkerCreate, RejectsBadOptions) {
  WakeWord word;
  absl::StatusOr<Parker> p = Parker::Create(word, Options("menu"));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("menu"));
  IdleOptions o;
  o.haltpoll.grow = 0;
  p = Parker::Create(word, o);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("haltpoll.grow"));
}

TEST(ParkerCreate, RejectsWaitMechanismsTheCpuLacks) {
  int rejected = 0;
  for (arch::WaitMechanism m : arch::kAllWaitMechanisms) {
    const absl::Status check = arch::CheckWaitMechanism(m);
    if (check.ok()) continue;
    ++rejected;
    WakeWord word;
    absl::StatusOr<Parker> p = Parker::Create(word, Options("haltpoll", m));
    EXPECT_EQ(p.status(), check) << WaitName(m);
  }
  // Every backend lacks the other architectures' instructions.
  EXPECT_GT(rejected, 0);
}

TEST(ParkerSetOptions, TheNextParkUsesTheNewGovernorAndStates) {
  WakeWord word;
  absl::StatusOr<Parker> p = Parker::Create(word, Options("block"));
  ASSERT_TRUE(p.ok()) << p.status();
  // Long enough that a slow (sanitized, loaded) run still reaches the
  // block state before the deadline: the counters below need one block.
  EXPECT_EQ(p->Park(Now() + 20 * kMs), IdleResult::kTimedOut);
  EXPECT_EQ(p->Stats("w", "d").per_state[kPollState].usage, 0u);
  IdleOptions o = Options("poll");
  o.block_exit_latency_ns = 1500;
  o.block_target_residency_ns = 3500;
  ASSERT_TRUE(p->SetOptions(o).ok());
  EXPECT_EQ(p->governor().name(), "poll");
  EXPECT_EQ(p->Park(Now() + kMs), IdleResult::kTimedOut);
  const IdleStats st = p->Stats("w", "d");
  EXPECT_EQ(st.governor, "poll");
  EXPECT_GE(st.per_state[kPollState].usage, 1u);
  EXPECT_EQ(st.per_state[kBlockState].usage, 1u);  // The counters go on.
  EXPECT_EQ(st.states[kBlockState].exit_latency_ns, 1500);
  EXPECT_EQ(st.states[kBlockState].target_residency_ns, 3500);
  // A wake pending across the change is taken by the next Park.
  word.Unpark();
  ASSERT_TRUE(p->SetOptions(Options("haltpoll")).ok());
  EXPECT_EQ(p->Park(Now() + kMs), IdleResult::kWoken);
}

TEST(ParkerSetOptions, RefusesBadOptionsAndAnotherWaitChangingNothing) {
  WakeWord word;
  absl::StatusOr<Parker> p = Parker::Create(word, Options("fixed"));
  ASSERT_TRUE(p.ok()) << p.status();
  IdleOptions o = Options("poll");
  o.haltpoll.grow = 0;
  absl::Status s = p->SetOptions(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("haltpoll.grow = 0"));
  for (arch::WaitMechanism m : arch::kAllWaitMechanisms) {
    if (m == p->wait_mechanism()) continue;
    s = p->SetOptions(Options("poll", m));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << WaitName(m);
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(absl::StrCat("wait = ", WaitName(m))));
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(absl::StrCat("accepted: unset or ",
                                       WaitName(p->wait_mechanism()))));
  }
  EXPECT_EQ(p->governor().name(), "fixed");
  EXPECT_EQ(p->Stats("w", "d").governor, "fixed");
  // Naming the mechanism in use is no change of it.
  EXPECT_TRUE(p->SetOptions(Options("poll", p->wait_mechanism())).ok());
  EXPECT_EQ(p->governor().name(), "poll");
}

TEST(ParkerSetOptions, StatsOnAnotherThreadWhileTheOwnerRetunes) {
  // For the sanitizers: Stats reads the governor and the state table while
  // the owner replaces them between parks.
  WakeWord word;
  absl::StatusOr<Parker> p = Parker::Create(word, Options("haltpoll"));
  ASSERT_TRUE(p.ok()) << p.status();
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      const std::string g = p->Stats("w", "d").governor;
      ASSERT_TRUE(IsGovernorName(g)) << g;
    }
  });
  const char* names[] = {"haltpoll", "predictive", "poll", "block", "fixed"};
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(p->SetOptions(Options(names[i % 5])).ok());
    word.Unpark();
    EXPECT_EQ(p->Park(Now() + kMs), IdleResult::kWoken);
  }
  done.store(true);
  reader.join();
}

// --- Per governor, every supported wait mechanism
// -----------------------------

class ParkerGovernor : public ::testing::TestWithParam<const char*> {
 protected:
  // A parker for `word` under this governor and `wait`; fails the test (and
  // returns nullopt) if creation fails.
  std::optional<Parker> Make(
      WakeWord& word, std::optional<arch::WaitMechanism> wait = std::nullopt) {
    absl::StatusOr<Parker> p = Parker::Create(word, Options(GetParam(), wait));
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return std::nullopt;
    return *std::move(p);
  }
};

TEST_P(ParkerGovernor, ParkAfterUnparkReturnsAtOnce) {
  for (arch::WaitMechanism m : SupportedWaits()) {
    SCOPED_TRACE(WaitName(m));
    WakeWord word;
    std::optional<Parker> p = Make(word, m);
    ASSERT_TRUE(p);
    word.Unpark();
    EXPECT_EQ(p->Park(Now() + kHangNs), IdleResult::kWoken);
    // The wake was consumed: nothing is left for the next park.
    EXPECT_EQ(p->Park(Now() + kMs), IdleResult::kTimedOut);
    const WakeStats w = word.wake_stats();
    EXPECT_EQ(w.not_idle, 1u);
    EXPECT_EQ(w.polling + w.syscall, 0u);
  }
}

TEST_P(ParkerGovernor, WakesBeforeAParkCoalesce) {
  WakeWord word;
  std::optional<Parker> p = Make(word);
  ASSERT_TRUE(p);
  word.Unpark();
  word.Unpark();
  word.Unpark();
  EXPECT_EQ(p->Park(Now() + kHangNs), IdleResult::kWoken);
  EXPECT_EQ(p->Park(Now() + kMs), IdleResult::kTimedOut);
  EXPECT_EQ(word.wake_stats().not_idle, 3u);
  EXPECT_EQ(word.wake_stats().total(), 3u);
}

TEST_P(ParkerGovernor, TimesOutAndLeavesNoPendingWake) {
  for (arch::WaitMechanism m : SupportedWaits()) {
    SCOPED_TRACE(WaitName(m));
    WakeWord word;
    std::optional<Parker> p = Make(word, m);
    ASSERT_TRUE(p);
    for (int64_t timeout : {int64_t{0}, int64_t{1000}, 2 * kMs}) {
      SCOPED_TRACE(absl::StrCat("timeout ", timeout, " ns"));
      EXPECT_EQ(p->Park(Now() + timeout), IdleResult::kTimedOut);
      // The word is back to "not idle": a wake now is neither elided as a
      // poll's nor sent to a sleeper, and it stays pending.
      const WakeStats before = word.wake_stats();
      word.Unpark();
      const WakeStats after = word.wake_stats();
      EXPECT_EQ(after.not_idle, before.not_idle + 1);
      EXPECT_EQ(after.polling, before.polling);
      EXPECT_EQ(after.syscall, before.syscall);
      EXPECT_EQ(p->Park(Now() + kHangNs), IdleResult::kWoken);
      EXPECT_EQ(p->Park(Now() + 100000), IdleResult::kTimedOut);
    }
  }
}

TEST_P(ParkerGovernor, PassedDeadlineTimesOutUnlessAWakeIsPending) {
  WakeWord word;
  std::optional<Parker> p = Make(word);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->Park(0), IdleResult::kTimedOut);
  EXPECT_EQ(p->Park(Now() - kSecond), IdleResult::kTimedOut);
  word.Unpark();
  EXPECT_EQ(p->Park(0), IdleResult::kWoken)
      << "a wake that came before returns";
  EXPECT_EQ(p->Park(0), IdleResult::kTimedOut);
}

TEST_P(ParkerGovernor, WokenByAnotherThread) {
  for (arch::WaitMechanism m : SupportedWaits()) {
    SCOPED_TRACE(WaitName(m));
    WakeWord word;
    std::optional<Parker> p = Make(word, m);
    ASSERT_TRUE(p);
    std::atomic<bool> parking{false};
    std::thread waker([&] {
      while (!parking.load(std::memory_order_acquire)) sched_yield();
      SleepMs(5);
      word.Unpark();
    });
    parking.store(true, std::memory_order_release);
    EXPECT_EQ(p->Park(Now() + kHangNs), IdleResult::kWoken);
    waker.join();
    EXPECT_EQ(word.wake_stats().total(), 1u);
  }
}

TEST_P(ParkerGovernor, PingPongCarriesPlainData) {
  // Two waiters wake each other in turn; each round passes a plain (not
  // atomic) value that only Unpark's release and Park's acquire order.
  // Spinning governors on a shared CPU need the scheduler for every round:
  // keep the count modest.
  const int rounds = std::string(GetParam()) == "poll" ? 200 : 1000;
  WakeWord to_a, to_b;
  std::optional<Parker> pa = Make(to_a);
  std::optional<Parker> pb = Make(to_b);
  ASSERT_TRUE(pa && pb);
  int ball = 0;  // Plain data.
  std::atomic<int> failures{0};
  std::thread b([&] {
    for (int i = 1; i <= rounds; ++i) {
      if (pb->Park(Now() + kHangNs) != IdleResult::kWoken) {
        failures.fetch_add(1);
        return;
      }
      if (ball != 2 * i - 1) failures.fetch_add(1);
      ball = 2 * i;
      to_a.Unpark();
    }
  });
  for (int i = 1; i <= rounds; ++i) {
    ball = 2 * i - 1;
    to_b.Unpark();
    if (pa->Park(Now() + kHangNs) != IdleResult::kWoken) {
      ADD_FAILURE() << "round " << i << ": no reply within "
                    << kHangNs / kSecond << " s";
      break;  // b gives up on its own deadline.
    }
    if (ball != 2 * i) {
      ADD_FAILURE() << "round " << i << ": ball " << ball;
      break;
    }
  }
  b.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(to_a.wake_stats().total(), static_cast<uint64_t>(rounds));
  EXPECT_EQ(to_b.wake_stats().total(), static_cast<uint64_t>(rounds));
}

TEST_P(ParkerGovernor, SeveralWakersOneWaiter) {
  constexpr int kWakers = 3;
  constexpr uint64_t kEach = 10000;
  WakeWord word;
  std::optional<Parker> p = Make(word);
  ASSERT_TRUE(p);
  std::atomic<uint64_t> produced{0};
  std::vector<std::thread> wakers;
  for (int t = 0; t < kWakers; ++t) {
    wakers.emplace_back([&, t] {
      std::minstd_rand rng(t + 1);
      for (uint64_t i = 0; i < kEach; ++i) {
        produced.fetch_add(1, std::memory_order_release);
        word.Unpark();
        if (rng() % 64 == 0) sched_yield();
      }
    });
  }
  uint64_t seen = 0;
  while (seen < kWakers * kEach) {
    const uint64_t c = produced.load(std::memory_order_acquire);
    if (c > seen) {
      seen = c;
      continue;
    }
    if (p->Park(Now() + kHangNs) == IdleResult::kTimedOut) {
      ADD_FAILURE() << "waited " << kHangNs / kSecond << " s with "
                    << produced.load() - seen << " wakes pending (seen " << seen
                    << " of " << kWakers * kEach << ")";
      break;
    }
  }
  for (std::thread& t : wakers) t.join();
  EXPECT_EQ(seen, kWakers * kEach);
  EXPECT_EQ(word.wake_stats().total(), kWakers * kEach)
      << "every Unpark counted once";
}

TEST_P(ParkerGovernor, StatsDescribeTheParker) {
  WakeWord word;
  std::optional<Parker> p = Make(word);
  ASSERT_TRUE(p);
  word.Unpark();
  ASSERT_EQ(p->Park(Now() + kHangNs), IdleResult::kWoken);  // Entered nothing.
  ASSERT_EQ(p->Park(Now() + kMs), IdleResult::kTimedOut);
  const IdleStats st = p->Stats("worker 7", "parker");
  EXPECT_EQ(st.label, "worker 7");
  EXPECT_EQ(st.driver, "parker");
  EXPECT_EQ(st.governor, GetParam());
  EXPECT_EQ(st.wait, WaitName(p->wait_mechanism()));
  EXPECT_STREQ(st.states[kPollState].name, "POLL");
  EXPECT_STREQ(st.states[kBlockState].name, "BLOCK");
  EXPECT_EQ(st.wakes.not_idle, 1u);
  EXPECT_EQ(st.wakes.total(), 1u);
  const uint64_t periods =
      st.per_state[kPollState].usage + st.per_state[kBlockState].usage;
  EXPECT_GE(periods, 1u) << "the timed-out park idled at least once";
  EXPECT_EQ(st.window_ns, p->governor().poll_limit_ns());
  const std::string name = GetParam();
  if (name == "block") {
    EXPECT_EQ(st.per_state[kPollState].usage, 0u);
  }
  if (name == "poll") {
    EXPECT_EQ(st.per_state[kBlockState].usage, 0u);
  }
  if (name == "poll" || name == "block") {
    EXPECT_EQ(st.poll_timeouts, 0u);
  }
}

// --- Between processes
// ---------------------------------------------------------

// A WakeWord in shared memory, with what the two processes tell each other.
struct CrossProcess {
  WakeWord word{arch::FutexScope::kShared};
  std::atomic<int> parking{0};
  int payload = 0;  // Plain data, ordered by Unpark/Park.
};

TEST_P(ParkerGovernor, ChildParksParentWakes) {
  SharedMemory<CrossProcess> shm;
  ASSERT_EQ(shm->word.scope(), arch::FutexScope::kShared);
  const std::string governor = GetParam();
  const pid_t pid = ForkChild([&]() -> int {
    absl::StatusOr<Parker> p = Parker::Create(shm->word, Options(governor));
    if (!p.ok()) return 10;
    shm->parking.store(1, std::memory_order_release);
    if (p->Park(Now() + kHangNs) != IdleResult::kWoken) return 11;
    if (shm->payload != 42) return 12;
    return 0;
  });
  ASSERT_GT(pid, 0);
  const int64_t give_up = Now() + kHangNs;
  while (shm->parking.load(std::memory_order_acquire) == 0 && Now() < give_up) {
    sched_yield();
  }
  SleepMs(kSettleMs);
  shm->payload = 42;
  shm->word.Unpark();
  const ChildExit e = WaitChild(pid, 2 * kHangNs / kMs);
  EXPECT_TRUE(e.ok())
      << "child " << e.Describe()
      << " (10: create failed, 11: not woken, 12: payload lost)";
  const WakeStats w = shm->word.wake_stats();
  EXPECT_EQ(w.total(), 1u);
  if (governor == "block") {
    EXPECT_EQ(w.syscall, 1u) << "the child was asleep";
  }
  if (governor == "poll") {
    EXPECT_EQ(w.polling, 1u) << "the child was polling";
  }
}

TEST_P(ParkerGovernor, ParentParksChildWakes) {
  SharedMemory<CrossProcess> shm;
  absl::StatusOr<Parker> p = Parker::Create(shm->word, Options(GetParam()));
  ASSERT_TRUE(p.ok()) << p.status();
  const pid_t pid = ForkChild([&]() -> int {
    const int64_t give_up = Now() + kHangNs;
    while (shm->parking.load(std::memory_order_acquire) == 0) {
      if (Now() > give_up) return 10;
      sched_yield();
    }
    SleepMs(kSettleMs);
    shm->payload = 7;
    shm->word.Unpark();
    return 0;
  });
  ASSERT_GT(pid, 0);
  shm->parking.store(1, std::memory_order_release);
  EXPECT_EQ(p->Park(Now() + kHangNs), IdleResult::kWoken);
  EXPECT_EQ(shm->payload, 7);
  const ChildExit e = WaitChild(pid, 2 * kHangNs / kMs);
  EXPECT_TRUE(e.ok()) << "child " << e.Describe();
  EXPECT_EQ(shm->word.wake_stats().total(), 1u);
}

INSTANTIATE_TEST_SUITE_P(AllGovernors, ParkerGovernor,
                         ::testing::ValuesIn(kGovernors),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

// --- How wakes are counted ---------------------------------------------------

// Parks `p` on another thread until woken; the caller's `wake` runs once
// that thread has been parking for kSettleMs.
template <typename Wake>
IdleResult ParkOnThreadAndWake(Parker& p, Wake&& wake) {
  std::atomic<bool> parking{false};
  IdleResult result = IdleResult::kTimedOut;
  std::thread waiter([&] {
    parking.store(true, std::memory_order_release);
    result = p.Park(Now() + kHangNs);
  });
  while (!parking.load(std::memory_order_acquire)) sched_yield();
  SleepMs(kSettleMs);
  wake();
  waiter.join();
  return result;
}

TEST(ParkerWakeCounting, WakingASleeperIsASyscall) {
  WakeWord word;
  absl::StatusOr<Parker> p = Parker::Create(word, Options("block"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(ParkOnThreadAndWake(*p, [&] { word.Unpark(); }),
            IdleResult::kWoken);
  const WakeStats w = word.wake_stats();
  EXPECT_EQ(w.syscall, 1u);
  EXPECT_EQ(w.polling, 0u);
  EXPECT_EQ(w.not_idle, 0u);
  const IdleStats st = p->Stats("w", "parker");
  EXPECT_EQ(st.per_state[kBlockState].usage, 1u);
  EXPECT_EQ(st.per_state[kPollState].usage, 0u);
  EXPECT_EQ(st.per_state[kBlockState].above, 0u) << "slept ~50 ms, not < 12 us";
}

// Waits until `word` says its waiter polls; false after kHangNs.
bool AwaitPolling(const WakeWord& word) {
  const int64_t give_up = Now() + kHangNs;
  while (!word.polling()) {
    if (Now() > give_up) return false;
    sched_yield();
  }
  return true;
}

TEST(ParkerWakeCounting, WakingAPollerIsElided) {
  WakeWord word;
  absl::StatusOr<Parker> p = Parker::Create(word, Options("poll"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(word.polling()) << "nobody is parked yet";
  EXPECT_EQ(ParkOnThreadAndWake(*p,
                                [&] {
                                  EXPECT_TRUE(AwaitPolling(word));
                                  word.Unpark();
                                }),
            IdleResult::kWoken);
  EXPECT_FALSE(word.polling()) << "the wake was taken";
  const WakeStats w = word.wake_stats();
  EXPECT_EQ(w.polling, 1u);
  EXPECT_EQ(w.syscall, 0u);
  EXPECT_EQ(w.not_idle, 0u);
  const IdleStats st = p->Stats("w", "parker");
  EXPECT_EQ(st.per_state[kPollState].usage, 1u);
  EXPECT_EQ(st.per_state[kBlockState].usage, 0u);
  EXPECT_EQ(st.per_state[kPollState].below, 1u)
      << "polled ~50 ms: BLOCK would have paid";
}

TEST(ParkerWakeCounting, PollingIsFalseWhileAsleep) {
  WakeWord word;
  absl::StatusOr<Parker> p = Parker::Create(word, Options("block"));
  ASSERT_TRUE(p.ok()) << p.status();
  bool polled = true;
  EXPECT_EQ(ParkOnThreadAndWake(*p,
                                [&] {
                                  polled = word.polling();
                                  word.Unpark();
                                }),
            IdleResult::kWoken);
  EXPECT_FALSE(polled);
}

TEST(ParkerWakeCounting, PollingEndsWithATimedOutPark) {
  WakeWord word;
  absl::StatusOr<Parker> p = Parker::Create(word, Options("poll"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Park(Now() + kMs), IdleResult::kTimedOut);
  EXPECT_FALSE(word.polling());
}

TEST(ParkerWakeCounting, ParkWithoutPollingSleepsUnderEveryGovernor) {
  // allow_poll = false: the poll state is skipped whatever the governor,
  // so a wake that comes while the waiter idles always finds it asleep.
  for (const char* governor : kGovernors) {
    SCOPED_TRACE(governor);
    WakeWord word;
    absl::StatusOr<Parker> p = Parker::Create(word, Options(governor));
    ASSERT_TRUE(p.ok()) << p.status();
    std::atomic<bool> parking{false};
    bool polled = true;
    IdleResult result = IdleResult::kTimedOut;
    std::thread waiter([&] {
      parking.store(true, std::memory_order_release);
      result = p->Park(Now() + kHangNs, /*allow_poll=*/false);
    });
    while (!parking.load(std::memory_order_acquire)) sched_yield();
    SleepMs(kSettleMs);
    polled = word.polling();
    word.Unpark();
    waiter.join();
    EXPECT_EQ(result, IdleResult::kWoken);
    EXPECT_FALSE(polled);
    const WakeStats w = word.wake_stats();
    EXPECT_EQ(w.syscall, 1u);
    EXPECT_EQ(w.polling, 0u);
    const IdleStats st = p->Stats("w", "parker");
    EXPECT_EQ(st.per_state[kPollState].usage, 0u);
    EXPECT_EQ(st.per_state[kBlockState].usage, 1u);
    // Timed out without polling, too.
    EXPECT_EQ(p->Park(Now() + kMs, /*allow_poll=*/false),
              IdleResult::kTimedOut);
    EXPECT_EQ(p->Stats("w", "parker").per_state[kPollState].usage, 0u);
  }
}

TEST(ParkerWakeCounting, HaltpollBlocksFirst) {
  // The window starts at 0, so the first idle period is a block.
  WakeWord word;
  absl::StatusOr<Parker> p = Parker::Create(word, Options("haltpoll"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(ParkOnThreadAndWake(*p, [&] { word.Unpark(); }),
            IdleResult::kWoken);
  EXPECT_EQ(word.wake_stats().syscall, 1u);
  // ~50 ms is longer than the 200 us cap: the window stays 0.
  EXPECT_EQ(p->governor().poll_limit_ns(), 0);
  EXPECT_EQ(p->Stats("w", "parker").window_ns, 0);
}

TEST(ParkerWakeCounting, FixedWindowRunsOutThenSleeps) {
  // The fixed governor polls 2 us, times out and blocks: a wake 50 ms later
  // finds the waiter asleep.
  WakeWord word;
  absl::StatusOr<Parker> p = Parker::Create(word, Options("fixed"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(ParkOnThreadAndWake(*p, [&] { word.Unpark(); }),
            IdleResult::kWoken);
  EXPECT_EQ(word.wake_stats().syscall, 1u);
  const IdleStats st = p->Stats("w", "parker");
  EXPECT_GE(st.poll_timeouts, 1u);
  EXPECT_GE(st.per_state[kBlockState].usage, 1u);
}

TEST(ParkerWakeCounting, EveryWakerThatFindsTheWaiterAsleepCallsFutexWake) {
  // The contract: "every waker that finds kSleeping set calls FUTEX_WAKE, so
  // a waker stalled between its store and its system call cannot hold back
  // the ones after it". A child process parks (block governor) and is
  // stopped with SIGSTOP while asleep, so it cannot take the first wake:
  // each of three wakes must still find it asleep and call FUTEX_WAKE.
  SharedMemory<CrossProcess> shm;
  const pid_t pid = ForkChild([&]() -> int {
    absl::StatusOr<Parker> p = Parker::Create(shm->word, Options("block"));
    if (!p.ok()) return 10;
    shm->parking.store(1, std::memory_order_release);
    if (p->Park(Now() + kHangNs) != IdleResult::kWoken) return 11;
    // The three wakes coalesced into the one just taken.
    if (p->Park(Now() + kMs) != IdleResult::kTimedOut) return 12;
    return 0;
  });
  ASSERT_GT(pid, 0);
  const int64_t give_up = Now() + kHangNs;
  while (shm->parking.load(std::memory_order_acquire) == 0 && Now() < give_up) {
    sched_yield();
  }
  SleepMs(kSettleMs);  // Into FUTEX_WAIT.
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, WUNTRACED), pid);
  ASSERT_TRUE(WIFSTOPPED(status));
  shm->word.Unpark();
  shm->word.Unpark();
  shm->word.Unpark();
  const WakeStats w = shm->word.wake_stats();
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  const ChildExit e = WaitChild(pid, 2 * kHangNs / kMs);
  EXPECT_TRUE(e.ok()) << "child " << e.Describe()
                      << " (11: not woken, 12: a second wake was pending)";
  EXPECT_EQ(w.syscall, 3u) << "polling " << w.polling << ", not idle "
                           << w.not_idle;
  EXPECT_EQ(w.total(), 3u);
}

TEST(ParkerWakeCounting, WakingARunningWaiterIsNotIdle) {
  WakeWord word;
  word.Unpark();
  EXPECT_EQ(word.wake_stats().not_idle, 1u);
  word.Unpark();  // Coalesces with the pending one: still no syscall.
  EXPECT_EQ(word.wake_stats().not_idle, 2u);
  EXPECT_EQ(word.wake_stats().syscall + word.wake_stats().polling, 0u);
}

TEST(ParkerWakeCounting, WakeWordIsSharable) {
  // The contract: standard layout and lock-free, so it may live in shared
  // memory.
  EXPECT_TRUE(std::is_standard_layout_v<WakeWord>);
  EXPECT_TRUE(std::atomic<uint32_t>::is_always_lock_free);
  EXPECT_TRUE(std::atomic<uint64_t>::is_always_lock_free);
  EXPECT_EQ(alignof(WakeWord), 64u);
  EXPECT_EQ(WakeWord().scope(), arch::FutexScope::kPrivate);
  EXPECT_EQ(WakeWord(arch::FutexScope::kShared).scope(),
            arch::FutexScope::kShared);
}

// --- Waiting on something else too (ExternalWait)
// -------------------------------

using fakes::FakeExternalWait;

// Parks `p` with `external` on another thread. `act` runs on this thread
// once the waiter is parking; it returns false if the waiter never got where
// it should, and then the waiter is released with a wake. Returns the Park
// result, or nullopt if Park had not returned 2 s after `act` (it is then
// released with a wake, so the test fails instead of hanging).
template <typename Act>
std::optional<IdleResult> ParkWithExternal(Parker& p, WakeWord& word,
                                           FakeExternalWait& external,
                                           bool allow_poll, Act&& act) {
  std::atomic<bool> parking{false}, returned{false};
  IdleResult result = IdleResult::kTimedOut;
  std::thread waiter([&] {
    parking.store(true, std::memory_order_release);
    result = p.Park(Now() + kHangNs, allow_poll, &external);
    returned.store(true, std::memory_order_release);
  });
  while (!parking.load(std::memory_order_acquire)) sched_yield();
  const bool acted = act();
  const int64_t give_up = Now() + 2 * kSecond;
  while (acted && !returned.load(std::memory_order_acquire) &&
         Now() < give_up) {
    SleepMs(1);
  }
  const bool in_time = acted && returned.load(std::memory_order_acquire);
  if (!in_time) word.Unpark();  // Release it.
  waiter.join();
  if (!in_time) return std::nullopt;
  return result;
}

// Waits up to 2 s for `pred`.
template <typename Pred>
bool Eventually(Pred&& pred) {
  const int64_t give_up = Now() + 2 * kSecond;
  while (!pred()) {
    if (Now() > give_up) return false;
    SleepMs(1);
  }
  return true;
}

TEST(ParkerExternalWait, AnEventEndsThePollState) {
  // Poll governor: the poll state watches external->Ready() too.
  WakeWord word;
  FakeExternalWait ring;
  absl::StatusOr<Parker> p = Parker::Create(word, Options("poll"));
  ASSERT_TRUE(p.ok()) << p.status();
  const std::optional<IdleResult> r =
      ParkWithExternal(*p, word, ring, true, [&] {
        if (!AwaitPolling(word)) return false;
        ring.MakeReady();
        return true;
      });
  ASSERT_TRUE(r.has_value())
      << "Park did not return on an external event while polling (Ready() "
         "was called "
      << ring.ready_checks() << " times)";
  EXPECT_EQ(*r, IdleResult::kWoken);
  EXPECT_GT(ring.ready_checks(), 0u);
  EXPECT_EQ(word.wake_stats().total(), 0u) << "no wake was sent";
  EXPECT_FALSE(word.polling()) << "the poll is over";
}

TEST(ParkerExternalWait, TheBlockStateIsTheExternalBlock) {
  WakeWord word;
  FakeExternalWait ring;
  absl::StatusOr<Parker> p = Parker::Create(word, Options("block"));
  ASSERT_TRUE(p.ok()) << p.status();
  const std::optional<IdleResult> r =
      ParkWithExternal(*p, word, ring, true, [&] {
        if (!Eventually([&] { return ring.in_block(); })) return false;
        ring.MakeReady();
        return true;
      });
  EXPECT_GE(ring.blocks(), 1u)
      << "the waiter never blocked in the ExternalWait";
  ASSERT_TRUE(r.has_value()) << "Park did not return on an external event";
  EXPECT_EQ(*r, IdleResult::kWoken);
  EXPECT_EQ(word.wake_stats().total(), 0u);
}

TEST(ParkerExternalWait, AWakeKicksTheExternalBlock) {
  WakeWord word;
  FakeExternalWait ring;
  absl::StatusOr<Parker> p = Parker::Create(word, Options("block"));
  ASSERT_TRUE(p.ok()) << p.status();
  const std::optional<IdleResult> r =
      ParkWithExternal(*p, word, ring, true, [&] {
        if (!Eventually([&] { return ring.in_block(); })) return false;
        word.Unpark();
        return true;
      });
  ASSERT_TRUE(r.has_value()) << "the waiter never blocked in the ExternalWait";
  EXPECT_EQ(*r, IdleResult::kWoken);
  EXPECT_EQ(ring.kicks(), 1u)
      << "the wake must Kick() the ring, not FUTEX_WAKE";
  EXPECT_EQ(word.wake_stats().syscall, 1u);
  EXPECT_EQ(word.wake_stats().total(), 1u);
}

TEST(ParkerExternalWait, AReadyEventEndsAParkUnderEveryGovernor) {
  for (const char* governor : kGovernors) {
    SCOPED_TRACE(governor);
    WakeWord word;
    FakeExternalWait ring;
    ring.MakeReady();
    absl::StatusOr<Parker> p = Parker::Create(word, Options(governor));
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->Park(Now() + 100 * kMs, true, &ring), IdleResult::kWoken);
    EXPECT_EQ(word.wake_stats().total(), 0u);
  }
}

TEST(ParkerExternalWait, TimesOutAndResetsTheWord) {
  for (const char* governor : kGovernors) {
    SCOPED_TRACE(governor);
    WakeWord word;
    FakeExternalWait ring;
    absl::StatusOr<Parker> p = Parker::Create(word, Options(governor));
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->Park(Now() + 2 * kMs, true, &ring), IdleResult::kTimedOut);
    EXPECT_FALSE(word.polling());
    word.Unpark();
    EXPECT_EQ(word.wake_stats().not_idle, 1u) << "the waiter is not idle now";
    EXPECT_EQ(ring.kicks(), 0u);
    EXPECT_EQ(p->Park(Now() + kHangNs, true, &ring), IdleResult::kWoken);
  }
}

// --- Deadlines are lower bounds
// ------------------------------------------------

TEST(ParkerDeadline, TimedOutIsNeverReportedBeforeTheDeadline) {
  // Park's contract: kTimedOut once CLOCK_MONOTONIC passes deadline_ns.
  // Many short parks with random deadlines, for every governor; each
  // timed-out one is checked against the clock read after it returned. The
  // poll state waits on the CPU counter, converted from the deadline once:
  // a conversion that comes out early must not surface as an early timeout.
  for (const char* governor : kGovernors) {
    SCOPED_TRACE(governor);
    WakeWord word;
    absl::StatusOr<Parker> p = Parker::Create(word, Options(governor));
    ASSERT_TRUE(p.ok()) << p.status();
    std::minstd_rand rng(7);
    int parks = 0, early = 0;
    int64_t worst_ns = 0;
    const int64_t stop = Now() + 50 * kMs;
    while (Now() < stop) {
      const int64_t deadline = Now() + 200 + static_cast<int64_t>(rng() % 5000);
      const IdleResult r = p->Park(deadline);
      const int64_t now = Now();
      ++parks;
      if (r == IdleResult::kTimedOut && now < deadline) {
        ++early;
        worst_ns = std::max(worst_ns, deadline - now);
      }
    }
    EXPECT_EQ(early, 0) << early << " of " << parks
                        << " parks returned kTimedOut before their deadline, "
                           "the worst by "
                        << worst_ns << " ns";
  }
}

}  // namespace
}  // namespace haltpool::idle
