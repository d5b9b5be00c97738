// bench/io_wake: how fast an idle pool worker wakes for a socket's data, and
// what the wake costs: the worker's CPU and the machine's IPIs (each one a
// VM exit in a guest).
//
// An outside thread, the writer, sends 8-byte messages over an AF_UNIX
// SOCK_STREAM socketpair to a listener. Each message holds its send time
// (CLOCK_MONOTONIC ns, stamped just before send()); the listener notes now
// minus the stamp once the bytes are in its hands, then acknowledges the
// message with an atomic store. The writer sends the next one only after
// that acknowledgement and a gap, so messages never batch: it spins for
// the acknowledgement (sleeping in short steps only after kAckSpinNs), then
// waits out the gap, spinning for gaps under kSpinGapNs and otherwise
// sleeping until kSleepMarginNs before the end and spinning the rest.
//
// Listeners (bench/io_listeners.h; --contenders picks some):
// - uring-GOVERNOR: a ThreadPool of one worker that waits through PoolIo: a
//   task calls pool->Io() and starts a Recv whose callback re-arms it. One
//   row per governor and the profile's default, with the io_uring ring
//   set up as the environment says (HALTPOOL_IO_TASKRUN, coop unless set).
// - uring-interrupt-{poll,block}, uring-defer-{poll,block}: the same with
//   the ring's task-run mode set in code, to show what the mode changes.
// - epoll-{default,poll,block}: the pool on its epoll backend.
// - thread-recv, thread-epoll_wait: a plain thread blocking in recv(), or
//   in epoll_wait() and then recv().
// Pools are configured in code over the configuration the environment
// resolves (ApplyCodeOptions); the back-off under contention is turned off
// unless --backoff (the writer spinning out short gaps is contention to it,
// which would make the poll rows block; bench/tradeoff measures it).
//
// The listener (pool worker or thread) is pinned to one CPU and the writer
// to another (--nopin: neither), so every wake crosses CPUs.
//
// Per contender and gap: p50, p99 and mean latency (us); the listener
// thread's CPU time over the point's wall time (its CLOCK_THREAD_CPUTIME_ID,
// read from the writer through pthread_getcpuclockid: the scheduler's
// nanosecond runtime, brought up to date at the read even while the thread
// runs, so it is exact; /proc/PID/task/TID/stat would count 10 ms ticks);
// IPIs per completion: the Rescheduling and Function call interrupts of
// every CPU (bench/ipi_counts.h) over the point, less the baseline, per
// message; and the worker's I/O counters over the point (polled,
// posted, woke: runtime/worker_io.h). /proc/interrupts counts the
// whole machine's IPIs, the writer's own sleeps and other processes'
// included, so before and after the contenders the writer paces every gap
// with nobody listening and nothing sent; the mean of those two IPI rates
// times a point's wall time is the point's baseline.
//
// Prints a Markdown table, the baselines, how each pool was set up, and the
// verdict on the target: "I/O wake to a worker polling under poll: at most
// 1 IPI per 100 completions, and mean latency at most 1/3 of block's at gaps
// up to 50 us", judged on uring-poll against uring-block and on epoll-poll
// against epoll-block.
//
// ./bazelw run -c opt //bench:io_wake -- [--gaps=0,5us,...] [--messages=N]
//   [--point_ms=N] [--contenders=a,b] [--quick] [--backoff] [--nopin]

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "arch/cpu_wait.h"
#include "arch/cycle_clock.h"
#include "arch/thread_affinity.h"
#include "arch/timer_slack.h"
#include "bench/command_line.h"
#include "bench/io_listeners.h"
#include "bench/ipi_counts.h"
#include "runtime/config.h"
#include "runtime/io/io_backend.h"
#include "runtime/io/io_reactor.h"

namespace haltpool::bench {

// The gaps between one message's acknowledgement and the next send.
struct GapList {
  std::vector<int64_t> ns;
};

// The contenders to run, by name; empty: every one.
struct ContenderList {
  std::vector<std::string> names;
};

bool AbslParseFlag(absl::string_view text, GapList* out, std::string* error);
std::string AbslUnparseFlag(const GapList& list);
bool AbslParseFlag(absl::string_view text, ContenderList* out,
                   std::string* error);
std::string AbslUnparseFlag(const ContenderList& list);

}  // namespace haltpool::bench

using haltpool::bench::ContenderList;
using haltpool::bench::GapList;
using haltpool::bench::IntIn;
// ABSL_FLAG's type cannot hold a comma: the ranges are named here.
using Messages = IntIn<1, 1000000>;
using PointMs = IntIn<1, 600000>;

ABSL_FLAG(GapList, gaps,
          (GapList{{0, 5000, 20000, 50000, 200000, 1000000, 10000000}}),
          "gaps between an acknowledgement and the next message, "
          "comma-separated durations from 0 to 1s");
ABSL_FLAG(Messages, messages, 2000,
          "messages measured per point (fewer where --point_ms of gaps is "
          "reached first)");
ABSL_FLAG(PointMs, point_ms, 1000,
          "at most this many ms of gaps per point: at long gaps fewer "
          "messages, but at least 20");
ABSL_FLAG(ContenderList, contenders, {},
          "contenders to run, comma-separated; empty: every one");
ABSL_FLAG(bool, quick, false,
          "small points: at most 200 messages and 200 ms of gaps each");
ABSL_FLAG(bool, backoff, false,
          "leave the pools' back-off under contention as configured "
          "(default: off)");
ABSL_FLAG(bool, pin, true,
          "pin the listener and the writer to two different CPUs");

namespace haltpool::bench {
namespace {

// Gaps under this are waited out spinning; longer ones asleep until
// kSleepMarginNs before the end, then spinning: a timed sleep on this
// project's 2-vCPU guests ends tens of microseconds late even with 1 ns of
// timer slack (bench/wake_harness.h). The values are the issue's.
constexpr int64_t kSpinGapNs = 100000;
constexpr int64_t kSleepMarginNs = 80000;
// How long the writer spins for an acknowledgement before it sleeps in
// kAckNapNs steps: longer than a blocked wake on those guests (20-80 us), so
// the writer's own sleeps and wakes stay out of the measured IPIs.
constexpr int64_t kAckSpinNs = 1000000;
constexpr int64_t kAckNapNs = 50000;
// No acknowledgement this long after a send is a lost wake: the run stops.
constexpr int64_t kAckTimeoutNs = 10000000000;
// Messages before each point that are not counted, so an adaptive governor
// meets the new gap first; and messages at 20 us before a contender's first
// point (threads started, rings and caches warm).
constexpr int kPointWarmup = 10;
constexpr int kContenderWarmup = 200;
constexpr int64_t kContenderWarmupGapNs = 20000;
// The fewest messages a point measures when --point_ms would allow fewer.
constexpr int kMinMessages = 20;
// A baseline paces a gap for at least this long (at short gaps the steps
// alone would take a few ms, too short to see a background rate).
constexpr int64_t kMinBaselineNs = 200000000;
// The target: IPIs per completion and the mean latency ratio to `block`,
// at gaps up to kTargetMaxGapNs.
constexpr double kTargetIpisPerCompletion = 0.01;
constexpr double kTargetLatencyRatio = 1.0 / 3.0;
constexpr int64_t kTargetMaxGapNs = 50000;

// How a contender listens.
enum class Kind { kPool, kThreadRecv, kThreadEpoll };

struct ContenderSpec {
  std::string name;
  Kind kind = Kind::kPool;
  IoBackend io = IoBackend::kUring;
  std::optional<IoTaskRun> task_run;    // Unset: the environment's choice.
  std::optional<std::string> governor;  // Unset: the profile's.
};

std::vector<ContenderSpec> AllContenders() {
  std::vector<ContenderSpec> out;
  auto pool = [&](std::string name, IoBackend io,
                  std::optional<IoTaskRun> task_run,
                  std::optional<std::string> governor) {
    out.push_back({std::move(name), Kind::kPool, io, task_run, governor});
  };
  pool("uring-default", IoBackend::kUring, {}, {});
  for (const char* g : {"haltpoll", "predictive", "fixed", "poll", "block"}) {
    pool(absl::StrCat("uring-", g), IoBackend::kUring, {}, g);
  }
  for (IoTaskRun mode : {IoTaskRun::kInterrupt, IoTaskRun::kDefer}) {
    for (const char* g : {"poll", "block"}) {
      pool(absl::StrCat("uring-", kIoTaskRuns.Name(mode), "-", g),
           IoBackend::kUring, mode, g);
    }
  }
  pool("epoll-default", IoBackend::kEpoll, {}, {});
  pool("epoll-poll", IoBackend::kEpoll, {}, "poll");
  pool("epoll-block", IoBackend::kEpoll, {}, "block");
  for (Kind kind : {Kind::kThreadRecv, Kind::kThreadEpoll}) {
    ContenderSpec c;
    c.name = kind == Kind::kThreadRecv ? "thread-recv" : "thread-epoll_wait";
    c.kind = kind;
    out.push_back(std::move(c));
  }
  return out;
}

std::string ContenderNames() {
  std::vector<std::string> names;
  for (const ContenderSpec& c : AllContenders()) names.push_back(c.name);
  return absl::StrJoin(names, ", ");
}

// "0", "5 us", "1 ms", "1500 ns".
std::string FormatGap(int64_t ns) {
  if (ns == 0) return "0";
  if (ns % 1000000 == 0) return absl::StrCat(ns / 1000000, " ms");
  if (ns % 1000 == 0) return absl::StrCat(ns / 1000, " us");
  return absl::StrCat(ns, " ns");
}

int64_t CpuClockNs(clockid_t clock) {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

timespec ToTimespec(int64_t ns) {
  return timespec{static_cast<time_t>(ns / 1000000000),
                  static_cast<long>(ns % 1000000000)};
}

[[noreturn]] void Die(const std::string& what) {
  absl::FPrintF(stderr, "io_wake: %s\n", what);
  fflush(stdout);
  fflush(stderr);
  _exit(1);
}

// One point as measured, before the baseline is taken off.
struct Point {
  int64_t gap_ns = 0;
  int messages = 0;
  double p50_us = 0, p99_us = 0, mean_us = 0;
  double cpu_pct = 0;  // The listener thread's CPU over the wall time.
  int64_t wall_ns = 0;
  std::optional<uint64_t> ipis;      // RES + CAL over the point.
  std::optional<WorkerIoCounts> io;  // The worker's, over the point.
};

struct ContenderResult {
  std::string label;
  std::string name;
  std::string setup;  // Empty for plain threads.
  int listener_cpu = -1;
  int writer_cpu = -1;
  std::vector<Point> points;
  std::string skipped;  // Why it did not run, if it did not.
};

// Waits until CLOCK_MONOTONIC reaches `t`: spinning for short waits, else
// asleep until kSleepMarginNs before it, then spinning.
void PaceUntil(int64_t t, int64_t gap_ns) {
  if (gap_ns >= kSpinGapNs) {
    const timespec wake = ToTimespec(t - kSleepMarginNs);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nullptr) ==
           EINTR) {
    }
  }
  while (arch::MonotonicNowNs() < t) arch::CpuRelax();
}

// Sends one message stamped with the time just before send().
void SendStamped(int fd) {
  const int64_t stamp = arch::MonotonicNowNs();
  char bytes[sizeof(stamp)];
  memcpy(bytes, &stamp, sizeof(stamp));
  size_t sent = 0;
  while (sent < sizeof(bytes)) {
    const ssize_t n =
        send(fd, bytes + sent, sizeof(bytes) - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) Die(absl::StrCat("send: ", strerror(errno)));
    sent += static_cast<size_t>(n);
  }
}

// Waits until the listener has acknowledged `count` messages; returns when
// it saw that.
int64_t AwaitAck(const Channel& ch, uint32_t count, absl::string_view what) {
  const int64_t start = arch::MonotonicNowNs();
  int64_t now = start;
  while (ch.acked.load(std::memory_order_acquire) < count) {
    if (ch.closed.load(std::memory_order_acquire)) {
      Die(absl::StrCat(what, ": the listener stopped (",
                       strerror(-ch.error.load()), ") at message ", count));
    }
    now = arch::MonotonicNowNs();
    if (now - start < kAckSpinNs) {
      arch::CpuRelax();
      continue;
    }
    if (now - start > kAckTimeoutNs) {
      Die(absl::StrCat(what, ": message ", count,
                       " not acknowledged in 10 s: a lost wake"));
    }
    const timespec nap = ToTimespec(kAckNapNs);
    nanosleep(&nap, nullptr);
  }
  return arch::MonotonicNowNs();
}

// The messages a point at `gap_ns` measures.
int MessagesFor(int64_t gap_ns, int messages, int64_t point_ms) {
  if (gap_ns == 0) return messages;
  const int64_t fit = point_ms * 1000000 / gap_ns;
  return static_cast<int>(std::min<int64_t>(
      messages, std::max<int64_t>(fit, std::min(messages, kMinMessages))));
}

std::optional<uint64_t> IpisNow() {
  absl::StatusOr<IpiCounts> c = ReadIpiCounts();
  if (!c.ok()) return std::nullopt;
  return c->total();
}

// The writer's side of one contender, on the calling thread: a warm-up,
// then every gap.
std::vector<Point> RunWriter(Channel& ch, Listener& listener,
                             const std::vector<int64_t>& gaps, int messages,
                             int64_t point_ms, absl::string_view name) {
  (void)arch::SetThreadTimerSlackNs(1);
  clockid_t clock;
  const bool have_clock = pthread_getcpuclockid(listener.thread(), &clock) == 0;
  uint32_t sent = 0;
  int64_t next = arch::MonotonicNowNs();
  auto one = [&](int64_t gap_ns) {
    PaceUntil(next, gap_ns);
    SendStamped(ch.tx_fd);
    ++sent;
    next = AwaitAck(ch, sent, name) + gap_ns;
  };
  for (int i = 0; i < kContenderWarmup; ++i) one(kContenderWarmupGapNs);
  std::vector<Point> points;
  for (int64_t gap : gaps) {
    const int n = MessagesFor(gap, messages, point_ms);
    next = arch::MonotonicNowNs() + gap;
    for (int i = 0; i < kPointWarmup; ++i) one(gap);
    const uint32_t first = sent;
    const std::optional<WorkerIoCounts> io0 = listener.IoCounts();
    const std::optional<uint64_t> ipi0 = IpisNow();
    const int64_t cpu0 = have_clock ? CpuClockNs(clock) : 0;
    const int64_t wall0 = arch::MonotonicNowNs();
    next = std::max(next, wall0);
    for (int i = 0; i < n; ++i) one(gap);
    const int64_t wall = arch::MonotonicNowNs() - wall0;
    const int64_t cpu = have_clock ? CpuClockNs(clock) - cpu0 : 0;
    const std::optional<uint64_t> ipi1 = IpisNow();
    const std::optional<WorkerIoCounts> io1 = listener.IoCounts();

    Point p;
    p.gap_ns = gap;
    p.messages = n;
    p.wall_ns = wall;
    std::vector<int64_t> l(ch.latency_ns.begin() + first,
                           ch.latency_ns.begin() + first + n);
    std::sort(l.begin(), l.end());
    double sum = 0;
    for (int64_t v : l) sum += static_cast<double>(v);
    p.mean_us = sum / n / 1e3;
    p.p50_us = static_cast<double>(l[l.size() / 2]) / 1e3;
    p.p99_us = static_cast<double>(l[l.size() * 99 / 100]) / 1e3;
    p.cpu_pct =
        wall > 0 ? 100.0 * static_cast<double>(cpu) / static_cast<double>(wall)
                 : 0;
    if (ipi0 && ipi1) p.ipis = *ipi1 - *ipi0;
    if (io0 && io1) {
      WorkerIoCounts d;
      d.callbacks = io1->callbacks - io0->callbacks;
      d.polled = io1->polled - io0->polled;
      d.posted = io1->posted - io0->posted;
      d.woke = io1->woke - io0->woke;
      p.io = d;
    }
    points.push_back(p);
  }
  return points;
}

// Runs `writer` on a new thread pinned to `cpu` and waits for it.
template <typename F>
void OnThreadPinnedTo(int cpu, F writer) {
  std::thread t([&] {
    PinThisThread(cpu);
    writer();
  });
  t.join();
}

int TotalMessages(const std::vector<int64_t>& gaps, int messages,
                  int64_t point_ms) {
  int total = kContenderWarmup;
  for (int64_t g : gaps)
    total += kPointWarmup + MessagesFor(g, messages, point_ms);
  return total;
}

// Everything the run shares: the resolved configuration and the sizes.
struct Run {
  Config base;
  std::vector<int64_t> gaps;
  int messages = 0;
  int64_t point_ms = 0;
  bool backoff = false;
  bool pin = true;
  std::vector<int> cpus;  // Allowed CPUs.
};

// A CPU for the writer other than `listener_cpu`; -1 without pinning.
int WriterCpu(const Run& run, int listener_cpu) {
  if (!run.pin || run.cpus.size() < 2) return -1;
  for (int c : run.cpus) {
    if (c != listener_cpu) return c;
  }
  return -1;
}

ContenderResult RunContender(const Run& run, const ContenderSpec& spec) {
  absl::FPrintF(stderr, "io_wake: %s\n", spec.name);
  ContenderResult result;
  result.name = spec.name;
  result.label = spec.name;
  std::unique_ptr<Listener> listener;
  const int listener_cpu = run.pin && run.cpus.size() >= 2 ? run.cpus[0] : -1;
  if (spec.kind == Kind::kPool) {
    PoolOptions o;
    o.workers = 1;
    o.io = spec.io;
    o.io_task_run = spec.task_run;
    if (!run.backoff) o.backoff = false;
    if (run.pin && run.cpus.size() >= 2) o.pin = PinMode::kPu;
    o.idle.governor = spec.governor;
    if (!spec.governor) {
      result.label =
          absl::StrCat(spec.name, " (", run.base.pool.idle.governor, ")");
    }
    Config c = run.base;
    if (absl::Status s = ApplyCodeOptions(o, c); !s.ok()) {
      Die(absl::StrCat(spec.name, ": ", s.message()));
    }
    listener = MakePoolListener(std::move(c));
  } else {
    listener =
        MakeThreadListener(spec.kind == Kind::kThreadEpoll, listener_cpu);
  }
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    Die(absl::StrCat("socketpair: ", strerror(errno)));
  }
  Channel ch;
  ch.rx_fd = fds[0];
  ch.tx_fd = fds[1];
  ch.latency_ns.assign(TotalMessages(run.gaps, run.messages, run.point_ms), 0);
  if (absl::Status s = listener->Start(ch); !s.ok()) {
    result.skipped = std::string(s.message());
    absl::FPrintF(stderr, "io_wake: %s: skipped: %s\n", spec.name,
                  result.skipped);
    close(fds[0]);
    close(fds[1]);
    return result;
  }
  result.setup = listener->Setup();
  result.listener_cpu = listener->cpu();
  result.writer_cpu = WriterCpu(run, listener->cpu());
  OnThreadPinnedTo(result.writer_cpu, [&] {
    result.points = RunWriter(ch, *listener, run.gaps, run.messages,
                              run.point_ms, spec.name);
    // The end of the stream ends the listener's receive loop.
    shutdown(ch.tx_fd, SHUT_WR);
    const int64_t until = arch::MonotonicNowNs() + kAckTimeoutNs;
    while (!ch.closed.load(std::memory_order_acquire)) {
      if (arch::MonotonicNowNs() > until) {
        Die(absl::StrCat(spec.name,
                         ": the listener did not see the end of "
                         "the stream"));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  listener->Stop();
  close(fds[0]);
  close(fds[1]);
  return result;
}

// The machine's IPI rate while the writer paces `gap_ns` with nobody
// listening and nothing sent, on the writer's CPU, for as many steps as a
// point has (at least kMinBaselineNs).
struct Baseline {
  int64_t gap_ns = 0;
  int64_t wall_ns = 0;
  uint64_t ipis = 0;
  double per_second() const {
    return wall_ns > 0
               ? static_cast<double>(ipis) * 1e9 / static_cast<double>(wall_ns)
               : 0;
  }
};

std::vector<Baseline> MeasureBaselines(const Run& run) {
  std::vector<Baseline> out;
  const int listener_cpu = run.pin && run.cpus.size() >= 2 ? run.cpus[0] : -1;
  OnThreadPinnedTo(WriterCpu(run, listener_cpu), [&] {
    (void)arch::SetThreadTimerSlackNs(1);
    for (int64_t gap : run.gaps) {
      const int n = MessagesFor(gap, run.messages, run.point_ms);
      Baseline b;
      b.gap_ns = gap;
      const std::optional<uint64_t> ipi0 = IpisNow();
      const int64_t start = arch::MonotonicNowNs();
      int64_t next = start;
      for (int i = 0; i < n || arch::MonotonicNowNs() - start < kMinBaselineNs;
           ++i) {
        next += gap;
        PaceUntil(next, gap);
      }
      b.wall_ns = arch::MonotonicNowNs() - start;
      const std::optional<uint64_t> ipi1 = IpisNow();
      if (ipi0 && ipi1) b.ipis = *ipi1 - *ipi0;
      out.push_back(b);
    }
  });
  return out;
}

// The baseline IPI rate for `gap_ns`: the mean of the runs before and
// after the contenders.
double BaselineRate(const std::vector<Baseline>& before,
                    const std::vector<Baseline>& after, int64_t gap_ns) {
  double sum = 0;
  int n = 0;
  for (const auto* list : {&before, &after}) {
    for (const Baseline& b : *list) {
      if (b.gap_ns == gap_ns) {
        sum += b.per_second();
        ++n;
      }
    }
  }
  return n > 0 ? sum / n : 0;
}

// IPIs per completion, the baseline taken off; nullopt if unmeasured.
std::optional<double> NetIpis(const Point& p, double baseline_per_second) {
  if (!p.ipis || p.messages == 0) return std::nullopt;
  const double background =
      baseline_per_second * static_cast<double>(p.wall_ns) / 1e9;
  return (static_cast<double>(*p.ipis) - background) / p.messages;
}

// "0.012", "n/a"; never "-0.000".
std::string FormatIpis(std::optional<double> ipis) {
  if (!ipis) return "n/a";
  return absl::StrFormat("%.3f", std::abs(*ipis) < 0.0005 ? 0.0 : *ipis);
}

std::string Table(const std::vector<ContenderResult>& results,
                  const std::vector<Baseline>& before,
                  const std::vector<Baseline>& after) {
  std::string out =
      "| contender | gap | p50 us | p99 us | mean us | worker CPU % | "
      "IPIs/completion | polled | posted | woke |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
      "|\n";
  for (const ContenderResult& r : results) {
    for (const Point& p : r.points) {
      const std::optional<double> ipis =
          NetIpis(p, BaselineRate(before, after, p.gap_ns));
      auto count = [&](uint64_t WorkerIoCounts::*field) {
        return p.io ? absl::StrCat((*p.io).*field) : std::string("-");
      };
      absl::StrAppendFormat(
          &out, "| %s | %s | %.1f | %.1f | %.1f | %.1f | %s | %s | %s | %s |\n",
          r.label, FormatGap(p.gap_ns), p.p50_us, p.p99_us, p.mean_us,
          p.cpu_pct, FormatIpis(ipis), count(&WorkerIoCounts::polled),
          count(&WorkerIoCounts::posted), count(&WorkerIoCounts::woke));
    }
  }
  return out;
}

std::string BaselineTable(const std::vector<Baseline>& before,
                          const std::vector<Baseline>& after) {
  std::string out =
      "| gap | before: IPIs | before: s | after: IPIs | after: s | IPIs/s "
      "(mean) |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
    absl::StrAppendFormat(&out, "| %s | %d | %.2f | %d | %.2f | %.1f |\n",
                          FormatGap(before[i].gap_ns), before[i].ipis,
                          before[i].wall_ns / 1e9, after[i].ipis,
                          after[i].wall_ns / 1e9,
                          BaselineRate(before, after, before[i].gap_ns));
  }
  return out;
}

const ContenderResult* Find(const std::vector<ContenderResult>& results,
                            absl::string_view name) {
  for (const ContenderResult& r : results) {
    if (r.name == name && r.skipped.empty()) return &r;
  }
  return nullptr;
}

// The verdict on the target for `backend` ("uring" or "epoll"): its poll
// contender against its block contender at every gap up to kTargetMaxGapNs
// both ran.
std::string Verdict(absl::string_view backend,
                    const std::vector<ContenderResult>& results,
                    const std::vector<Baseline>& before,
                    const std::vector<Baseline>& after) {
  const std::string poll_name = absl::StrCat(backend, "-poll");
  const std::string block_name = absl::StrCat(backend, "-block");
  const std::string target = absl::StrFormat(
      "I/O wake to a worker polling under poll: at most 1 IPI per %.0f "
      "completions, and mean latency at most 1/3 of block's at gaps up to "
      "%s",
      1 / kTargetIpisPerCompletion, FormatGap(kTargetMaxGapNs));
  const ContenderResult* poll = Find(results, poll_name);
  const ContenderResult* block = Find(results, block_name);
  if (poll == nullptr || block == nullptr) {
    return absl::StrCat("Target: ", target, " (", poll_name,
                        "): not evaluated: it needs ", poll_name, " and ",
                        block_name, ".\n");
  }
  std::string out;
  bool all = true;
  int judged = 0;
  for (const Point& p : poll->points) {
    if (p.gap_ns > kTargetMaxGapNs) continue;
    const Point* b = nullptr;
    for (const Point& q : block->points) {
      if (q.gap_ns == p.gap_ns) b = &q;
    }
    if (b == nullptr) continue;
    const std::optional<double> ipis =
        NetIpis(p, BaselineRate(before, after, p.gap_ns));
    const double ratio = b->mean_us > 0 ? p.mean_us / b->mean_us : 0;
    const bool ipis_ok = ipis && *ipis <= kTargetIpisPerCompletion;
    const bool ratio_ok = b->mean_us > 0 && ratio <= kTargetLatencyRatio;
    all = all && ipis_ok && ratio_ok;
    ++judged;
    absl::StrAppendFormat(
        &out,
        "gap %s: %s %s IPIs/completion (at most %.2f: %s); mean %.1f us "
        "against %s's %.1f us, %.2f of it (at most %.2f: %s)\n",
        FormatGap(p.gap_ns), poll_name, FormatIpis(ipis),
        kTargetIpisPerCompletion, ipis_ok ? "met" : "not met", p.mean_us,
        block_name, b->mean_us, ratio, kTargetLatencyRatio,
        ratio_ok ? "met" : "not met");
  }
  if (judged == 0) {
    return absl::StrCat("Target: ", target, " (", poll_name,
                        "): not evaluated: no gap up to ",
                        FormatGap(kTargetMaxGapNs), " was run.\n");
  }
  absl::StrAppend(&out, "Target: ", target, " (", poll_name, ": ", poll->setup,
                  "): ", all ? "met" : "not met", ".\n");
  return out;
}

int Main(int argc, char** argv) {
  ParseCommandLineOrExit(argc, argv, "usage: io_wake [flags]");
  Run run;
  run.gaps = absl::GetFlag(FLAGS_gaps).ns;
  run.messages = static_cast<int>(absl::GetFlag(FLAGS_messages).value);
  run.point_ms = absl::GetFlag(FLAGS_point_ms).value;
  if (absl::GetFlag(FLAGS_quick)) {
    run.messages = std::min(run.messages, 200);
    run.point_ms = std::min<int64_t>(run.point_ms, 200);
  }
  run.backoff = absl::GetFlag(FLAGS_backoff);
  run.pin = absl::GetFlag(FLAGS_pin);
  run.cpus = arch::ThreadCpus();
  std::vector<ContenderSpec> specs;
  const std::vector<std::string> chosen = absl::GetFlag(FLAGS_contenders).names;
  for (const ContenderSpec& c : AllContenders()) {
    if (chosen.empty() ||
        std::find(chosen.begin(), chosen.end(), c.name) != chosen.end()) {
      specs.push_back(c);
    }
  }
  // The default governor and task-run mode come from the environment, as
  // for any user; each contender sets its own on top of it.
  run.base = ConfigFromEnvironmentOrExit();
  if (!ReadIpiCounts().ok()) {
    absl::FPrintF(stderr, "io_wake: IPIs not counted: %s\n",
                  ReadIpiCounts().status().message());
  }

  absl::FPrintF(stderr, "io_wake: baseline ...\n");
  const std::vector<Baseline> before = MeasureBaselines(run);
  std::vector<ContenderResult> results;
  for (const ContenderSpec& spec : specs) {
    results.push_back(RunContender(run, spec));
  }
  absl::FPrintF(stderr, "io_wake: baseline ...\n");
  const std::vector<Baseline> after = MeasureBaselines(run);

  int listener_cpu = -1, writer_cpu = -1;
  for (const ContenderResult& r : results) {
    if (r.skipped.empty()) {
      listener_cpu = r.listener_cpu;
      writer_cpu = r.writer_cpu;
    }
  }
  absl::PrintF(
      "io_wake: AF_UNIX SOCK_STREAM socketpair, 8-byte messages, one at a "
      "time; a 1-worker pool or a thread listens%s; %d messages per point "
      "(at long gaps as many as fit %d ms, at least %d); back-off %s\n\n",
      listener_cpu >= 0 ? absl::StrFormat(" on CPU %d, the writer on CPU %d",
                                          listener_cpu, writer_cpu)
                        : std::string(", unpinned"),
      run.messages, run.point_ms, std::min(run.messages, kMinMessages),
      run.backoff && run.base.pool.backoff ? "on" : "off");
  absl::PrintF(
      "IPIs/completion: the machine's Rescheduling + Function call "
      "interrupts over the point, less the baseline rate times the point's "
      "wall time, per message.\n\n");
  absl::PrintF("%s\n", Table(results, before, after));
  absl::PrintF(
      "Baseline: the writer pacing each gap on its CPU with nobody listening "
      "and nothing sent, before and after the contenders:\n\n%s\n",
      BaselineTable(before, after));
  absl::PrintF("Setup:\n\n");
  for (const ContenderResult& r : results) {
    if (!r.skipped.empty()) {
      absl::PrintF("- %s: skipped: %s\n", r.name, r.skipped);
    } else if (!r.setup.empty()) {
      absl::PrintF("- %s: %s\n", r.name, r.setup);
    }
  }
  absl::PrintF("\n%s%s", Verdict("uring", results, before, after),
               Verdict("epoll", results, before, after));
  return 0;
}

}  // namespace

bool AbslParseFlag(absl::string_view text, GapList* out, std::string* error) {
  out->ns.clear();
  for (absl::string_view g : absl::StrSplit(text, ',')) {
    absl::Duration d;
    if (!absl::ParseDuration(g, &d) || d < absl::ZeroDuration() ||
        d > absl::Seconds(1)) {
      *error = absl::StrCat("'", g,
                            "' is not a gap; accepted: durations from 0 to 1s, "
                            "comma-separated, such as 0,5us,1ms");
      return false;
    }
    out->ns.push_back(absl::ToInt64Nanoseconds(d));
  }
  return true;
}

std::string AbslUnparseFlag(const GapList& list) {
  std::vector<std::string> parts;
  for (int64_t ns : list.ns) {
    parts.push_back(absl::FormatDuration(absl::Nanoseconds(ns)));
  }
  return absl::StrJoin(parts, ",");
}

bool AbslParseFlag(absl::string_view text, ContenderList* out,
                   std::string* error) {
  out->names.clear();
  if (text.empty()) return true;
  const std::vector<ContenderSpec> all = AllContenders();
  for (absl::string_view name : absl::StrSplit(text, ',')) {
    if (std::none_of(all.begin(), all.end(),
                     [&](const ContenderSpec& c) { return c.name == name; })) {
      *error = absl::StrCat("'", name,
                            "' is not a contender; accepted: comma-separated "
                            "names from ",
                            ContenderNames());
      return false;
    }
    out->names.emplace_back(name);
  }
  return true;
}

std::string AbslUnparseFlag(const ContenderList& list) {
  return absl::StrJoin(list.names, ",");
}

}  // namespace haltpool::bench

int main(int argc, char** argv) { return haltpool::bench::Main(argc, argv); }
