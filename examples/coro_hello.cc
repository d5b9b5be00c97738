// examples/coro_hello: the smallest complete coroutine program on haltpool.
// main() waits for a coroutine that moves onto the pool, sleeps on the
// pool's timers, fans out ten child coroutines and awaits them as a group,
// then echoes a line through a socket pair with the pool's I/O.
//
// ./bazelw run //examples:coro_hello

#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "runtime/coro/async_io.h"
#include "runtime/coro/sync_wait.h"
#include "runtime/coro/task.h"
#include "runtime/thread_pool.h"

namespace {

haltpool::Task<int> Square(haltpool::ThreadPool& pool, int i) {
  co_await pool.Schedule();  // Each child may run on any worker.
  co_return i* i;
}

haltpool::Task<std::string> Hello(haltpool::ThreadPool& pool) {
  co_await pool.Schedule();  // From main's thread onto a worker.
  co_await pool.SleepFor(absl::Milliseconds(1));

  std::atomic<int> sum{0};
  // A lambda coroutine reads its captures from the lambda, not its frame:
  // the lambda must outlive the coroutines (it does, up to `co_await group`),
  // and what differs per coroutine is a parameter, copied into each frame.
  auto child = [&pool, &sum](int i) -> haltpool::Task<void> {
    sum += co_await Square(pool, i);
  };
  haltpool::TaskGroup group;
  for (int i = 1; i <= 10; ++i) {
    if (absl::Status s = pool.Spawn(group, child(i)); !s.ok()) {
      co_return std::string(s.message());
    }
  }
  co_await group;  // The worker runs other work meanwhile.

  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    co_return std::string("socketpair: ") + strerror(errno);
  }
  haltpool::AsyncIo io(pool);
  const std::string line =
      absl::StrFormat("1 + 4 + ... + 100 = %d", sum.load());
  char buf[64] = {};
  co_await io.SendAll(fds[0], line.data(), line.size());
  const int n = co_await io.Recv(fds[1], buf, sizeof(buf));
  close(fds[0]);
  close(fds[1]);
  co_return n > 0 ? std::string(buf, static_cast<size_t>(n))
                  : std::string("recv: ") + strerror(-n);
}

}  // namespace

int main() {
  absl::StatusOr<std::unique_ptr<haltpool::ThreadPool>> pool =
      haltpool::ThreadPool::Create();
  if (!pool.ok()) {
    absl::FPrintF(stderr, "coro_hello: %s\n", pool.status().message());
    return 2;
  }
  const std::string said = haltpool::SyncWait(Hello(**pool));
  printf("hello from a coroutine on %d workers: %s\n", (*pool)->size(),
         said.c_str());
  return said == "1 + 4 + ... + 100 = 385" ? 0 : 1;
}
