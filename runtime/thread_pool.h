// haltpool's thread pool: workers with local queues, a shared injection
// queue, work stealing and timers, idling through idle/ (a governor and a
// parker per worker), so a submission to a polling worker costs a store and
// no system call.
//
// Wake protocol: a worker about to idle marks itself idle, then looks at
// every queue once more; a submitter pushes, then looks for an idle worker
// to wake, preferring one that polls. The pool's half lives in
// runtime/idle_workers.h (IdleWorkers), the parker's in idle/parker.h.

#ifndef HALTPOOL_RUNTIME_THREAD_POOL_H_
#define HALTPOOL_RUNTIME_THREAD_POOL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/config.h"
#include "runtime/contention_monitor.h"
#include "runtime/coro/pool_awaiters.h"
#include "runtime/coro/task.h"
#include "runtime/environment.h"
#include "runtime/idle_retuner.h"
#include "runtime/idle_workers.h"
#include "runtime/injection_queue.h"
#include "runtime/job.h"
#include "runtime/outside_waiter.h"
#include "runtime/pool_io.h"
#include "runtime/pool_options.h"
#include "runtime/pool_stats.h"
#include "runtime/task_fn.h"
#include "runtime/task_group.h"
#include "runtime/timer_queue.h"
#include "runtime/worker_queue.h"

namespace haltpool {

class ThreadPool {
 public:
  // Starts the workers with `options`, overridden by any HALTPOOL_*
  // variable set in `env` (the environment has the last word; the profile
  // and calibration fill what neither sets). Fails with InvalidArgument
  // naming the bad option or variable, FailedPrecondition naming
  // HALTPOOL_WAIT if the wait mechanism cannot run here. With
  // HALTPOOL_DISPLAY_ENV=1, prints the configuration the pool runs with,
  // calibration included, to stderr.
  static absl::StatusOr<std::unique_ptr<ThreadPool>> Create(
      const PoolOptions& options = {},
      const Environment& env = ProcessEnvironment());

  // Starts the workers with an already resolved configuration (ResolveConfig
  // or ConfigFromEnvironmentOrExit, changed since, if at all, through
  // ApplyCodeOptions), used as it is: nothing is resolved again. Checks it
  // again (ValidateConfig), calibrates the block state's costs that are
  // still the profile's or the default (when config.pool.calibrate is on)
  // and, with HALTPOOL_DISPLAY_ENV=1, prints the configuration the pool runs
  // with. Fails with InvalidArgument naming the variable of a bad value, or
  // FailedPrecondition if the wait mechanism cannot run here.
  static absl::StatusOr<std::unique_ptr<ThreadPool>> Create(Config config);

  // Shuts down (see Shutdown).
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Queues `task`: on the calling worker's own queue when called from one of
  // this pool's workers, else on the shared queue; wakes an idle worker if
  // there is one. FailedPrecondition once shutdown has begun. Any thread; no
  // allocation when the task's captures fit inline and the queue has room.
  absl::Status Submit(TaskFn task);

  // As Submit, counting the task in `group` (see Wait).
  absl::Status Submit(TaskGroup& group, TaskFn task);

  // Queues `task` to run at `deadline`, a wall-clock time as absl::Now()
  // reads it at this call; timers run in deadline order. The deadline is
  // read against absl::Now() once, here: what is left of it (deadline -
  // absl::Now()) is then counted on CLOCK_MONOTONIC, so a later step of the
  // wall clock (settime, an NTP step) moves the timer neither earlier nor
  // later, and the task never runs before that much time has passed. Past
  // deadlines (and absl::InfinitePast()) are due at once;
  // absl::InfiniteFuture() never falls due and is cancelled at shutdown. Timers
  // not yet due at shutdown are cancelled and counted
  // (PoolStats::timers_cancelled). FailedPrecondition once shutdown has begun.
  // Any thread.
  absl::Status SubmitAt(absl::Time deadline, TaskFn task);

  // Queues `task` to run once `delay` has passed on CLOCK_MONOTONIC (no wall
  // clock involved); otherwise as SubmitAt.
  absl::Status SubmitAfter(absl::Duration delay, TaskFn task);

  // Coroutines (runtime/coro/task.h; docs/USING.md has a tour).
  //
  // `co_await pool.Schedule()` moves the coroutine onto one of the workers
  // (see ScheduleAwaiter; throws if the pool has shut down).
  ScheduleAwaiter Schedule() noexcept { return ScheduleAwaiter(*this); }
  // `co_await pool.SleepFor(d)` and `co_await pool.SleepUntil(t)` resume
  // the coroutine on a worker once the time has come, with true, or during
  // Shutdown with false (see SleepAwaiter). The timers are SubmitAfter's and
  // SubmitAt's.
  SleepAwaiter SleepFor(absl::Duration delay) noexcept {
    return SleepAwaiter(*this, delay);
  }
  SleepAwaiter SleepUntil(absl::Time deadline) noexcept {
    return SleepAwaiter(*this, deadline);
  }

  // Starts `task` on a worker and lets it run on its own: its frame is
  // destroyed when it ends, and an exception escaping it goes to the pool's
  // exception handler. With `group`, the group counts it until it ends
  // (ThreadPool::Wait, `co_await group`), not only until its first
  // suspension. FailedPrecondition once shutdown has begun (the task is
  // destroyed without running), InvalidArgument for an empty task. Any
  // thread; allocates nothing beyond the frame when the queue has room.
  absl::Status Spawn(Task<void> task);
  absl::Status Spawn(TaskGroup& group, Task<void> task);

  // As Spawn, but starts `task` at once on the calling thread, where it runs
  // until it first suspends: for a worker that hands a new connection to its
  // own coroutine, whose first I/O then starts on this worker with no queue
  // hop and no wake. From one of this pool's workers (the task's I/O uses
  // the calling worker's reactor); never refused, shutdown included.
  // InvalidArgument for an empty task.
  absl::Status SpawnInline(Task<void> task);
  absl::Status SpawnInline(TaskGroup& group, Task<void> task);

  // Returns when every task submitted to `group` has finished. On one of
  // this pool's workers it runs other tasks meanwhile (no deadlock when a
  // task waits for the tasks it spawned); elsewhere the thread idles as a
  // worker does, polling its own wake word under the pool's governor and
  // then sleeping (runtime/outside_waiter.h); the first such wait on a
  // thread, and the first after the thread waited on another pool or the
  // options changed, allocates its parker. A worker
  // that waits while the pool shuts down cancels its own I/O once nothing is
  // queued, as a stopping worker does (its callbacks run with -ECANCELED), so
  // a wait for a coroutine's I/O on that worker ends.
  void Wait(TaskGroup& group);

  // Stops accepting work, runs every task already queued (and timers already
  // due), cancels the rest of the timers, joins the workers. Idempotent; not
  // from a worker of this pool.
  void Shutdown();

  int size() const noexcept { return static_cast<int>(workers_.size()); }

  // One line on where the worker count and placement came from ("2 CPUs:
  // affinity mask 0-1, no cgroup quota; hwloc 2.9.0 ...; pin none").
  const std::string& placement_note() const noexcept { return placement_note_; }

  // The calling worker's I/O, its reactor made on first use with
  // PoolOptions::io. FailedPrecondition off this pool's workers; the
  // reactor's setup error if it cannot be made (io = uring without
  // io_uring). Only on a worker, valid for the pool's life.
  absl::StatusOr<PoolIo> Io();

  // A snapshot of every worker's statistics. Any thread.
  PoolStats Stats() const;

  // Changes how the workers idle while the pool runs, as writing the
  // kernel's haltpoll module parameters does: the fields `change` sets
  // (governor, the poll cap poll_ns, haltpoll's grow, grow_start, shrink,
  // allow_shrink, fixed_poll_ns, the block state's costs, wake_margin_ns,
  // dense_poll_ns) go over the
  // options in use, and win over the HALTPOOL_* variables the pool started
  // with. `wait` cannot change (the poll loop's instruction is chosen once):
  // a set value is refused. Checked as PoolOptions are at Create; on error,
  // InvalidArgument naming the field, its variable, the value and what is
  // accepted, and nothing changes. On success each worker makes a new
  // governor from the new options at the start of its next idle period
  // (learned windows start again); idle workers are woken once so that they
  // apply it now (counted among their wakes), busy ones apply it when they
  // next idle. PoolStats::idle_options counts the changes and each worker's
  // idle_options_generation says which it runs with. Any thread, any number
  // at once (they apply in one order); takes a lock.
  absl::Status SetIdleOptions(const IdleChoices& change);

  // The index of the calling worker in its pool, or -1 off the pool.
  static int CurrentWorkerIndex() noexcept;

  // True if the calling thread is one of this pool's workers (not another
  // pool's). Any thread; one thread-local load.
  bool IsWorkerThread() const noexcept;

 private:
  struct Worker;

  friend void coro_internal::EndSpawned(ThreadPool*, TaskGroup*,
                                        std::exception_ptr) noexcept;

  explicit ThreadPool(const PoolConfig& options);
  // Counts `e` against the calling worker (if on one) and hands it to the
  // exception handler: for an exception that escaped a spawned task.
  void ReportException(std::exception_ptr e) noexcept;
  // Spawn and SpawnInline: `task`'s frame, made to report when it ends,
  // counted in `group` if there is one; null for an empty task.
  Task<void>::Handle Detach(TaskGroup* group, Task<void> task) noexcept;
  absl::Status SpawnIn(TaskGroup* group, Task<void> task);
  // SpawnInline: runs the detached frame `h` until it first suspends.
  absl::Status StartHere(Task<void>::Handle h);
  absl::Status Start();
  // On worker `w`'s own thread, before Start returns: its thread-locals,
  // timer slack, placement and the files it keeps open.
  void SetUpWorker(Worker& w);
  void WorkerMain(Worker& w);
  // Runs one queued task if there is one: due timers first, then the own
  // queue, the shared queue, and other workers' queues.
  bool RunOne(Worker& w);
  void Run(Worker& w, Job& job);
  // One idle period: announce, re-check, park, retire.
  void IdleOnce(Worker& w, bool stop_ends_idle);
  // Gives `w`'s parker the newest idle options (SetIdleOptions).
  void ApplyIdleOptions(Worker& w);
  bool HasWork() const noexcept;
  // Wait from a thread that is not one of this pool's workers: it idles on
  // its OutsideWaiter (runtime/outside_waiter.h) until the group is done.
  void WaitOutside(TaskGroup& group);
  // True if the earliest timer is due.
  bool TimerDue() const noexcept;
  absl::Status Enqueue(Job job);
  // Pushes `job` on `w`'s own queue, or on the injection queue if that is
  // full. On `w`'s thread only.
  void PushLocal(Worker& w, Job job);
  // SubmitAt with a CLOCK_MONOTONIC deadline (arch::kNoDeadline: never).
  absl::Status SubmitAtMonotonicNs(int64_t deadline_ns, TaskFn task);
  Worker* CurrentWorker() const noexcept;

  PoolConfig options_;
  // Unique in the process, from 1: names the pool to an OutsideWaiter, as
  // an address of a pool destroyed and made again would not.
  const uint64_t serial_;
  std::string placement_note_;  // How the worker count and pinning came about.
  int usable_cpus_ = 1;  // CPUs the process may use, as Start found them.
  idle::Calibration calibration_;  // Empty unless calibration set a cost.
  std::unique_ptr<ContentionMonitor> contention_;
  std::vector<std::unique_ptr<Worker>> workers_;
  InjectionQueue injection_;
  TimerQueue timers_;
  std::unique_ptr<IdleWorkers> idle_workers_;  // Made in Start.
  std::unique_ptr<IdleRetuner> retuner_;       // The newest idle options.
  std::atomic<int> timer_keeper_{-1};  // The worker parked until a timer.
  std::atomic<bool> accepting_{false};
  std::atomic<int> submitting_{0};  // Submits between check and push.
  std::atomic<bool> stopping_{false};
  std::atomic<bool> shut_down_{false};
  std::atomic<uint64_t> timers_cancelled_{0};
  OutsideWaitCounters outside_waits_;  // Threads outside, in WaitOutside.
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_THREAD_POOL_H_
