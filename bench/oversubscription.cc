// bench/oversubscription: pools in several processes on fewer CPUs, next to
// spinning hog processes, where polling takes CPUs from runnable work; the
// poll back-off (idle/poll_backoff.h) is for this case. Each pool process
// ping-pongs: its main thread submits a task, the task runs on a worker,
// the main thread waits for it (TaskGroup), and submits the next. The table
// gives the round trips per second of all pool processes together for the
// block and poll governors and the default, each with the back-off on and
// off, and what the back-off did (its level at the end, summed over the
// processes' times backed off).
//
// The "idle" rows are the real-machine check: one pool process, no hogs,
// back-off on. On an otherwise idle machine it must stay at level 0: the
// submitter and the worker each have a CPU, nothing is kept waiting.
//
// Usage: oversubscription [--processes=3] [--hogs=2] [--workers=2]
//   [--seconds=3] [--runs=1]
// Every process is a fork of this one, made before any thread starts.

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "arch/cycle_clock.h"
#include "bench/command_line.h"
#include "runtime/config.h"
#include "runtime/pool_options.h"
#include "runtime/task_group.h"
#include "runtime/thread_pool.h"

using Processes = haltpool::bench::IntIn<1, 64>;
using Hogs = haltpool::bench::IntIn<0, 256>;
using Workers = haltpool::bench::IntIn<1, 64>;
using Seconds = haltpool::bench::IntIn<1, 600>;
using Runs = haltpool::bench::IntIn<1, 100>;

ABSL_FLAG(Processes, processes, 3, "pool processes, each ping-ponging");
ABSL_FLAG(Hogs, hogs, 2, "spinning hog processes beside them");
ABSL_FLAG(Workers, workers, 2, "workers of each pool");
ABSL_FLAG(Seconds, seconds, 3, "measured seconds per row");
ABSL_FLAG(Runs, runs, 1, "runs per row; the table gives the median");

namespace haltpool::bench {
namespace {

// What one pool process reports through its pipe.
struct ChildResult {
  uint64_t round_trips = 0;
  int level = 0;
  uint64_t backed_off = 0;
  uint64_t samples = 0;
  char backoff[512] = {};  // FormatBackoff at the end.
};

struct Row {
  std::string name;  // "block", "poll" or "default".
  bool backoff = true;
  bool idle = false;  // The real-machine check: one process, no hogs.
};

int64_t NowNs() { return arch::MonotonicNowNs(); }

[[noreturn]] void RunPoolChild(const Row& row, int workers, int64_t start_ns,
                               int64_t end_ns, int fd) {
  PoolOptions o;
  o.workers = workers;
  o.backoff = row.backoff;
  if (row.name != "default") o.idle.governor = row.name;
  const Config config = ConfigFromEnvironmentOrExit(o);
  absl::StatusOr<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create(config);
  if (!pool.ok()) {
    absl::FPrintF(stderr, "oversubscription: %s\n", pool.status().message());
    _exit(2);
  }
  ChildResult r;
  while (NowNs() < start_ns) {
    TaskGroup g;  // Warm up until the common start.
    (void)(*pool)->Submit(g, [] {});
    (*pool)->Wait(g);
  }
  while (NowNs() < end_ns) {
    TaskGroup g;
    if (!(*pool)->Submit(g, [] {}).ok()) _exit(1);
    (*pool)->Wait(g);
    ++r.round_trips;
  }
  const BackoffStats b = (*pool)->Stats().backoff;
  r.level = b.level;
  r.backed_off = b.backed_off;
  r.samples = b.samples;
  absl::SNPrintF(r.backoff, sizeof r.backoff, "%s", FormatBackoff(b));
  pool->reset();
  if (write(fd, &r, sizeof r) != sizeof r) _exit(1);
  _exit(0);
}

[[noreturn]] void RunHog(int64_t end_ns) {
  volatile uint64_t n = 0;
  while (NowNs() < end_ns) {
    for (int i = 0; i < 10000; ++i) n = n + 1;
  }
  _exit(0);
}

struct RowResult {
  double round_trips_per_s = 0;
  int max_level = 0;
  uint64_t backed_off = 0;
  uint64_t samples = 0;
  std::string backoff;  // The first process's back-off at the end.
};

// One run of `row`: forks the pools and the hogs, waits for all.
RowResult RunOnce(const Row& row, int processes, int hogs, int workers,
                  int seconds) {
  if (row.idle) {
    processes = 1;
    hogs = 0;
  }
  // 300 ms for every process to make its pool before the common start.
  const int64_t start_ns = NowNs() + 300000000;
  const int64_t end_ns = start_ns + int64_t{seconds} * 1000000000;
  std::vector<pid_t> pids;
  std::vector<int> fds;
  for (int i = 0; i < processes; ++i) {
    int p[2];
    if (pipe(p) != 0) {
      perror("oversubscription: pipe");
      exit(1);
    }
    const pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      RunPoolChild(row, workers, start_ns, end_ns, p[1]);
    }
    close(p[1]);
    pids.push_back(pid);
    fds.push_back(p[0]);
  }
  for (int i = 0; i < hogs; ++i) {
    const pid_t pid = fork();
    if (pid == 0) RunHog(end_ns);
    pids.push_back(pid);
  }
  RowResult out;
  uint64_t total = 0;
  for (int fd : fds) {
    ChildResult r;
    if (read(fd, &r, sizeof r) != sizeof r) {
      absl::FPrintF(stderr, "oversubscription: a pool process failed\n");
      exit(1);
    }
    close(fd);
    total += r.round_trips;
    out.max_level = std::max(out.max_level, r.level);
    out.backed_off += r.backed_off;
    out.samples += r.samples;
    if (out.backoff.empty()) out.backoff = r.backoff;
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
  }
  out.round_trips_per_s = static_cast<double>(total) / seconds;
  return out;
}

int Main(int argc, char** argv) {
  ParseCommandLineOrExit(argc, argv, "usage: oversubscription [flags]");
  auto flag = [](const auto& f) {
    return static_cast<int>(absl::GetFlag(f).value);
  };
  const int processes = flag(FLAGS_processes), hogs = flag(FLAGS_hogs),
            workers = flag(FLAGS_workers), seconds = flag(FLAGS_seconds),
            runs = flag(FLAGS_runs);
  ConfigFromEnvironmentOrExit();  // A bad variable exits 2 here, once.
  std::vector<Row> rows;
  for (const char* name : {"block", "poll", "default"}) {
    for (bool backoff : {true, false}) rows.push_back({name, backoff, false});
  }
  rows.push_back({"default", true, true});
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  printf(
      "# oversubscription: %d pool processes x %d workers, %d hogs, %ld "
      "CPUs, %d s per row, median of %d\n\n",
      processes, workers, hogs, cpus, seconds, runs);
  printf(
      "| governor | back-off | round trips/s | vs block, same back-off | "
      "max level | times backed off | samples |\n");
  printf("| --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
  // Each run measures every row once, so a drift of the machine over the
  // minutes the table takes spreads over all rows instead of a few.
  std::vector<std::vector<RowResult>> runs_of_row(rows.size());
  for (int i = 0; i < runs; ++i) {
    for (size_t j = 0; j < rows.size(); ++j) {
      runs_of_row[j].push_back(
          RunOnce(rows[j], processes, hogs, workers, seconds));
    }
  }
  std::vector<RowResult> results;
  for (std::vector<RowResult>& r : runs_of_row) {
    std::sort(r.begin(), r.end(), [](const RowResult& a, const RowResult& b) {
      return a.round_trips_per_s < b.round_trips_per_s;
    });
    results.push_back(r[r.size() / 2]);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    const RowResult& r = results[i];
    // The block row with the same back-off setting: rows 0 (on), 1 (off).
    const double block = results[row.backoff ? 0 : 1].round_trips_per_s;
    const std::string name =
        row.idle ? absl::StrFormat("%s, idle (1 process, no hogs)", row.name)
                 : row.name;
    absl::PrintF("| %s | %s | %.0f | %s | %d | %u | %u |\n", name,
                 row.backoff ? "on" : "off", r.round_trips_per_s,
                 row.idle
                     ? std::string("-")
                     : absl::StrFormat("%.2f", r.round_trips_per_s / block),
                 r.max_level, r.backed_off, r.samples);
  }
  absl::PrintF("\nBack-off at the end, first pool process of each row:\n");
  for (size_t i = 0; i < rows.size(); ++i) {
    absl::PrintF("  %s%s, back-off %s: %s\n", rows[i].name,
                 rows[i].idle ? " (idle)" : "", rows[i].backoff ? "on" : "off",
                 results[i].backoff);
  }
  return 0;
}

}  // namespace
}  // namespace haltpool::bench

int main(int argc, char** argv) { return haltpool::bench::Main(argc, argv); }
