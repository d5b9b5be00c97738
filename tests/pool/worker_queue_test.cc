// WorkerQueue: FIFO for the owner and thieves, a full ring refuses without
// touching the job, queued jobs are destroyed with the queue, and under
// stealing every job is taken exactly once.

#include "runtime/worker_queue.h"

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace haltpool {
namespace {

// A job that records `id` into `*out` when run. The unique_ptr makes the
// task non-trivially-copyable, stored inline (8 + 8 bytes): a lost or
// doubled move shows as a null pointer or a leak (ASan).
Job MakeJob(int id, std::atomic<int>* runs) {
  return Job{[p = std::make_unique<int>(id), runs] {
               runs[*p].fetch_add(1, std::memory_order_relaxed);
             },
             nullptr};
}

TEST(WorkerQueue, CapacityIsAPowerOfTwoAtLeastTwo) {
  EXPECT_EQ(WorkerQueue(0).capacity(), 2u);
  EXPECT_EQ(WorkerQueue(3).capacity(), 4u);
  EXPECT_EQ(WorkerQueue(256).capacity(), 256u);
}

TEST(WorkerQueue, TakesOldestFirst) {
  WorkerQueue q(8);
  std::vector<int> order;
  EXPECT_TRUE(q.Empty());
  EXPECT_FALSE(q.Take().has_value());
  for (int i = 0; i < 5; ++i) {
    Job j{[&order, i] { order.push_back(i); }, nullptr};
    ASSERT_TRUE(q.TryPush(j));
  }
  EXPECT_FALSE(q.Empty());
  while (std::optional<Job> j = q.Take()) j->task();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(q.Empty());
}

TEST(WorkerQueue, AFullRingRefusesAndLeavesTheJob) {
  WorkerQueue q(4);
  std::atomic<int> runs[6] = {};
  for (int i = 0; i < 4; ++i) {
    Job j = MakeJob(i, runs);
    ASSERT_TRUE(q.TryPush(j));
    EXPECT_FALSE(j.task) << "a pushed job is moved from";
  }
  Job extra = MakeJob(4, runs);
  EXPECT_FALSE(q.TryPush(extra));
  ASSERT_TRUE(extra.task) << "a refused job is left as it was";
  extra.task();
  EXPECT_EQ(runs[4].load(), 1);
  // One taken: room for one more, at the slot the taken job left.
  q.Take()->task();
  Job again = MakeJob(5, runs);
  EXPECT_TRUE(q.TryPush(again));
  while (std::optional<Job> j = q.Take()) j->task();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(runs[i].load(), 1) << i;
}

TEST(WorkerQueue, WrapsAroundManyTimes) {
  WorkerQueue q(4);
  std::atomic<int> runs[1000] = {};
  int next_push = 0, next_take = 0;
  while (next_take < 1000) {
    for (int k = 0; k < 3 && next_push < 1000; ++k) {
      Job j = MakeJob(next_push, runs);
      if (!q.TryPush(j)) break;
      ++next_push;
    }
    std::optional<Job> j = q.Take();
    ASSERT_TRUE(j.has_value());
    j->task();
    ASSERT_EQ(runs[next_take].load(), 1) << "out of order at " << next_take;
    ++next_take;
  }
  EXPECT_TRUE(q.Empty());
}

TEST(WorkerQueue, DestroysQueuedJobsUnrun) {
  auto alive = std::make_shared<int>(0);
  std::weak_ptr<int> watch = alive;
  {
    WorkerQueue q(4);
    Job j{[alive = std::move(alive)] { FAIL() << "ran"; }, nullptr};
    ASSERT_TRUE(q.TryPush(j));
  }
  EXPECT_TRUE(watch.expired());
}

// The owner pushes and takes, thieves take, on a small ring that wraps and
// fills often: every job is run exactly once.
TEST(WorkerQueue, StealingTakesEveryJobExactlyOnce) {
  constexpr int kJobs = 200000;
  constexpr int kThieves = 3;
  WorkerQueue q(8);
  auto runs = std::make_unique<std::atomic<int>[]>(kJobs);
  std::atomic<bool> done{false};
  std::atomic<int> stolen{0};
  std::vector<std::thread> thieves;
  for (int t = 0; t < kThieves; ++t) {
    thieves.emplace_back([&] {
      for (;;) {
        if (std::optional<Job> j = q.Take()) {
          j->task();
          stolen.fetch_add(1, std::memory_order_relaxed);
        } else if (done.load(std::memory_order_acquire)) {
          return;
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  int owner_took = 0;
  for (int i = 0; i < kJobs; ++i) {
    Job j = MakeJob(i, runs.get());
    while (!q.TryPush(j)) {
      // Full: the owner takes one itself, as the pool's worker would run.
      if (std::optional<Job> mine = q.Take()) {
        mine->task();
        ++owner_took;
      }
    }
    if (i % 7 == 0) {
      if (std::optional<Job> mine = q.Take()) {
        mine->task();
        ++owner_took;
      }
    }
  }
  done.store(true, std::memory_order_release);
  for (std::thread& t : thieves) t.join();
  while (std::optional<Job> j = q.Take()) {
    j->task();
    ++owner_took;
  }
  int missing = 0, doubled = 0;
  for (int i = 0; i < kJobs; ++i) {
    const int r = runs[i].load();
    missing += r == 0;
    doubled += r > 1;
  }
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(doubled, 0);
  EXPECT_EQ(owner_took + stolen.load(), kJobs);
}

}  // namespace
}  // namespace haltpool
