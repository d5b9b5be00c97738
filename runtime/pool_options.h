// What a ThreadPool is created with, as code chooses it: every tunable is
// optional, and unset is its own state. A field code sets sticks, even when
// it equals the default; a field it leaves unset is filled by the profile of
// the environment haltpool runs in, by calibration, or by the built-in
// default. A HALTPOOL_* variable has the last word over all of them
// (runtime/config.h resolves the lot; runtime/tunables.cc is the one table
// of tunables with their variables, defaults and ranges).

#ifndef HALTPOOL_RUNTIME_POOL_OPTIONS_H_
#define HALTPOOL_RUNTIME_POOL_OPTIONS_H_

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "arch/wait_mechanism.h"
#include "idle/poll_backoff.h"
#include "runtime/io/io_backend.h"
#include "runtime/topology.h"

namespace haltpool {

// The haltpoll governor's tunables (idle::HaltpollParams), each optional.
struct HaltpollOptions {
  std::optional<int64_t> poll_ns;     // HALTPOOL_POLL_NS.
  std::optional<int64_t> grow;        // HALTPOOL_POLL_GROW.
  std::optional<int64_t> grow_start;  // HALTPOOL_POLL_GROW_START.
  std::optional<int64_t> shrink;      // HALTPOOL_POLL_SHRINK.
  std::optional<bool> allow_shrink;   // HALTPOOL_POLL_ALLOW_SHRINK.
};

// How each worker idles (idle::IdleOptions), each field optional.
struct IdleChoices {
  std::optional<std::string> governor;  // HALTPOOL_GOVERNOR.
  HaltpollOptions haltpoll;
  std::optional<int64_t> fixed_poll_ns;  // HALTPOOL_FIXED_POLL_NS.
  // HALTPOOL_WAIT. Unset: the best the CPU has.
  std::optional<arch::WaitMechanism> wait;
  // The block state's costs in the state table (idle/idle_state.h). Unset:
  // calibrated at the first pool's start, else the profile's.
  // HALTPOOL_BLOCK_EXIT_LATENCY_NS, HALTPOOL_BLOCK_TARGET_RESIDENCY_NS.
  std::optional<int64_t> block_exit_latency_ns;
  std::optional<int64_t> block_target_residency_ns;
  // The predictive governor's first wake margin, until its own timed blocks
  // teach it. Unset: calibrated at the first pool's start (how late a timed
  // block ends here), else the profile's block exit latency.
  // HALTPOOL_WAKE_MARGIN_NS.
  std::optional<int64_t> wake_margin_ns;
  // The predictive governor's poll through each idle period while wakes
  // are dense; 0: never. HALTPOOL_DENSE_POLL_NS.
  std::optional<int64_t> dense_poll_ns;
};

struct PoolOptions {
  // Workers; 0: one per CPU the process may use (affinity mask, capped by a
  // cgroup cpu.max quota). HALTPOOL_WORKERS.
  std::optional<int> workers;
  // How many idle workers may poll at once; 0: half the workers, at least
  // one (as Go and Tokio bound their spinning threads). HALTPOOL_MAX_POLLERS.
  std::optional<int> max_pollers;
  // Pinning: none, one physical core per worker, or one hardware thread;
  // workers spread over cores before SMT siblings. HALTPOOL_PIN.
  std::optional<PinMode> pin;
  // The CPUs the workers may run on, ascending OS CPU numbers; empty: every
  // CPU the creating thread may run on (its affinity mask). A list must lie
  // within that mask; with pin none, each worker may run on all of it, and
  // the other pin modes place workers within it. HALTPOOL_CPUS.
  std::optional<std::vector<int>> cpus;
  // The I/O backend of ThreadPool::Io(): auto (io_uring, else epoll when
  // io_uring is missing or refused), uring, epoll. HALTPOOL_IO.
  std::optional<IoBackend> io;
  // Submission queue entries of each worker's io_uring ring; its completion
  // queue gets twice as many (runtime/io/io_reactor.h). HALTPOOL_IO_ENTRIES.
  std::optional<unsigned> io_entries;
  // How the kernel hands io_uring completions to a worker: interrupt, coop
  // (it leaves a flag a polling worker sees, no IPI), defer (coop, and the
  // completions wait until the worker asks). HALTPOOL_IO_TASKRUN.
  std::optional<IoTaskRun> io_task_run;
  // How each worker idles. HALTPOOL_GOVERNOR and the other idle variables.
  IdleChoices idle;
  // Measure the block state's wake cost and how late a timed block ends,
  // once per process when the first pool starts (idle/calibration.h, about
  // 25 ms), and use them for the block state's costs and the wake margin
  // that neither code nor environment set.
  // HALTPOOL_CALIBRATE.
  std::optional<bool> calibrate;
  // Back off polling while polling takes CPUs from other work (steal time,
  // other runnable threads filling every CPU while threads wait, pollers
  // preempted; idle/poll_backoff.h), and keep a worker that shares its CPU
  // with its waker from polling there (runtime/beside_waker.h).
  // HALTPOOL_BACKOFF.
  std::optional<bool> backoff;
  // Print every worker's statistics to stderr at shutdown. HALTPOOL_STATS.
  std::optional<bool> print_stats;

  // Not tunables: code only.

  // Contention readings to use instead of the machine's, for tests and for
  // programs that know better; unset: /proc/stat and getrusage.
  std::function<idle::ContentionSample()> contention_probe;
  // Called on the worker with any exception that escapes a task; the worker
  // goes on. Unset: a line on stderr.
  std::function<void(std::exception_ptr)> on_exception;
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_POOL_OPTIONS_H_
