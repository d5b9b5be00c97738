#include "runtime/thread_pool.h"

#include <stdio.h>

#include <algorithm>
#include <latch>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "arch/cycle_clock.h"
#include "arch/thread_affinity.h"
#include "arch/timer_slack.h"
#include "idle/calibration.h"
#include "idle/parker.h"
#include "idle/protocol_step.h"
#include "runtime/beside_waker.h"
#include "runtime/config.h"
#include "runtime/cpu_quota.h"
#include "runtime/topology.h"
#include "runtime/worker_io.h"

namespace haltpool {
namespace {

thread_local const ThreadPool* tls_pool = nullptr;
thread_local int tls_worker = -1;

// Pools made so far: each pool's serial number (ThreadPool::serial_).
std::atomic<uint64_t> pools_made{0};

void Bump(std::atomic<uint64_t>& c) noexcept {
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void DefaultExceptionHandler(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    fprintf(stderr, "haltpool: a task threw: %s\n", ex.what());
  } catch (...) {
    fprintf(stderr, "haltpool: a task threw a non-std::exception\n");
  }
}

}  // namespace

struct ThreadPool::Worker {
  Worker(int i, WorkerPlacement p) : index(i), placement(std::move(p)) {}
  const int index;
  const WorkerPlacement placement;
  idle::WakeWord word;
  std::optional<idle::Parker> parker;
  WorkerQueue local;
  std::atomic<uint64_t> tasks_run{0};
  std::atomic<uint64_t> tasks_stolen{0};
  std::atomic<uint64_t> tasks_handed_off{0};
  std::atomic<uint64_t> exceptions{0};
  // The idle options' generation its parker runs with (IdleRetuner).
  std::atomic<uint64_t> idle_generation{0};
  std::vector<TaskFn> due;  // Scratch for timers that fell due.
  std::thread thread;
  WorkerIo io;                // Made on first use by this worker's tasks.
  ContentionMark contention;  // For the contention monitor.
  // Its pass to the polling slots; made with idle_workers_.
  std::optional<PollSlotGate> poll_gate;
  // Whether its wakes come from its own CPU (with the back-off on, it then
  // idles without polling), and how many idle periods it spent so.
  BesideWaker beside_waker;
  std::atomic<uint64_t> idles_beside_waker{0};
};

absl::StatusOr<std::unique_ptr<ThreadPool>> ThreadPool::Create(
    const PoolOptions& code_options, const Environment& env) {
  absl::StatusOr<Config> config = ResolveConfig(code_options, env);
  if (!config.ok()) return config.status();
  return Create(*std::move(config));
}

absl::StatusOr<std::unique_ptr<ThreadPool>> ThreadPool::Create(Config config) {
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  // The statistics show the calibration behind the block costs: the
  // measurement (with its note if it failed) whenever one was wanted.
  idle::Calibration calibration;
  calibration.note = config.pool.calibrate
                         ? "not needed: code or the environment set the "
                           "block state's costs and the wake margin"
                         : "off";
  for (const char* name :
       {"HALTPOOL_BLOCK_EXIT_LATENCY_NS", "HALTPOOL_BLOCK_TARGET_RESIDENCY_NS",
        "HALTPOOL_WAKE_MARGIN_NS"}) {
    const ResolvedVariable* v = config.Find(name);
    if (v->source == ValueSource::kCalibration) {
      calibration = idle::ProcessCalibration();
    }
  }
  if (WantsCalibration(config)) {
    // Once per process; about 25 ms the first time.
    calibration = idle::ProcessCalibration();
    ApplyCalibration(calibration, config);
  }
  if (config.display_env) absl::FPrintF(stderr, "%s", DisplayEnv(config));
  std::unique_ptr<ThreadPool> pool(new ThreadPool(config.pool));
  pool->calibration_ = std::move(calibration);
  pool->retuner_ = std::make_unique<IdleRetuner>(std::move(config));
  if (absl::Status s = pool->Start(); !s.ok()) return s;
  return pool;
}

ThreadPool::ThreadPool(const PoolConfig& options)
    : options_(options),
      serial_(pools_made.fetch_add(1, std::memory_order_relaxed) + 1) {
  if (!options_.on_exception) options_.on_exception = DefaultExceptionHandler;
}

absl::Status ThreadPool::Start() {
  absl::StatusOr<CpuQuota> quota = ProcessCpuQuota();
  if (!quota.ok()) return quota.status();
  // The CPUs the workers run on: this thread's mask, or a list within it.
  std::vector<int> cpus = arch::ThreadCpus();
  for (int cpu : options_.cpus) {
    if (!std::binary_search(cpus.begin(), cpus.end(), cpu)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cpus (HALTPOOL_CPUS) = ", arch::FormatCpuList(options_.cpus),
          ": CPU ", cpu,
          " is not in the creating thread's affinity mask; accepted: ",
          "all, or CPUs of ", arch::FormatCpuList(cpus)));
    }
  }
  if (!options_.cpus.empty()) cpus = options_.cpus;
  int n = options_.workers;
  if (n == 0) n = std::min(quota->usable_cpus, static_cast<int>(cpus.size()));
  usable_cpus_ = quota->usable_cpus;
  contention_ = std::make_unique<ContentionMonitor>(
      options_.backoff, quota->usable_cpus, options_.idle.haltpoll.poll_ns,
      options_.contention_probe);
  const Topology topology = LoadTopology(cpus);
  std::vector<WorkerPlacement> placements =
      PlanPlacement(topology, n, options_.pin);
  for (WorkerPlacement& p : placements) p.confined = !options_.cpus.empty();
  placement_note_ = absl::StrCat(
      n, " workers (", quota->explanation, "); ", topology.note, "; pin ",
      PinModeName(options_.pin), "; cpus ",
      options_.cpus.empty() ? "all" : arch::FormatCpuList(options_.cpus));
  for (int i = 0; i < n; ++i) {
    auto w = std::make_unique<Worker>(i, placements[i]);
    absl::StatusOr<idle::Parker> parker =
        idle::Parker::Create(w->word, options_.idle);
    if (!parker.ok()) return parker.status();
    w->parker.emplace(*std::move(parker));
    workers_.push_back(std::move(w));
  }
  std::vector<idle::WakeWord*> words;
  for (auto& w : workers_) words.push_back(&w->word);
  idle_workers_ = std::make_unique<IdleWorkers>(
      std::move(words),
      options_.max_pollers ? options_.max_pollers : std::max(1, n / 2));
  for (auto& w : workers_) w->poll_gate.emplace(*idle_workers_);
  accepting_.store(true, std::memory_order_seq_cst);
  // Each worker sets itself up on its own thread (timer slack, placement,
  // the files it keeps open); the pool is ready when all have, so its
  // descriptors and placement do not change under its first tasks.
  std::latch set_up(n);
  for (auto& w : workers_) {
    Worker* raw = w.get();
    w->thread = std::thread([this, raw, &set_up] {
      SetUpWorker(*raw);
      set_up.count_down();
      WorkerMain(*raw);
    });
  }
  set_up.wait();
  return absl::OkStatus();
}

ThreadPool::~ThreadPool() { Shutdown(); }

ThreadPool::Worker* ThreadPool::CurrentWorker() const noexcept {
  return tls_pool == this ? workers_[tls_worker].get() : nullptr;
}

int ThreadPool::CurrentWorkerIndex() noexcept { return tls_worker; }

bool ThreadPool::IsWorkerThread() const noexcept { return tls_pool == this; }

absl::Status ThreadPool::Enqueue(Job job) {
  // submitting_ brackets the check and the push, so Shutdown can wait for
  // every submit that passed the check before it lets workers drain.
  submitting_.fetch_add(1, std::memory_order_seq_cst);
  if (!accepting_.load(std::memory_order_seq_cst)) {
    submitting_.fetch_sub(1, std::memory_order_seq_cst);
    return absl::FailedPreconditionError(
        "the pool is shut down and accepts no more tasks");
  }
  if (job.group != nullptr) job.group->Add();
  Worker* const w = CurrentWorker();
  if (w == nullptr) contention_->NoteSubmitter();
  auto push = [&](Job&& j) {
    if (w != nullptr) {
      PushLocal(*w, std::move(j));
    } else {
      injection_.Push(std::move(j));
    }
  };
  // A worker that polls takes the task from beside its wake word; else the
  // task is queued and an idle worker woken to find it.
  if (!idle_workers_->HandOff(job, push)) {
    push(std::move(job));
    HALTPOOL_PROTOCOL_STEP();  // A worker may go idle between push and wake.
    idle_workers_->WakeOne();
  }
  submitting_.fetch_sub(1, std::memory_order_seq_cst);
  return absl::OkStatus();
}

void ThreadPool::PushLocal(Worker& w, Job job) {
  if (!w.local.TryPush(job)) injection_.Push(std::move(job));
}

absl::Status ThreadPool::Submit(TaskFn task) {
  return Enqueue(Job{std::move(task), nullptr});
}

absl::Status ThreadPool::Submit(TaskGroup& group, TaskFn task) {
  return Enqueue(Job{std::move(task), &group});
}

absl::Status ThreadPool::SubmitAt(absl::Time deadline, TaskFn task) {
  if (deadline == absl::InfiniteFuture()) {
    return SubmitAtMonotonicNs(arch::kNoDeadline, std::move(task));
  }
  // Wall clock first, then the monotonic one: the gap between the two reads
  // makes the timer later, never earlier.
  const absl::Duration left = deadline - absl::Now();
  const int64_t now_ns = arch::MonotonicNowNs();
  if (left <= absl::ZeroDuration()) {
    return SubmitAtMonotonicNs(now_ns, std::move(task));
  }
  // Saturates: a deadline centuries away never falls due.
  const int64_t left_ns = absl::ToInt64Nanoseconds(left);
  return SubmitAtMonotonicNs(left_ns >= arch::kNoDeadline - now_ns
                                 ? arch::kNoDeadline
                                 : now_ns + left_ns,
                             std::move(task));
}

absl::Status ThreadPool::SubmitAtMonotonicNs(int64_t deadline_ns, TaskFn task) {
  submitting_.fetch_add(1, std::memory_order_seq_cst);
  if (!accepting_.load(std::memory_order_seq_cst)) {
    submitting_.fetch_sub(1, std::memory_order_seq_cst);
    return absl::FailedPreconditionError(
        "the pool is shut down and accepts no more timers");
  }
  if (timers_.Add(deadline_ns, std::move(task))) {
    // A new earliest deadline: the worker parked until the old one must
    // re-arm, or, if none is, an idle worker must take the role.
    const int keeper = timer_keeper_.load(std::memory_order_seq_cst);
    if (keeper >= 0) {
      workers_[keeper]->word.Unpark();
    } else {
      idle_workers_->WakeOne();
    }
  }
  submitting_.fetch_sub(1, std::memory_order_seq_cst);
  return absl::OkStatus();
}

absl::Status ThreadPool::SubmitAfter(absl::Duration delay, TaskFn task) {
  const int64_t now_ns = arch::MonotonicNowNs();
  const int64_t delay_ns =
      std::max<int64_t>(0, absl::ToInt64Nanoseconds(delay));
  return SubmitAtMonotonicNs(delay_ns >= arch::kNoDeadline - now_ns
                                 ? arch::kNoDeadline
                                 : now_ns + delay_ns,
                             std::move(task));
}

absl::Status ThreadPool::Spawn(Task<void> task) {
  return SpawnIn(nullptr, std::move(task));
}

absl::Status ThreadPool::Spawn(TaskGroup& group, Task<void> task) {
  return SpawnIn(&group, std::move(task));
}

namespace {

absl::Status EmptyTaskError(absl::string_view call) {
  return absl::InvalidArgumentError(absl::StrCat(
      "ThreadPool::", call,
      ": the task is empty (default-constructed or moved from); pass a task "
      "a coroutine returned"));
}

}  // namespace

Task<void>::Handle ThreadPool::Detach(TaskGroup* group,
                                      Task<void> task) noexcept {
  Task<void>::Handle h = task.Release();
  if (!h) return h;
  h.promise().set_spawned(this, group);
  // The group counts the coroutine until its end (EndSpawned), not the job
  // that first resumes it.
  if (group != nullptr) group->Add();
  return h;
}

absl::Status ThreadPool::SpawnIn(TaskGroup* group, Task<void> task) {
  Task<void>::Handle h = Detach(group, std::move(task));
  if (!h) return EmptyTaskError("Spawn");
  absl::Status s = Enqueue(Job{[h] { h.resume(); }, nullptr});
  if (!s.ok()) {
    h.destroy();
    if (group != nullptr) group->Done();
  }
  return s;
}

absl::Status ThreadPool::SpawnInline(Task<void> task) {
  return StartHere(Detach(nullptr, std::move(task)));
}

absl::Status ThreadPool::SpawnInline(TaskGroup& group, Task<void> task) {
  return StartHere(Detach(&group, std::move(task)));
}

absl::Status ThreadPool::StartHere(Task<void>::Handle h) {
  if (!h) return EmptyTaskError("SpawnInline");
  h.resume();
  return absl::OkStatus();
}

void ThreadPool::ReportException(std::exception_ptr e) noexcept {
  if (Worker* w = CurrentWorker()) Bump(w->exceptions);
  options_.on_exception(std::move(e));
}

bool ThreadPool::TimerDue() const noexcept {
  // No clock read while no timer is set: the common case on every task.
  const int64_t next = timers_.next_deadline();
  return next != arch::kNoDeadline && next <= arch::MonotonicNowNs();
}

bool ThreadPool::HasWork() const noexcept {
  if (!injection_.Empty()) return true;
  if (TimerDue()) return true;
  for (const auto& w : workers_) {
    if (!w->local.Empty()) return true;
  }
  return false;
}

void ThreadPool::Run(Worker& w, Job& job) {
  try {
    job.task();
  } catch (...) {
    Bump(w.exceptions);
    options_.on_exception(std::current_exception());
  }
  Bump(w.tasks_run);
  if (job.group != nullptr) job.group->Done();
}

absl::StatusOr<PoolIo> ThreadPool::Io() {
  Worker* w = CurrentWorker();
  if (w == nullptr) {
    return absl::FailedPreconditionError(
        "ThreadPool::Io() is for tasks running on the pool's workers");
  }
  if (absl::Status s = w->io.MakeOnce(
          options_.io, IoReactorOptions{.entries = options_.io_entries,
                                        .task_run = options_.io_task_run});
      !s.ok()) {
    return s;
  }
  return PoolIo(w->io.reactor(), &options_.on_exception, &w->exceptions);
}

bool ThreadPool::RunOne(Worker& w) {
  // A task handed to this worker while it polled is why it woke.
  if (std::optional<Job> job = idle_workers_->TakeHandedOff(w.index)) {
    Bump(w.tasks_handed_off);
    Run(w, *job);
    return true;
  }
  // Completions that are visibly ready run first; every so many tasks the
  // reactor is asked anyway (queued submissions, epoll's readiness), so a
  // worker that always has tasks still serves its I/O, as Go and Tokio do.
  if (w.io.Run(/*reap_idle=*/w.io.CheckDue())) return true;
  if (TimerDue()) {
    timers_.PopDue(arch::MonotonicNowNs(), w.due);
    const bool more =
        w.due.size() > 1 || timers_.next_deadline() != arch::kNoDeadline;
    for (TaskFn& t : w.due) PushLocal(w, Job{std::move(t), nullptr});
    w.due.clear();
    // While this worker runs a timer's task, an idle one must take the rest
    // of the due tasks (by stealing) and the role of timer keeper.
    if (more) idle_workers_->WakeOne();
  }
  std::optional<Job> job = w.local.Take();
  if (!job) job = injection_.Pop();
  if (!job) {
    const size_t n = workers_.size();
    for (size_t k = 1; k < n && !job; ++k) {
      job = workers_[(w.index + k) % n]->local.Take();
      if (job) Bump(w.tasks_stolen);
    }
  }
  if (!job) return w.io.Run(/*reap_idle=*/true);
  Run(w, *job);
  return true;
}

void ThreadPool::ApplyIdleOptions(Worker& w) {
  idle::IdleOptions options;
  const uint64_t generation = retuner_->Current(options);
  // Checked by SetIdleOptions; only an allocation can fail here.
  if (absl::Status s = w.parker->SetOptions(options); !s.ok()) {
    absl::FPrintF(stderr, "haltpool: worker %d keeps its idle options: %s\n",
                  w.index, s.message());
  }
  w.idle_generation.store(generation, std::memory_order_relaxed);
}

absl::Status ThreadPool::SetIdleOptions(const IdleChoices& change) {
  absl::Status s = retuner_->Change(change, [&](const idle::IdleOptions& o) {
    contention_->SetGovernorCapNs(o.haltpoll.poll_ns);
  });
  if (!s.ok()) return s;
  // A wake ends the idle period it lands in; the next one applies the
  // options (IdleOnce). The generation was published before this release.
  for (auto& w : workers_) w->word.Unpark();
  return s;
}

void ThreadPool::IdleOnce(Worker& w, bool stop_ends_idle) {
  // Options changed since this worker's last idle period: one acquire load,
  // outside the handshake with Enqueue, while the worker is not announced.
  if (retuner_->generation() !=
      w.idle_generation.load(std::memory_order_relaxed)) {
    ApplyIdleOptions(w);
  }
  // The contention sample, if due: before the announcement, so that no
  // wake ever waits for it (runtime/contention_monitor.h).
  contention_->MaybeSample(arch::MonotonicNowNs(), idle_workers_->num_awake(),
                           w.contention);
  // The handshake with Enqueue: announce, then look at the queues again.
  if (!idle_workers_->AnnounceThenRecheck(w.index, [&] {
        return HasWork() ||
               (stop_ends_idle && stopping_.load(std::memory_order_seq_cst));
      })) {
    return;
  }
  // The first idle worker to see a timer parks until it (the keeper); the
  // others need no deadline. Read the deadline after taking the role: a
  // submitter adds its timer, then looks for the keeper.
  int64_t deadline = arch::kNoDeadline;
  int no_keeper = -1;
  const bool keeper = timers_.next_deadline() != arch::kNoDeadline &&
                      timer_keeper_.compare_exchange_strong(
                          no_keeper, w.index, std::memory_order_seq_cst);
  if (keeper) deadline = timers_.next_deadline();
  // The idle loop asks the gate for a polling slot before each poll, so a
  // worker whose governor blocks leaves the slot to another.
  // With I/O in flight the poll state also watches the reactor (its
  // completion ring, or epoll_wait with timeout 0) and the block state
  // waits in it.
  idle::ExternalWait* external = w.io.WaitWhileInFlight();
  // A worker that shares its CPU with its waker does not poll there: the
  // poll would hold the CPU the waker needs (runtime/beside_waker.h). Not
  // for the timer keeper or a worker with I/O in flight, whose wakes come
  // from a timer or the kernel; with the back-off off, polling is as the
  // governor says.
  int64_t poll_cap = contention_->PollCapNs();
  if (options_.backoff && poll_cap != 0 && deadline == arch::kNoDeadline &&
      external == nullptr && !w.beside_waker.NextMayPoll()) {
    poll_cap = 0;
    Bump(w.idles_beside_waker);
  }
  HALTPOOL_PROTOCOL_STEP();  // A wake may come before the park begins.
  w.parker->Park(deadline, /*allow_poll=*/poll_cap != 0, external, poll_cap,
                 &*w.poll_gate);
  w.beside_waker.Woken(idle_workers_->WakerCpu(w.index), arch::CurrentCpu());
  const bool polled = w.poll_gate->TakePolled();
  if (w.contention.measuring) contention_->AfterIdle(w.contention, polled);
  idle_workers_->Retire(w.index);
  if (keeper) {
    timer_keeper_.store(-1, std::memory_order_seq_cst);
    // Hand the role on if timers remain: this worker may be busy running
    // a due one when the next falls due.
    if (timers_.next_deadline() != arch::kNoDeadline) {
      idle_workers_->WakeOne();
    }
  }
}

void ThreadPool::SetUpWorker(Worker& w) {
  tls_pool = this;
  tls_worker = w.index;
  contention_->AttachWorker(w.contention);
  // Timed blocks (a timer's deadline, the predictive governor's wake
  // margin) end on time instead of up to 50 us late.
  if (absl::Status s = arch::SetThreadTimerSlackNs(idle::kTimedBlockSlackNs);
      !s.ok()) {
    absl::FPrintF(stderr, "haltpool: worker %d keeps its timer slack: %s\n",
                  w.index, s.message());
  }
  if (absl::Status s = ApplyPlacement(w.placement); !s.ok()) {
    absl::FPrintF(stderr, "haltpool: worker %d not pinned: %s\n", w.index,
                  s.message());
  }
}

void ThreadPool::WorkerMain(Worker& w) {
  for (;;) {
    if (RunOne(w)) continue;
    if (stopping_.load(std::memory_order_seq_cst) && !HasWork() &&
        !idle_workers_->HasHandedOff(w.index)) {
      break;
    }
    IdleOnce(w, /*stop_ends_idle=*/true);
  }
  // Every I/O callback still runs, with -ECANCELED: a coroutine waiting on
  // its I/O resumes and unwinds instead of leaking.
  w.io.CancelAndDrain();
  w.io.Close();  // On this thread: a single-issuer ring requires it.
  tls_pool = nullptr;
  tls_worker = -1;
}

void ThreadPool::Wait(TaskGroup& group) {
  Worker* w = CurrentWorker();
  if (w == nullptr) {
    WaitOutside(group);
    return;
  }
  while (group.pending() != 0) {
    if (RunOne(*w)) continue;
    // Stopping with nothing queued: this worker reaches its drain only once
    // the wait is over, and the group may wait for this worker's I/O (a
    // coroutine's Recv). Cancel it now; RunOne runs the callbacks.
    if (stopping_.load(std::memory_order_seq_cst) && !HasWork()) {
      w->io.CancelInFlight();
    }
    group.AddWaiter(&w->word);
    if (group.pending() != 0) IdleOnce(*w, /*stop_ends_idle=*/false);
    group.RemoveWaiter(&w->word);
  }
  group.Settle();
}

void ThreadPool::WaitOutside(TaskGroup& group) {
  if (group.pending() == 0) {
    group.Settle();
    return;
  }
  absl::StatusOr<OutsideWaiter*> waiter =
      OutsideWaiter::ForThisThread(serial_, retuner_->generation(), [&] {
        idle::IdleOptions options;
        retuner_->Current(options);
        return options;
      });
  if (!waiter.ok()) {
    // The workers' parkers were made from the same options, so only an
    // exhausted resource gets here; the wait still ends, without polling.
    absl::FPrintF(stderr, "haltpool: waiting without polling: %s\n",
                  waiter.status().message());
    group.WaitBlocking();
    return;
  }
  idle::WakeWord& word = (*waiter)->word();
  BesideWaker& beside_waker = (*waiter)->beside_waker();
  // The worker's loop in Wait, without the tasks: the group unparks every
  // word registered when its count drops to zero (TaskGroup::Done).
  while (group.pending() != 0) {
    const idle::WakeStats before = word.wake_stats();
    group.AddWaiter(&word);
    const bool park = group.pending() != 0;
    if (park) {
      // No poll where the tasks need this CPU: on the process's only CPU,
      // or, with the back-off on, beside the waker (as IdleOnce).
      int64_t poll_cap = usable_cpus_ == 1 ? 0 : contention_->PollCapNs();
      if (options_.backoff && poll_cap != 0 && !beside_waker.NextMayPoll()) {
        poll_cap = 0;
      }
      (*waiter)->parker().Park(arch::kNoDeadline, /*allow_poll=*/poll_cap != 0,
                               /*external=*/nullptr, poll_cap);
    }
    const int waker_cpu = group.RemoveWaiter(&word);
    // No wake of this group lands on the word any more: the counts moved
    // by this group's last task alone, and if they moved, that task's CPU
    // is the waker's.
    const idle::WakeStats after = word.wake_stats();
    if (after.total() != before.total()) {
      beside_waker.Woken(waker_cpu, arch::CurrentCpu());
    }
    outside_waits_.Add(
        park, {after.polling - before.polling, after.not_idle - before.not_idle,
               after.syscall - before.syscall});
  }
  group.Settle();
}

void ThreadPool::Shutdown() {
  if (shut_down_.exchange(true)) return;
  accepting_.store(false, std::memory_order_seq_cst);
  while (submitting_.load(std::memory_order_seq_cst) != 0) {
    std::this_thread::yield();
  }
  // Timers already due still run; the rest are cancelled and counted.
  std::vector<TaskFn> due;
  timers_.PopDue(arch::MonotonicNowNs(), due);
  for (TaskFn& t : due) injection_.Push(Job{std::move(t), nullptr});
  // The cancelled tasks are destroyed, unrun, on a worker: a sleeping
  // coroutine's timer resumes it from its destructor (SleepFor), and the
  // coroutine must go on where its pool's I/O is.
  std::vector<TaskFn> cancelled;
  timers_cancelled_.store(timers_.CancelAll(cancelled),
                          std::memory_order_relaxed);
  if (!cancelled.empty()) {
    injection_.Push(
        Job{[cancelled = std::move(cancelled)]() mutable { cancelled.clear(); },
            nullptr});
  }
  stopping_.store(true, std::memory_order_seq_cst);
  for (auto& w : workers_) w->word.Unpark();
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
  if (options_.print_stats) fputs(FormatPoolStatsText(Stats()).c_str(), stderr);
}

PoolStats ThreadPool::Stats() const {
  PoolStats stats;
  stats.timers_cancelled = timers_cancelled_.load(std::memory_order_relaxed);
  stats.max_pollers = idle_workers_ ? idle_workers_->max_pollers() : 0;
  stats.calibration = calibration_;
  stats.backoff = contention_->Stats();
  stats.idle_options = retuner_->Stats();
  stats.outside_waits = outside_waits_.Snapshot();
  for (const auto& w : workers_) {
    WorkerStats ws;
    ws.index = w->index;
    ws.cpu = w->placement.os_cpu.value_or(-1);
    ws.numa_node = w->placement.numa_node;
    ws.idle = w->parker->Stats(absl::StrCat("worker ", w->index), "parker");
    ws.tasks_run = w->tasks_run.load(std::memory_order_relaxed);
    ws.tasks_stolen = w->tasks_stolen.load(std::memory_order_relaxed);
    ws.tasks_handed_off = w->tasks_handed_off.load(std::memory_order_relaxed);
    ws.idles_beside_waker =
        w->idles_beside_waker.load(std::memory_order_relaxed);
    ws.exceptions = w->exceptions.load(std::memory_order_relaxed);
    ws.idle_options_generation =
        w->idle_generation.load(std::memory_order_relaxed);
    ws.io = w->io.counts();
    if (w->io.made()) {
      ws.io_backend = w->io.backend();
      ws.io_note = w->io.note();
      ws.io_setup = w->io.setup();
    }
    stats.workers.push_back(std::move(ws));
  }
  return stats;
}

}  // namespace haltpool
