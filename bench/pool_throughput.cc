// bench/pool_throughput (Google Benchmark): tasks per second through
// haltpool and oneTBB's task_group, fanned out from one outside producer and
// from inside the workers.
//
// ./bazelw run -c opt //bench:pool_throughput

#include <atomic>
#include <memory>

#include "benchmark/benchmark.h"
#include "runtime/thread_pool.h"
#include "tbb/task_arena.h"
#include "tbb/task_group.h"

namespace haltpool::bench {
namespace {

constexpr int kTasksPerIteration = 10000;
// Inside fan-out: kFanOut parents each spawn kTasksPerIteration / kFanOut.
constexpr int kFanOut = 100;

std::unique_ptr<ThreadPool> MakePool() {
  absl::StatusOr<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create();
  if (!pool.ok()) abort();
  return *std::move(pool);
}

void BM_HaltpoolOutsideProducer(benchmark::State& state) {
  auto pool = MakePool();
  std::atomic<int64_t> sink{0};
  for (auto _ : state) {
    TaskGroup group;
    for (int i = 0; i < kTasksPerIteration; ++i) {
      (void)pool->Submit(
          group, [&sink] { sink.fetch_add(1, std::memory_order_relaxed); });
    }
    pool->Wait(group);
  }
  state.SetItemsProcessed(state.iterations() * kTasksPerIteration);
}
BENCHMARK(BM_HaltpoolOutsideProducer)->UseRealTime();

void BM_HaltpoolInsideFanOut(benchmark::State& state) {
  auto pool = MakePool();
  std::atomic<int64_t> sink{0};
  ThreadPool* p = pool.get();
  for (auto _ : state) {
    TaskGroup group;
    for (int parent = 0; parent < kFanOut; ++parent) {
      (void)p->Submit(group, [p, &group, &sink] {
        for (int i = 0; i < kTasksPerIteration / kFanOut; ++i) {
          (void)p->Submit(
              group, [&sink] { sink.fetch_add(1, std::memory_order_relaxed); });
        }
      });
    }
    p->Wait(group);
  }
  state.SetItemsProcessed(state.iterations() * (kTasksPerIteration + kFanOut));
}
BENCHMARK(BM_HaltpoolInsideFanOut)->UseRealTime();

void BM_TbbOutsideProducer(benchmark::State& state) {
  tbb::task_arena arena;
  std::atomic<int64_t> sink{0};
  for (auto _ : state) {
    tbb::task_group group;
    for (int i = 0; i < kTasksPerIteration; ++i) {
      arena.execute([&] {
        group.run([&sink] { sink.fetch_add(1, std::memory_order_relaxed); });
      });
    }
    arena.execute([&] { group.wait(); });
  }
  state.SetItemsProcessed(state.iterations() * kTasksPerIteration);
}
BENCHMARK(BM_TbbOutsideProducer)->UseRealTime();

void BM_TbbInsideFanOut(benchmark::State& state) {
  tbb::task_arena arena;
  std::atomic<int64_t> sink{0};
  for (auto _ : state) {
    tbb::task_group group;
    arena.execute([&] {
      for (int parent = 0; parent < kFanOut; ++parent) {
        group.run([&group, &sink] {
          for (int i = 0; i < kTasksPerIteration / kFanOut; ++i) {
            group.run(
                [&sink] { sink.fetch_add(1, std::memory_order_relaxed); });
          }
        });
      }
      group.wait();
    });
  }
  state.SetItemsProcessed(state.iterations() * (kTasksPerIteration + kFanOut));
}
BENCHMARK(BM_TbbInsideFanOut)->UseRealTime();

}  // namespace
}  // namespace haltpool::bench

BENCHMARK_MAIN();
