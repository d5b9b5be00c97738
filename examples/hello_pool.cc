// examples/hello_pool: create a pool, submit a group of tasks, wait for
// them, print the statistics.
//
// ./bazelw run //examples:hello_pool

#include <stdio.h>

#include <atomic>

#include "absl/strings/str_format.h"
#include "runtime/pool_stats.h"
#include "runtime/thread_pool.h"

int main() {
  absl::StatusOr<std::unique_ptr<haltpool::ThreadPool>> pool =
      haltpool::ThreadPool::Create();
  if (!pool.ok()) {
    absl::FPrintF(stderr, "hello_pool: %s\n", pool.status().message());
    return 2;
  }
  std::atomic<long> sum{0};
  haltpool::TaskGroup group;
  for (long i = 1; i <= 1000; ++i) {
    absl::Status s = (*pool)->Submit(group, [&sum, i] { sum += i; });
    if (!s.ok()) {
      absl::FPrintF(stderr, "hello_pool: %s\n", s.message());
      return 1;
    }
  }
  (*pool)->Wait(group);
  printf("hello from %d workers: 1 + 2 + ... + 1000 = %ld\n\n", (*pool)->size(),
         sum.load());
  absl::PrintF("%s", haltpool::FormatPoolStatsText((*pool)->Stats()));
  return sum.load() == 500500 ? 0 : 1;
}
