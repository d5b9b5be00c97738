// The receiving side of bench/io_wake: a socket's reader that notes how
// long each message took to reach it and acknowledges it. Two kinds: a
// 1-worker ThreadPool that waits through PoolIo (a Recv whose callback
// re-arms it), and a plain thread blocking in recv() or in epoll_wait().
//
// A message is 8 bytes: its send time, CLOCK_MONOTONIC ns, as the writer
// read it just before send(). The listener reads the clock once the bytes
// are in its hands (in the Recv callback, or after recv() returns).

#ifndef HALTPOOL_BENCH_IO_LISTENERS_H_
#define HALTPOOL_BENCH_IO_LISTENERS_H_

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/config.h"
#include "runtime/worker_io.h"

namespace haltpool::bench {

// What the writer and a listener share: the socket and the latencies.
struct Channel {
  int rx_fd = -1;  // The listener's end.
  int tx_fd = -1;  // The writer's end.
  // By message index; sized by the writer before the listener starts, then
  // written only by the listener, each entry before its acknowledgement.
  std::vector<int64_t> latency_ns;
  // Messages the listener took; only the listener writes (release), so the
  // writer that sees a count (acquire) sees those entries.
  std::atomic<uint32_t> acked{0};
  // The listener saw the end of the stream, or an error (-errno in error).
  std::atomic<bool> closed{false};
  std::atomic<int> error{0};

  // Notes one message sent at `stamp_ns` and taken at `now_ns`, then
  // acknowledges it. The listener only.
  void Take(int64_t stamp_ns, int64_t now_ns) noexcept;
  // The listener's receive loop ended with `result` (0: end of stream).
  void Close(int result) noexcept;
};

// Something that receives the writer's messages on a thread it owns.
class Listener {
 public:
  virtual ~Listener() = default;
  // Starts receiving on `ch`, which must outlive the listener. An error
  // (io_uring missing, say) means nothing was started.
  virtual absl::Status Start(Channel& ch) = 0;
  // The receiving thread, for its CPU clock. After Start succeeded.
  virtual pthread_t thread() const = 0;
  // The CPU it is pinned to, or -1.
  virtual int cpu() const = 0;
  // The worker's I/O counters so far; nullopt for a plain thread. Any
  // thread.
  virtual std::optional<WorkerIoCounts> IoCounts() const { return {}; }
  // How it was set up ("io_uring coop (COOP_TASKRUN|TASKRUN_FLAG),
  // governor poll"); empty for a plain thread.
  virtual std::string Setup() const { return ""; }
  // Once the channel is closed (the listener saw the end of the stream):
  // ends and joins the thread.
  virtual void Stop() = 0;
};

// A ThreadPool made from `config` (which should ask for one worker); a task
// on the worker takes pool->Io() and starts the first Recv.
std::unique_ptr<Listener> MakePoolListener(Config config);

// A plain thread pinned to `cpu` (-1: not pinned), blocking in recv(), or
// with `epoll` in epoll_wait() (level-triggered, EPOLLIN) and then recv().
std::unique_ptr<Listener> MakeThreadListener(bool epoll, int cpu);

// Pins the calling thread to `cpu`; -1 leaves it where it may run. A
// failure is printed and ignored (the numbers are then less clean, not
// wrong).
void PinThisThread(int cpu);

}  // namespace haltpool::bench

#endif  // HALTPOOL_BENCH_IO_LISTENERS_H_
