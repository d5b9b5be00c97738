// Statistics of a ThreadPool: per worker, the idle statistics of each state
// and its task counters; per pool, the timers cancelled at shutdown, the
// calibration, the poll back-off and the waits of threads outside it.

#ifndef HALTPOOL_RUNTIME_POOL_STATS_H_
#define HALTPOOL_RUNTIME_POOL_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "idle/calibration.h"
#include "idle/governor.h"
#include "idle/idle_stats.h"
#include "runtime/contention_monitor.h"
#include "runtime/idle_retuner.h"
#include "runtime/worker_io.h"

namespace haltpool {

struct WorkerStats {
  int index = 0;
  int cpu = -1;        // The CPU it is pinned to, -1 if not pinned.
  int numa_node = -1;  // Its NUMA node, -1 if unknown.
  idle::IdleStats idle;
  uint64_t tasks_run = 0;
  uint64_t tasks_stolen = 0;  // Of tasks_run, taken from another worker.
  // Of tasks_run, handed to it while it polled (IdleWorkers::HandOff).
  uint64_t tasks_handed_off = 0;
  // Idle periods it spent without polling because its wakes came from its
  // own CPU (runtime/beside_waker.h), where it would have been allowed to.
  uint64_t idles_beside_waker = 0;
  uint64_t exceptions = 0;  // Tasks (and I/O callbacks) that threw.
  // The idle options it runs with: 0 as the pool started, else the
  // ThreadPool::SetIdleOptions change it applied last.
  uint64_t idle_options_generation = 0;
  WorkerIoCounts io;       // How its I/O completions reached it.
  std::string io_backend;  // "io_uring", "epoll", "" if never used.
  std::string io_note;     // Why that backend ("epoll: io_uring_setup ...").
  std::string io_setup;    // How it was set up ("coop (COOP_TASKRUN|...)").
};

// Waits for a task group by threads outside the pool (ThreadPool::Wait):
// how often such a thread idled on its wake word, and how the group's last
// task woke it (polling: a store alone; syscall: FUTEX_WAKE).
struct OutsideWaitStats {
  uint64_t parks = 0;
  idle::WakeStats wakes;
};

struct PoolStats {
  std::vector<WorkerStats> workers;
  uint64_t timers_cancelled = 0;  // Not yet due at shutdown.
  uint64_t max_pollers = 0;
  // What the block and poll states cost where the process runs, as
  // measured when the first pool started; measured is false when nothing was
  // calibrated (note says why).
  idle::Calibration calibration;
  BackoffStats backoff;           // The poll back-off under contention.
  IdleOptionsStats idle_options;  // ThreadPool::SetIdleOptions changes.
  OutsideWaitStats outside_waits;
};

// "12 parks; woken 11 times while polling, 0 while running, 1 by
// FUTEX_WAKE".
std::string FormatOutsideWaits(const OutsideWaitStats& stats);

// "block wake 14.2 us, poll wake 0.31 us (200 round trips, 6.1 ms)", or
// why it was not measured ("off" with calibration turned off).
std::string FormatCalibration(const idle::Calibration& calibration);

// Every worker in the layout of `cpupower idle-info`, each followed by its
// task counters.
std::string FormatPoolStatsText(const PoolStats& stats);

// "as started", or "2 changes, last at 2025-03-01 12:00:00.123 UTC:
// HALTPOOL_GOVERNOR=poll".
std::string FormatIdleOptionsChanges(const IdleOptionsStats& stats);

// One JSON object: {"timers_cancelled":..,"workers":[{..,"idle":{..}}]}.
std::string FormatPoolStatsJson(const PoolStats& stats);

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_POOL_STATS_H_
