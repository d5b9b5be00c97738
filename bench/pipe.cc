// bench/pipe: perf bench sched pipe in user space.
//
// Two sides ping-pong a message `loops` times, as perf's sched/pipe: side 1
// writes then reads, side 0 reads then writes. The reader idles under the
// haltpool governor from HALTPOOL_* variables; with --transport=parker the
// message travels in a shared-memory ring and wakes go through the parker.
// Prints perf's lines, then the CPU both sides used and, with --gap-us, the
// wake latency of the side that waited out the gap.

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/cycle_clock.h"
#include "bench/endpoint.h"
#include "bench/pipe_args.h"
#include "runtime/config.h"

namespace haltpool::bench {
namespace {

constexpr int kEchoSide = 0;       // perf's td->nr == 0: read, then write.
constexpr int kInitiatorSide = 1;  // perf's td->nr == 1: write, then read.

// Wake latencies kept for percentiles (the first this many ops); the mean
// covers every op.
constexpr int64_t kMaxLatencySamples = 1 << 20;

// What each side reports back; lives in MAP_SHARED memory for processes.
struct SideResult {
  int64_t cpu_ns = 0;
  int64_t latency_sum_ns = 0;
  int64_t latency_count = 0;
  int64_t latency_p50_ns = 0;
  int64_t latency_p99_ns = 0;
  std::atomic<bool> finished{false};  // The side's loop is over.
  bool failed = false;
  char text[16384] = {};  // The error, or the formatted statistics.
};

struct Links {
  Transport transport;
  PipeLink pipes;
  RingLink rings;
};

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void BusyFor(int64_t ns) {
  const int64_t until = arch::MonotonicNowNs() + ns;
  while (arch::MonotonicNowNs() < until) {
  }
}

void Put(SideResult& r, const std::string& s) {
  snprintf(r.text, sizeof r.text, "%s", s.c_str());
}

void RunSide(int side, const PipeArgs& args, const Links& links,
             const idle::IdleOptions& options, SideResult& result,
             const SideResult& peer) {
  absl::StatusOr<std::unique_ptr<Endpoint>> ep =
      links.transport == Transport::kPipe
          ? MakePipeEndpoint(links.pipes, side, options)
          : MakeRingEndpoint(links.rings, side, options);
  if (!ep.ok()) {
    result.failed = true;
    result.finished.store(true, std::memory_order_release);
    Put(result, std::string(ep.status().message()));
    return;
  }
  Endpoint& e = **ep;
  const int64_t cpu0 = ThreadCpuNs();
  if (side == kInitiatorSide) {
    for (int64_t i = 0; i < args.loops; ++i) {
      if (args.gap_us > 0) BusyFor(args.gap_us * 1000);
      e.Send(static_cast<uint64_t>(arch::MonotonicNowNs()));
      e.Receive();
    }
  } else {
    std::vector<int64_t> samples;
    if (args.gap_us > 0)
      samples.reserve(std::min(args.loops, kMaxLatencySamples));
    for (int64_t i = 0; i < args.loops; ++i) {
      const uint64_t sent = e.Receive();
      const int64_t latency =
          arch::MonotonicNowNs() - static_cast<int64_t>(sent);
      result.latency_sum_ns += latency;
      ++result.latency_count;
      if (samples.size() < samples.capacity()) samples.push_back(latency);
      e.Send(sent);
    }
    if (!samples.empty()) {
      std::sort(samples.begin(), samples.end());
      result.latency_p50_ns = samples[samples.size() / 2];
      result.latency_p99_ns = samples[samples.size() * 99 / 100];
    }
  }
  result.cpu_ns = ThreadCpuNs() - cpu0;
  result.finished.store(true, std::memory_order_release);
  if (args.stats != StatsFormat::kNone) {
    // The peer's last Unpark to this side may still be counting its wake:
    // wait until the peer is done too, so the counts are complete.
    while (!peer.finished.load(std::memory_order_acquire)) sched_yield();
    const idle::IdleStats st = e.Stats(
        side == kEchoSide ? "side 0 (reads first)" : "side 1 (writes first)");
    Put(result, args.stats == StatsFormat::kJson ? idle::FormatJson(st) + "\n"
                                                 : idle::FormatCpupower(st));
  }
}

int Run(const PipeArgs& args, const Config& config) {
  Links links{args.transport, {}, {}};
  if (args.transport == Transport::kPipe) {
    absl::StatusOr<PipeLink> p = OpenPipeLink();
    if (!p.ok()) {
      absl::FPrintF(stderr, "pipe: %s\n", p.status().message());
      return 1;
    }
    links.pipes = *p;
  } else {
    absl::StatusOr<RingLink> r = OpenRingLink(!args.threaded);
    if (!r.ok()) {
      absl::FPrintF(stderr, "pipe: %s\n", r.status().message());
      return 1;
    }
    links.rings = *r;
  }
  void* mem = mmap(nullptr, 2 * sizeof(SideResult), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  SideResult* results = new (mem) SideResult[2];

  printf("# Running 'sched/pipe' benchmark:\n");
  fflush(stdout);
  const int64_t start = arch::MonotonicNowNs();
  if (args.threaded) {
    std::thread t0([&] {
      RunSide(kEchoSide, args, links, config.pool.idle, results[0], results[1]);
    });
    std::thread t1([&] {
      RunSide(kInitiatorSide, args, links, config.pool.idle, results[1],
              results[0]);
    });
    t0.join();
    t1.join();
  } else {
    pid_t pids[2];
    for (int side = 0; side < 2; ++side) {
      pids[side] = fork();
      if (pids[side] < 0) {
        perror("fork");
        return 1;
      }
      if (pids[side] == 0) {
        RunSide(side, args, links, config.pool.idle, results[side],
                results[1 - side]);
        _exit(results[side].failed ? 1 : 0);
      }
    }
    for (pid_t pid : pids) {
      int status = 0;
      waitpid(pid, &status, 0);
    }
  }
  const int64_t elapsed_ns = arch::MonotonicNowNs() - start;

  for (const SideResult* r : {&results[0], &results[1]}) {
    if (r->failed) {
      fprintf(stderr, "haltpool: %s\n", r->text);
      return 2;
    }
  }
  const int64_t usec = elapsed_ns / 1000;
  printf("# Executed %lld pipe operations between two %s\n\n",
         static_cast<long long>(args.loops),
         args.threaded ? "threads" : "processes");
  printf(" %14s: %lld.%03lld [sec]\n\n", "Total time",
         static_cast<long long>(usec / 1000000),
         static_cast<long long>(usec % 1000000 / 1000));
  printf(" %14lf usecs/op\n", static_cast<double>(usec) / args.loops);
  printf(" %14d ops/sec\n",
         static_cast<int>(args.loops / (static_cast<double>(usec) / 1e6)));
  const double cpu_us_per_op =
      static_cast<double>(results[0].cpu_ns + results[1].cpu_ns) / 1000.0 /
      args.loops;
  printf(" %14lf cpu usecs/op (both sides; side 0 %.3f, side 1 %.3f)\n",
         cpu_us_per_op, results[0].cpu_ns / 1000.0 / args.loops,
         results[1].cpu_ns / 1000.0 / args.loops);
  if (args.gap_us > 0) {
    const SideResult& w = results[kEchoSide];
    printf(" %14lf usecs mean wake latency (gap %lld us; p50 %.3f, p99 %.3f)\n",
           w.latency_count ? w.latency_sum_ns / 1000.0 / w.latency_count : 0.0,
           static_cast<long long>(args.gap_us), w.latency_p50_ns / 1000.0,
           w.latency_p99_ns / 1000.0);
    printf(" %14lf %% of a CPU used by the waiting side 0\n",
           100.0 * static_cast<double>(w.cpu_ns) /
               static_cast<double>(elapsed_ns));
  }
  absl::PrintF("# haltpool: transport=%s governor=%s\n",
               args.transport == Transport::kPipe ? "pipe" : "parker",
               config.pool.idle.governor);
  if (args.stats != StatsFormat::kNone) {
    printf("\n%s%s%s", results[0].text,
           args.stats == StatsFormat::kText ? "\n" : "", results[1].text);
  }
  return 0;
}

}  // namespace
}  // namespace haltpool::bench

int main(int argc, char** argv) {
  using haltpool::bench::ParsePipeArgs;
  using haltpool::bench::PipeUsage;
  absl::StatusOr<haltpool::bench::PipeArgs> args =
      ParsePipeArgs(argc - 1, argv + 1);
  if (!args.ok()) {
    absl::FPrintF(stderr, "  Error: %s\n%s", args.status().message(),
                  PipeUsage());
    return 129;  // perf's exit status for a usage error.
  }
  if (args->help) {
    absl::PrintF("%s", PipeUsage());
    return 0;
  }
  const haltpool::Config config = haltpool::ConfigFromEnvironmentOrExit();
  // Fail before any work if the wait mechanism cannot run here.
  haltpool::idle::WakeWord probe;
  if (absl::StatusOr<haltpool::idle::Parker> p =
          haltpool::idle::Parker::Create(probe, config.pool.idle);
      !p.ok()) {
    absl::FPrintF(stderr, "haltpool: %s\n", p.status().message());
    return 2;
  }
  return haltpool::bench::Run(*args, config);
}
