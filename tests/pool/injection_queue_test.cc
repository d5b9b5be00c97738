// InjectionQueue: FIFO through the ring and its overflow, queued jobs are
// destroyed with the queue, and with many producers and consumers every job
// is taken exactly once.

#include "runtime/injection_queue.h"

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace haltpool {
namespace {

// As in worker_queue_test: a non-trivially-copyable task, stored inline.
Job MakeJob(int id, std::atomic<int>* runs) {
  return Job{[p = std::make_unique<int>(id), runs] {
               runs[*p].fetch_add(1, std::memory_order_relaxed);
             },
             nullptr};
}

TEST(InjectionQueue, RingCapacityIsAPowerOfTwoAtLeastTwo) {
  EXPECT_EQ(InjectionQueue(1).ring_capacity(), 2u);
  EXPECT_EQ(InjectionQueue(1000).ring_capacity(), 1024u);
}

TEST(InjectionQueue, FifoThroughTheRingAndTheOverflow) {
  InjectionQueue q(4);
  std::vector<int> order;
  EXPECT_TRUE(q.Empty());
  EXPECT_FALSE(q.Pop().has_value());
  auto push = [&](int i) { q.Push(Job{[&order, i] { order.push_back(i); }}); };
  // 0-3 fill the ring, 4-9 overflow.
  for (int i = 0; i < 10; ++i) push(i);
  EXPECT_FALSE(q.Empty());
  // Two taken from the ring: room there, but 10 and 11 must queue behind
  // the overflow's jobs.
  q.Pop()->task();
  q.Pop()->task();
  push(10);
  push(11);
  while (std::optional<Job> j = q.Pop()) j->task();
  std::vector<int> want;
  for (int i = 0; i < 12; ++i) want.push_back(i);
  EXPECT_EQ(order, want);
  EXPECT_TRUE(q.Empty());
  // Drained: the ring takes pushes again.
  push(12);
  EXPECT_FALSE(q.Empty());
  q.Pop()->task();
  EXPECT_EQ(order.back(), 12);
}

TEST(InjectionQueue, DestroysQueuedJobsUnrun) {
  auto alive = std::make_shared<int>(0);
  std::weak_ptr<int> watch = alive;
  {
    InjectionQueue q(2);
    for (int i = 0; i < 5; ++i) {  // Ring and overflow.
      q.Push(Job{[alive] { FAIL() << "ran"; }, nullptr});
    }
    alive.reset();
  }
  EXPECT_TRUE(watch.expired());
}

// Producers and consumers at once, on a ring small enough that the
// overflow is used: every job is taken exactly once.
void RunManyProducersAndConsumers(size_t ring_capacity) {
  constexpr int kProducers = 3;
  constexpr int kConsumers = 3;
  constexpr int kPerProducer = 50000;
  constexpr int kJobs = kProducers * kPerProducer;
  InjectionQueue q(ring_capacity);
  auto runs = std::make_unique<std::atomic<int>[]>(kJobs);
  std::atomic<int> producing{kProducers};
  std::atomic<int> taken{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&] {
      for (;;) {
        if (std::optional<Job> j = q.Pop()) {
          j->task();
          taken.fetch_add(1, std::memory_order_relaxed);
        } else if (producing.load(std::memory_order_acquire) == 0) {
          if (q.Empty()) return;
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        q.Push(MakeJob(p * kPerProducer + i, runs.get()));
      }
      producing.fetch_sub(1, std::memory_order_release);
    });
  }
  for (std::thread& t : threads) t.join();
  int missing = 0, doubled = 0;
  for (int i = 0; i < kJobs; ++i) {
    const int r = runs[i].load();
    missing += r == 0;
    doubled += r > 1;
  }
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(doubled, 0);
  EXPECT_EQ(taken.load(), kJobs);
  EXPECT_TRUE(q.Empty());
}

TEST(InjectionQueue, ManyProducersAndConsumersSmallRing) {
  RunManyProducersAndConsumers(8);
}

TEST(InjectionQueue, ManyProducersAndConsumersDefaultRing) {
  RunManyProducersAndConsumers(InjectionQueue::kDefaultRingCapacity);
}

}  // namespace
}  // namespace haltpool
