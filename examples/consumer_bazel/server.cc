// A server's use of haltpool from another Bazel workspace: a pool running a
// group of tasks, and a stand-alone parker handing one value between threads.

#include <stdio.h>

#include <atomic>
#include <thread>

#include "idle/parker.h"
#include "runtime/thread_pool.h"

int main() {
  absl::StatusOr<std::unique_ptr<haltpool::ThreadPool>> pool =
      haltpool::ThreadPool::Create();
  if (!pool.ok()) {
    fprintf(stderr, "server: %s\n", std::string(pool.status().message()).c_str());
    return 2;
  }
  std::atomic<int> requests{0};
  haltpool::TaskGroup group;
  for (int i = 0; i < 100; ++i) {
    if (!(*pool)->Submit(group, [&requests] { ++requests; }).ok()) return 1;
  }
  (*pool)->Wait(group);

  haltpool::idle::WakeWord word;
  absl::StatusOr<haltpool::idle::Parker> parker =
      haltpool::idle::Parker::Create(word, haltpool::idle::IdleOptions{});
  if (!parker.ok()) {
    fprintf(stderr, "server: %s\n",
            std::string(parker.status().message()).c_str());
    return 2;
  }
  int handed = 0;
  std::thread waker([&] {
    handed = 42;
    word.Unpark();
  });
  haltpool::idle::IdleResult result = parker->Park();
  waker.join();

  printf("server: %d requests on %d workers; parker woken=%d value=%d\n",
         requests.load(), (*pool)->size(),
         result == haltpool::idle::IdleResult::kWoken, handed);
  return requests.load() == 100 && handed == 42 ? 0 : 1;
}
