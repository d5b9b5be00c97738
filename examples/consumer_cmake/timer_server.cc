// A server's use of haltpool from a CMake build: a pool running a request
// group and a timer, and a stand-alone parker handing a result back to the
// main thread. Built by both consumers in this directory.

#include <stdio.h>

#include <atomic>

#include "idle/parker.h"
#include "runtime/thread_pool.h"

int main() {
  absl::StatusOr<std::unique_ptr<haltpool::ThreadPool>> pool =
      haltpool::ThreadPool::Create();
  if (!pool.ok()) {
    fprintf(stderr, "timer_server: %s\n",
            std::string(pool.status().message()).c_str());
    return 2;
  }
  haltpool::idle::WakeWord done;
  absl::StatusOr<haltpool::idle::Parker> parker =
      haltpool::idle::Parker::Create(done, haltpool::idle::IdleOptions{});
  if (!parker.ok()) return 2;

  std::atomic<int> served{0};
  haltpool::TaskGroup requests;
  for (int i = 0; i < 50; ++i) {
    if (!(*pool)->Submit(requests, [&served] { ++served; }).ok()) return 1;
  }
  (*pool)->Wait(requests);
  // The timer reports back through the parker: no condition variable.
  if (!(*pool)->SubmitAfter(absl::Milliseconds(2), [&done] { done.Unpark(); })
           .ok()) {
    return 1;
  }
  const bool woken = parker->Park() == haltpool::idle::IdleResult::kWoken;
  printf("timer_server: served %d requests, timer fired=%d\n", served.load(),
         woken);
  return served.load() == 50 && woken ? 0 : 1;
}
