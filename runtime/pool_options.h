// What a ThreadPool is created with: a plain value. Every field can also
// come from a HALTPOOL_* variable, which has the last word.

#ifndef HALTPOOL_RUNTIME_POOL_OPTIONS_H_
#define HALTPOOL_RUNTIME_POOL_OPTIONS_H_

#include <exception>
#include <functional>

#include "idle/idle_options.h"
#include "idle/poll_backoff.h"
#include "runtime/io/io_backend.h"
#include "runtime/topology.h"

namespace haltpool {

struct PoolOptions {
  // Workers; 0: one per CPU the process may use (affinity mask, capped by a
  // cgroup cpu.max quota). HALTPOOL_WORKERS.
  int workers = 0;
  // How many idle workers may poll at once; 0: half the workers, at least
  // one (as Go and Tokio bound their spinning threads). HALTPOOL_MAX_POLLERS.
  int max_pollers = 0;
  // Pinning: none, one physical core per worker, or one hardware thread;
  // workers spread over cores before SMT siblings. HALTPOOL_PIN.
  PinMode pin = PinMode::kNone;
  // The I/O backend of ThreadPool::Io(): auto (io_uring, else epoll when
  // io_uring is missing or refused), uring, epoll. HALTPOOL_IO.
  IoBackend io = IoBackend::kAuto;
  // How each worker idles. HALTPOOL_GOVERNOR and the other idle variables.
  idle::IdleOptions idle;
  // Measure the block state's wake cost once per process when the first
  // pool starts (idle/calibration.h, a few milliseconds) and use it for
  // idle.block_exit_latency_ns and block_target_residency_ns (twice it).
  // ResolveConfig turns it off when code sets those fields itself.
  // HALTPOOL_CALIBRATE.
  bool calibrate = true;
  // Back off polling while the CPUs are contended (steal time, more
  // runnable threads than CPUs, pollers preempted; idle/poll_backoff.h).
  // HALTPOOL_BACKOFF.
  bool backoff = true;
  // Contention readings to use instead of the machine's, for tests and for
  // programs that know better; unset: /proc/stat and getrusage.
  std::function<idle::ContentionSample()> contention_probe;
  // Print every worker's statistics to stderr at shutdown. HALTPOOL_STATS.
  bool print_stats = false;
  // Called on the worker with any exception that escapes a task; the worker
  // goes on. Unset: a line on stderr.
  std::function<void(std::exception_ptr)> on_exception;
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_POOL_OPTIONS_H_
