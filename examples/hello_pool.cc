// examples/hello_pool: create a pool, submit a group of tasks, wait for
// them, print the statistics.
//
// ./bazelw run //examples:hello_pool

#include <stdio.h>

#include <atomic>

#include "runtime/pool_stats.h"
#include "runtime/thread_pool.h"

int main() {
  absl::StatusOr<std::unique_ptr<haltpool::ThreadPool>> pool =
      haltpool::ThreadPool::Create();
  if (!pool.ok()) {
    fprintf(stderr, "hello_pool: %s\n",
            std::string(pool.status().message()).c_str());
    return 2;
  }
  std::atomic<long> sum{0};
  haltpool::TaskGroup group;
  for (long i = 1; i <= 1000; ++i) {
    absl::Status s = (*pool)->Submit(group, [&sum, i] { sum += i; });
    if (!s.ok()) {
      fprintf(stderr, "hello_pool: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  (*pool)->Wait(group);
  printf("hello from %d workers: 1 + 2 + ... + 1000 = %ld\n\n", (*pool)->size(),
         sum.load());
  printf("%s", haltpool::FormatPoolStatsText((*pool)->Stats()).c_str());
  return sum.load() == 500500 ? 0 : 1;
}
