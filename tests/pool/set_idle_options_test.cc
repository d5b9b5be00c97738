// ThreadPool::SetIdleOptions: bad changes refused naming the field and
// changing nothing; a change reaches every worker's governor, state table
// and the back-off; no task is lost while other threads re-tune in a loop;
// the statistics count the changes. No speed is asserted.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "idle/idle_state.h"
#include "idle/poll_backoff.h"
#include "runtime/thread_pool.h"

namespace haltpool {
namespace {

using ::testing::HasSubstr;

// `workers` workers under haltpool with the kernel's cap, all allowed to
// poll, no back-off and no calibration: only SetIdleOptions changes how
// they idle. The environment is empty, so no HALTPOOL_* variable interferes.
std::unique_ptr<ThreadPool> MakePool(int workers) {
  PoolOptions o;
  o.workers = workers;
  o.max_pollers = workers;
  o.backoff = false;
  o.calibrate = false;
  o.idle.governor = "haltpoll";
  o.idle.haltpoll.poll_ns = 200000;
  absl::StatusOr<std::unique_ptr<ThreadPool>> p =
      ThreadPool::Create(o, MapEnvironment());
  EXPECT_TRUE(p.ok()) << p.status();
  return *std::move(p);
}

IdleChoices Governor(const char* name) {
  IdleChoices c;
  c.governor = name;
  return c;
}

// True once every worker runs with generation `generation`; false after 10 s.
bool WaitForGeneration(const ThreadPool& pool, uint64_t generation) {
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (absl::Now() < give_up) {
    bool all = true;
    for (const WorkerStats& w : pool.Stats().workers) {
      all = all && w.idle_options_generation == generation;
    }
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// Idle periods: one small task at a time, with pauses between.
void Drive(ThreadPool& pool, int tasks) {
  for (int i = 0; i < tasks; ++i) {
    TaskGroup g;
    ASSERT_TRUE(pool.Submit(g, [] {}).ok());
    pool.Wait(g);
    std::this_thread::sleep_for(std::chrono::microseconds(300));
  }
}

uint64_t Usage(const PoolStats& stats, int state) {
  uint64_t n = 0;
  for (const WorkerStats& w : stats.workers) {
    n += w.idle.per_state[state].usage;
  }
  return n;
}

// Every worker's governor, its block state's costs and the pool's counters
// are as the pool started.
void ExpectUnchanged(const ThreadPool& pool, const idle::StateTable& states) {
  const PoolStats stats = pool.Stats();
  EXPECT_EQ(stats.idle_options.changes, 0u);
  EXPECT_EQ(stats.idle_options.last_change, "");
  for (const WorkerStats& w : stats.workers) {
    EXPECT_EQ(w.idle.governor, "haltpoll");
    EXPECT_EQ(w.idle_options_generation, 0u);
    EXPECT_EQ(w.idle.states[idle::kBlockState].exit_latency_ns,
              states[idle::kBlockState].exit_latency_ns);
  }
}

TEST(SetIdleOptions, BadValuesAreRefusedNamingThemAndNothingChanges) {
  auto pool = MakePool(2);
  Drive(*pool, 3);
  const idle::StateTable states = pool->Stats().workers[0].idle.states;
  struct Case {
    IdleChoices change;
    std::vector<std::string> said;
  };
  std::vector<Case> cases;
  {
    IdleChoices c;
    c.haltpoll.poll_ns = 2000000000;
    cases.push_back({c,
                     {"idle.haltpoll.poll_ns (HALTPOOL_POLL_NS) = 2s",
                      "out of range; accepted: 0 to 1s"}});
  }
  {
    IdleChoices c = Governor("poll");  // Valid, but with a bad one: refused.
    c.haltpoll.grow = 0;
    cases.push_back({c,
                     {"idle.haltpoll.grow (HALTPOOL_POLL_GROW) = 0",
                      "accepted: 1 to 1024"}});
  }
  {
    IdleChoices c;
    c.haltpoll.shrink = -1;
    cases.push_back({c, {"HALTPOOL_POLL_SHRINK) = -1", "accepted: 0 to 1024"}});
  }
  {
    IdleChoices c;
    c.haltpoll.grow_start = -5;
    cases.push_back({c, {"HALTPOOL_POLL_GROW_START) = -5", "accepted: 0 to"}});
  }
  cases.push_back({Governor("menu"),
                   {"idle.governor (HALTPOOL_GOVERNOR) = menu",
                    "accepted: haltpoll|predictive|poll|block|fixed"}});
  {
    // Each valid alone; a fixed window above the cap contradicts it.
    IdleChoices c = Governor("fixed");
    c.fixed_poll_ns = 300000;
    cases.push_back({c,
                     {"HALTPOOL_FIXED_POLL_NS=300us",
                      "is above the poll cap HALTPOOL_POLL_NS=200us",
                      "accepted: a fixed window no longer than the cap"}});
  }
  {
    IdleChoices c;
    c.haltpoll.poll_ns = 1000;  // Below the fixed window set below.
    c.governor = "fixed";
    c.fixed_poll_ns = 2000;
    cases.push_back({c, {"is above the poll cap HALTPOOL_POLL_NS=1us"}});
  }
  {
    IdleChoices c;
    c.block_exit_latency_ns = -1;
    cases.push_back(
        {c, {"idle.block_exit_latency_ns (HALTPOOL_BLOCK_EXIT_LATENCY_NS)"}});
  }
  {
    IdleChoices c;
    c.wait = arch::WaitMechanism::kSpin;
    cases.push_back({c,
                     {"idle.wait (HALTPOOL_WAIT) = spin",
                      "chosen once, when the pool starts", "accepted: unset"}});
  }
  for (const Case& c : cases) {
    const absl::Status s = pool->SetIdleOptions(c.change);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    for (const std::string& part : c.said) {
      EXPECT_THAT(std::string(s.message()), HasSubstr(part));
    }
    Drive(*pool, 2);  // Workers idle again: still nothing to apply.
    ExpectUnchanged(*pool, states);
  }
  // And a good change is seen by the same checks.
  ASSERT_TRUE(pool->SetIdleOptions(Governor("block")).ok());
  ASSERT_TRUE(WaitForGeneration(*pool, 1));
  const PoolStats stats = pool->Stats();
  EXPECT_EQ(stats.idle_options.changes, 1u);
  for (const WorkerStats& w : stats.workers) {
    EXPECT_EQ(w.idle.governor, "block");
  }
}

TEST(SetIdleOptions, BlockThenPollIsSeenInTheWorkersIdleStatistics) {
  auto pool = MakePool(2);
  ASSERT_TRUE(pool->SetIdleOptions({.governor = "block"}).ok());  // README's.
  ASSERT_TRUE(WaitForGeneration(*pool, 1));
  PoolStats before = pool->Stats();
  for (const WorkerStats& w : before.workers) {
    EXPECT_EQ(w.idle.governor, "block") << w.index;
  }
  Drive(*pool, 30);
  PoolStats after = pool->Stats();
  EXPECT_EQ(Usage(after, idle::kPollState), Usage(before, idle::kPollState));
  // Most of the 30 wakes find a worker blocked; one that comes while the
  // worker still retires finds it running.
  EXPECT_GE(Usage(after, idle::kBlockState),
            Usage(before, idle::kBlockState) + 10);

  ASSERT_TRUE(pool->SetIdleOptions(Governor("poll")).ok());
  ASSERT_TRUE(WaitForGeneration(*pool, 2));
  before = pool->Stats();
  for (const WorkerStats& w : before.workers) {
    EXPECT_EQ(w.idle.governor, "poll") << w.index;
  }
  Drive(*pool, 30);
  after = pool->Stats();
  EXPECT_EQ(Usage(after, idle::kBlockState), Usage(before, idle::kBlockState));
  EXPECT_GE(Usage(after, idle::kPollState),
            Usage(before, idle::kPollState) + 10);
}

TEST(SetIdleOptions, TheBlockStatesCostsChange) {
  auto pool = MakePool(2);
  IdleChoices c;
  c.block_exit_latency_ns = 7000;
  c.block_target_residency_ns = 21000;
  ASSERT_TRUE(pool->SetIdleOptions(c).ok());
  ASSERT_TRUE(WaitForGeneration(*pool, 1));
  for (const WorkerStats& w : pool->Stats().workers) {
    EXPECT_EQ(w.idle.states[idle::kBlockState].exit_latency_ns, 7000);
    EXPECT_EQ(w.idle.states[idle::kBlockState].target_residency_ns, 21000);
    EXPECT_EQ(w.idle.governor, "haltpoll");  // Unset fields stay.
  }
}

TEST(SetIdleOptions, TheBackOffShrinksTheNewPollCap) {
  PoolOptions o;
  o.workers = 2;
  o.calibrate = false;
  o.idle.haltpoll.poll_ns = 200000;
  std::atomic<bool> contended{true};
  o.contention_probe = [&contended] {
    idle::ContentionSample s;
    s.usable_cpus = 2;
    s.runnable = contended.load() ? 9 : 1;
    return s;
  };
  auto pool = *ThreadPool::Create(o, MapEnvironment());
  for (int i = 0; i < 2000 && pool->Stats().backoff.level == 0; ++i)
    Drive(*pool, 1);
  contended = false;  // The level now holds, then falls a step at a time.
  IdleChoices c;
  c.haltpoll.poll_ns = 64000;
  ASSERT_TRUE(pool->SetIdleOptions(c).ok());
  bool seen = false;
  for (int i = 0; i < 2000 && !seen; ++i) {
    const BackoffStats b = pool->Stats().backoff;
    if (b.level > 0 && b.level < idle::PollBackoff::kMaxLevel) {
      EXPECT_EQ(b.poll_cap_ns, int64_t{64000} >> b.level);
      seen = true;
    }
    Drive(*pool, 1);
  }
  EXPECT_TRUE(seen) << "the back-off never sat between level 0 and the top";
}

TEST(SetIdleOptions, NoTaskIsLostWhileOtherThreadsRetuneInALoop) {
  constexpr int kSubmitters = 3;
  constexpr int kPerSubmitter = 30000;
  auto pool = MakePool(3);
  std::vector<IdleChoices> changes;
  for (const char* g : {"haltpoll", "poll", "block", "predictive", "fixed"}) {
    changes.push_back(Governor(g));
  }
  {
    IdleChoices c;
    c.haltpoll.poll_ns = 50000;
    c.haltpoll.grow = 4;
    c.haltpoll.grow_start = 10000;
    c.haltpoll.shrink = 0;
    c.haltpoll.allow_shrink = false;
    changes.push_back(c);
    c.haltpoll.poll_ns = 2000000000;  // Refused.
    changes.push_back(c);
  }
  std::atomic<uint64_t> accepted{0};
  auto retune = [&](size_t i) {
    if (pool->SetIdleOptions(changes[i % changes.size()]).ok()) {
      accepted.fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::atomic<bool> done{false};
  std::thread retuner([&] {
    for (size_t i = 0; !done.load(); ++i) {
      retune(i);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  std::vector<std::atomic<uint8_t>> ran(kSubmitters * kPerSubmitter);
  TaskGroup group;
  std::vector<std::thread> submitters;
  for (int t = 0; t < kSubmitters; ++t) {
    submitters.emplace_back([&, t] {
      for (int i = 0; i < kPerSubmitter; ++i) {
        const int k = t * kPerSubmitter + i;
        std::atomic<uint8_t>* slot = &ran[k];
        ASSERT_TRUE(pool->Submit(group,
                                 [&retune, slot, k] {
                                   slot->fetch_add(1,
                                                   std::memory_order_relaxed);
                                   // Workers re-tune too: any thread may.
                                   if (k % 997 == 0) retune(k);
                                 })
                        .ok());
        if (i % 64 == 0) std::this_thread::yield();
      }
    });
  }
  for (auto& s : submitters) s.join();
  pool->Wait(group);
  done.store(true);
  retuner.join();
  for (size_t i = 0; i < ran.size(); ++i) {
    ASSERT_EQ(ran[i].load(), 1) << "task " << i;
  }
  const PoolStats stats = pool->Stats();
  EXPECT_GT(accepted.load(), 0u);
  EXPECT_EQ(stats.idle_options.changes, accepted.load());
  EXPECT_TRUE(WaitForGeneration(*pool, accepted.load()));
}

TEST(SetIdleOptions, TheStatisticsCountTheChanges) {
  auto pool = MakePool(2);
  PoolStats stats = pool->Stats();
  EXPECT_EQ(stats.idle_options.changes, 0u);
  EXPECT_THAT(FormatPoolStatsText(stats),
              HasSubstr("Idle options: as started\n"));
  EXPECT_THAT(FormatPoolStatsText(stats),
              HasSubstr("Idle options: generation 0\n"));
  EXPECT_THAT(
      FormatPoolStatsJson(stats),
      HasSubstr("\"idle_options\":{\"changes\":0,"
                "\"last_change_at_unix_ns\":null,\"last_change\":\"\"}"));

  const absl::Time start = absl::Now();
  ASSERT_TRUE(pool->SetIdleOptions(Governor("block")).ok());
  // A change that sets nothing is no change.
  ASSERT_TRUE(pool->SetIdleOptions(IdleChoices{}).ok());
  IdleChoices c = Governor("fixed");
  c.fixed_poll_ns = 5000;
  c.haltpoll.poll_ns = 100000;
  ASSERT_TRUE(pool->SetIdleOptions(c).ok());
  const absl::Time end = absl::Now();
  ASSERT_TRUE(WaitForGeneration(*pool, 2));
  stats = pool->Stats();
  EXPECT_EQ(stats.idle_options.changes, 2u);
  EXPECT_EQ(stats.idle_options.last_change,
            "HALTPOOL_GOVERNOR=fixed HALTPOOL_POLL_NS=100us "
            "HALTPOOL_FIXED_POLL_NS=5us");
  EXPECT_GE(stats.idle_options.last_change_at, start);
  EXPECT_LE(stats.idle_options.last_change_at, end);
  for (const WorkerStats& w : stats.workers) {
    EXPECT_EQ(w.idle_options_generation, 2u);
    EXPECT_EQ(w.idle.governor, "fixed");
    EXPECT_EQ(w.idle.window_ns, 5000);
  }
  const std::string text = FormatPoolStatsText(stats);
  EXPECT_THAT(text, HasSubstr("Idle options: 2 changes, last at "));
  EXPECT_THAT(text, HasSubstr(" UTC: HALTPOOL_GOVERNOR=fixed "));
  EXPECT_THAT(text, HasSubstr("Idle options: generation 2\n"));
  const std::string json = FormatPoolStatsJson(stats);
  EXPECT_THAT(json,
              HasSubstr(absl::StrCat(
                  "\"idle_options\":{\"changes\":2,\"last_change_at_unix_ns\":",
                  absl::ToUnixNanos(stats.idle_options.last_change_at),
                  ",\"last_change\":\"HALTPOOL_GOVERNOR=fixed")));
  EXPECT_THAT(json, HasSubstr("\"idle_options_generation\":2,"));
}

}  // namespace
}  // namespace haltpool
