// Pinning really applies: each worker's affinity is what PlanPlacement
// chose; the default worker count follows the affinity mask.

#include <sched.h>

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "arch/thread_affinity.h"
#include "gtest/gtest.h"
#include "runtime/cpu_quota.h"
#include "runtime/thread_pool.h"

namespace haltpool {
namespace {

std::set<int> MyCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::set<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.insert(c);
  }
  return cpus;
}

// Runs one task on every worker (a barrier makes each take one) and
// returns what each saw as its affinity, by worker index.
std::vector<std::set<int>> AffinityOfEachWorker(ThreadPool& pool) {
  const int n = pool.size();
  std::vector<std::set<int>> seen(n);
  std::atomic<int> arrived{0};
  absl::Mutex mu;
  TaskGroup group;
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(pool.Submit(group,
                            [&] {
                              arrived++;
                              while (arrived.load() < n)
                                std::this_thread::yield();
                              absl::MutexLock lock(&mu);
                              seen[ThreadPool::CurrentWorkerIndex()] = MyCpus();
                            })
                    .ok());
  }
  pool.Wait(group);
  return seen;
}

TEST(PoolPlacement, PuPinningGivesEachWorkerOneCpu) {
  const std::set<int> allowed = MyCpus();
  PoolOptions o;
  o.pin = PinMode::kPu;
  auto pool = ThreadPool::Create(o, MapEnvironment());
  ASSERT_TRUE(pool.ok()) << pool.status();
  const std::vector<std::set<int>> seen = AffinityOfEachWorker(**pool);
  const PoolStats stats = (*pool)->Stats();
  std::set<int> used;
  for (int i = 0; i < (*pool)->size(); ++i) {
    ASSERT_EQ(seen[i].size(), 1u) << "worker " << i;
    EXPECT_EQ(*seen[i].begin(), stats.workers[i].cpu) << "worker " << i;
    EXPECT_TRUE(allowed.count(*seen[i].begin()));
    used.insert(*seen[i].begin());
  }
  // One worker per usable CPU by default, each on its own CPU.
  EXPECT_EQ(used.size(), static_cast<size_t>((*pool)->size()));
}

TEST(PoolPlacement, CorePinningKeepsWorkersOnTheirCore) {
  PoolOptions o;
  o.pin = PinMode::kCore;
  o.workers = 2;
  auto pool = ThreadPool::Create(o, MapEnvironment());
  ASSERT_TRUE(pool.ok()) << pool.status();
  const std::vector<std::set<int>> seen = AffinityOfEachWorker(**pool);
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(seen[i].empty());
    EXPECT_LT(seen[i].size(), MyCpus().size() + 1);
  }
}

TEST(PoolPlacement, NoPinningLeavesTheMaskAlone) {
  const std::set<int> allowed = MyCpus();
  auto pool = ThreadPool::Create({}, MapEnvironment());
  ASSERT_TRUE(pool.ok()) << pool.status();
  for (const std::set<int>& s : AffinityOfEachWorker(**pool))
    EXPECT_EQ(s, allowed);
  for (const WorkerStats& w : (*pool)->Stats().workers) EXPECT_EQ(w.cpu, -1);
}

TEST(PoolPlacement, ACpuListConfinesEveryWorkerToIt) {
  const std::set<int> allowed = MyCpus();
  ASSERT_FALSE(allowed.empty());
  const int last = *allowed.rbegin();
  PoolOptions o;
  o.cpus = std::vector<int>{last};
  auto pool = ThreadPool::Create(o, MapEnvironment());
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_EQ((*pool)->size(), 1) << "one worker per listed CPU by default";
  for (const std::set<int>& s : AffinityOfEachWorker(**pool)) {
    EXPECT_EQ(s, std::set<int>{last});
  }
  EXPECT_NE((*pool)->placement_note().find(absl::StrCat("cpus ", last)),
            std::string::npos)
      << (*pool)->placement_note();
  // With a pin mode, the workers are placed within the list.
  o.pin = PinMode::kPu;
  o.workers = 2;
  pool = ThreadPool::Create(o, MapEnvironment());
  ASSERT_TRUE(pool.ok()) << pool.status();
  for (const std::set<int>& s : AffinityOfEachWorker(**pool)) {
    EXPECT_EQ(s, std::set<int>{last});
  }
}

TEST(PoolPlacement, ACpuOutsideTheMaskIsRefusedNamingIt) {
  const std::set<int> allowed = MyCpus();
  int outside = 0;
  while (allowed.count(outside)) ++outside;
  const auto pool =
      ThreadPool::Create({}, MapEnvironment(std::map<std::string, std::string>{
                                 {"HALTPOOL_CPUS", absl::StrCat(outside)}}));
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      pool.status().message(),
      absl::StrCat("cpus (HALTPOOL_CPUS) = ", outside, ": CPU ", outside,
                   " is not in the creating thread's affinity mask; "
                   "accepted: all, or CPUs of ",
                   arch::FormatCpuList({allowed.begin(), allowed.end()})));
}

TEST(PoolPlacement, DefaultWorkerCountIsTheUsableCpus) {
  auto quota = ProcessCpuQuota();
  ASSERT_TRUE(quota.ok()) << quota.status();
  auto pool = ThreadPool::Create({}, MapEnvironment());
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_EQ((*pool)->size(), quota->usable_cpus);
  EXPECT_NE((*pool)->placement_note().find(quota->explanation),
            std::string::npos);
}

TEST(PoolPlacement, TheEnvironmentHasTheLastWord) {
  PoolOptions o;
  o.workers = 3;
  auto pool = ThreadPool::Create(
      o, MapEnvironment(
             std::map<std::string, std::string>{{"HALTPOOL_WORKERS", "1"}}));
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_EQ((*pool)->size(), 1);
  auto bad = ThreadPool::Create(
      o, MapEnvironment(
             std::map<std::string, std::string>{{"HALTPOOL_PIN", "socket"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("HALTPOOL_PIN='socket'"),
            absl::string_view::npos)
      << bad.status();
  EXPECT_NE(bad.status().message().find("none|core|pu"),
            absl::string_view::npos);
}

}  // namespace
}  // namespace haltpool
