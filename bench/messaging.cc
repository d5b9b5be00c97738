// bench/messaging: perf bench sched messaging (hackbench) through the pool.
//
// G groups, each of S senders and R receivers; every sender sends L small
// messages to every receiver of its group (G*S*R*L messages in all, as
// hackbench). Senders and receivers are pool tasks and none blocks: a
// sender task sends one round (a message to each receiver) and resubmits
// itself; a receiver has a mailbox, and a delivery that finds it not
// scheduled submits its drain task. Every task is counted in a TaskGroup;
// when the group is done the messages the receivers read must number
// G*S*R*L, else the program exits 1.
//
// A pool is made for each governor in turn, with the same worker count, and
// the whole set is repeated --runs times interleaved so that drift in the
// machine hits every governor alike; the table gives the median run. Per
// governor: messages per second and the pool's CPU time (the process's
// getrusage less the --hogs threads), and the default governor's throughput
// against `block` and `poll`.
//
// Oversubscribed means at least four workers per usable CPU (hackbench's
// point: far more runnable threads than CPUs); --hogs adds spinning threads
// outside the pool so the CPUs are contended from outside too.
//
// Usage: messaging [--groups=10] [--senders=20] [--receivers=20]
//   [--loops=100] [--size=100] [--workers=N] [--hogs=0] [--runs=5]
//   [--governors=a,b]

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "arch/cycle_clock.h"
#include "bench/command_line.h"
#include "runtime/config.h"
#include "runtime/environment.h"
#include "runtime/thread_pool.h"

using haltpool::bench::GovernorList;
using haltpool::bench::IntIn;
// ABSL_FLAG's type cannot hold a comma: the ranges are named here.
using Count = IntIn<1, 1000>;
using Loops = IntIn<1, 1000000>;
using MessageBytes = IntIn<1, 4096>;  // kMaxMessageBytes below.
using Workers = IntIn<0, 4096>;
using HogCount = IntIn<0, 256>;

ABSL_FLAG(Count, groups, 10, "groups (hackbench -g)");
ABSL_FLAG(Count, senders, 20, "senders per group (hackbench -f)");
ABSL_FLAG(Count, receivers, 20, "receivers per group (hackbench -f)");
ABSL_FLAG(Loops, loops, 100, "messages each sender sends each receiver");
ABSL_FLAG(MessageBytes, size, 100, "bytes per message (hackbench's)");
ABSL_FLAG(Workers, workers, 0, "pool workers; 0: one per usable CPU");
ABSL_FLAG(HogCount, hogs, 0, "spinning threads outside the pool");
ABSL_FLAG(Count, runs, 5, "runs of every governor; the median is shown");
ABSL_FLAG(GovernorList, governors, {},
          "governors to run, comma-separated; empty: every one");

namespace haltpool::bench {
namespace {

// hackbench's largest message is its 100-byte default; 4 KiB leaves room.
constexpr int kMaxMessageBytes = 4096;

struct Sizes {
  int groups, senders, receivers, loops, size;
};

// One receiver: a mailbox of message bytes and whether its drain task is
// submitted.
struct Receiver {
  std::mutex mu;
  std::vector<char> mailbox;  // Concatenated messages; guarded by mu.
  std::atomic<bool> scheduled{false};
  uint64_t checksum = 0;  // Touches every byte, as a reader would.
};

// One sender: where it is. Only its own task touches it.
struct Sender {
  int group;
  int index;
  int round = 0;
};

struct Sample {
  double seconds;
  double cpu_seconds;
  uint64_t delivered;
};

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Threads that spin until destroyed, to contend for the CPUs from outside
// the pool. CpuSeconds() is their CPU time so far, to subtract from the
// process's.
class Hogs {
 public:
  explicit Hogs(int n) {
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this] {
        while (!stop_.load(std::memory_order_relaxed)) {
        }
      });
    }
  }
  ~Hogs() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
  }
  double CpuSeconds() {
    double sum = 0;
    for (std::thread& t : threads_) {
      clockid_t clock;
      timespec ts{};
      if (pthread_getcpuclockid(t.native_handle(), &clock) == 0 &&
          clock_gettime(clock, &ts) == 0) {
        sum += ts.tv_sec + ts.tv_nsec / 1e9;
      }
    }
    return sum;
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

class Messaging {
 public:
  Messaging(ThreadPool& pool, const Sizes& z)
      : pool_(pool),
        z_(z),
        receivers_(static_cast<size_t>(z.groups) * z.receivers) {
    for (int g = 0; g < z.groups; ++g) {
      for (int s = 0; s < z.senders; ++s) senders_.push_back({g, s});
    }
  }

  // Runs every sender to the end and returns when every task is done; the
  // caller is not one of the pool's workers.
  Sample Go(Hogs& hogs) {
    const double cpu0 = ProcessCpuSeconds() - hogs.CpuSeconds();
    const int64_t t0 = arch::MonotonicNowNs();
    for (Sender& s : senders_) Send(s);
    pool_.Wait(group_);
    const int64_t t1 = arch::MonotonicNowNs();
    return {(t1 - t0) / 1e9, ProcessCpuSeconds() - hogs.CpuSeconds() - cpu0,
            delivered_.load()};
  }

 private:
  // Submits one round of `s`: a message to each receiver of its group; the
  // task resubmits itself until the last round.
  void Send(Sender& s) {
    (void)pool_.Submit(group_, [this, sp = &s] {
      char message[kMaxMessageBytes];
      memset(message, 'a' + (sp->index + sp->round) % 26, z_.size);
      for (int r = 0; r < z_.receivers; ++r) {
        Receiver& rx =
            receivers_[static_cast<size_t>(sp->group) * z_.receivers + r];
        {
          std::lock_guard<std::mutex> lock(rx.mu);
          rx.mailbox.insert(rx.mailbox.end(), message, message + z_.size);
        }
        if (!rx.scheduled.exchange(true, std::memory_order_acq_rel)) {
          Drain(rx);
        }
      }
      if (++sp->round < z_.loops) Send(*sp);
    });
  }

  // Submits the drain task of `rx`, which reads every message in its
  // mailbox, then unschedules it and looks once more.
  void Drain(Receiver& rx) {
    (void)pool_.Submit(group_, [this, &rx] {
      std::vector<char> got;
      for (;;) {
        {
          std::lock_guard<std::mutex> lock(rx.mu);
          got.swap(rx.mailbox);
        }
        for (char c : got) rx.checksum += static_cast<unsigned char>(c);
        delivered_.fetch_add(got.size() / z_.size, std::memory_order_relaxed);
        got.clear();
        rx.scheduled.store(false, std::memory_order_release);
        std::lock_guard<std::mutex> lock(rx.mu);
        if (rx.mailbox.empty() ||
            rx.scheduled.exchange(true, std::memory_order_acq_rel)) {
          return;
        }
      }
    });
  }

  ThreadPool& pool_;
  const Sizes z_;
  std::vector<Receiver> receivers_;
  std::vector<Sender> senders_;
  TaskGroup group_;
  std::atomic<uint64_t> delivered_{0};
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Main(int argc, char** argv) {
  ParseCommandLineOrExit(argc, argv, "usage: messaging [flags]");
  auto flag = [](const auto& f) {
    return static_cast<int>(absl::GetFlag(f).value);
  };
  const Sizes z{flag(FLAGS_groups), flag(FLAGS_senders), flag(FLAGS_receivers),
                flag(FLAGS_loops), flag(FLAGS_size)};
  // The default governor comes from the environment like any haltpool
  // user's; each row sets its own governor on top of it.
  const Config config = ConfigFromEnvironmentOrExit();
  const uint64_t expected =
      static_cast<uint64_t>(z.groups) * z.senders * z.receivers * z.loops;

  std::vector<std::string> names = {"default"};
  for (const std::string& g : GovernorsOrAll(absl::GetFlag(FLAGS_governors))) {
    names.push_back(g);
  }
  std::vector<std::vector<Sample>> samples(names.size());
  int workers = 0;
  int status = 0;
  Hogs hogs(flag(FLAGS_hogs));
  for (int run = 0; run < flag(FLAGS_runs); ++run) {
    for (size_t i = 0; i < names.size(); ++i) {
      PoolOptions o;
      o.workers = flag(FLAGS_workers);
      if (names[i] != "default") o.idle.governor = names[i];
      Config c = config;
      if (absl::Status s = ApplyCodeOptions(o, c); !s.ok()) {
        absl::FPrintF(stderr, "messaging: %s\n", s.message());
        return 2;
      }
      absl::StatusOr<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create(c);
      if (!pool.ok()) {
        absl::FPrintF(stderr, "messaging: %s\n", pool.status().message());
        return 2;
      }
      workers = (*pool)->size();
      const Sample s = Messaging(**pool, z).Go(hogs);
      pool->reset();
      samples[i].push_back(s);
      if (s.delivered != expected) {
        absl::FPrintF(stderr, "messaging: %s delivered %llu of %llu messages\n",
                      names[i], static_cast<unsigned long long>(s.delivered),
                      static_cast<unsigned long long>(expected));
        status = 1;
      }
    }
  }

  printf(
      "# messaging: %d groups x %d senders x %d receivers x %d loops, %d "
      "bytes; %d workers, %d hogs; median of %d runs\n\n",
      z.groups, z.senders, z.receivers, z.loops, z.size, workers,
      flag(FLAGS_hogs), flag(FLAGS_runs));
  printf("| governor | workers | messages | seconds | messages/s | CPU s |\n");
  printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
  std::vector<double> rate(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<double> secs, cpu;
    for (const Sample& s : samples[i]) {
      secs.push_back(s.seconds);
      cpu.push_back(s.cpu_seconds);
    }
    const double seconds = Median(secs);
    rate[i] = expected / seconds;
    const std::string label =
        names[i] == "default"
            ? absl::StrFormat("default (%s)", config.pool.idle.governor)
            : names[i];
    absl::PrintF("| %s | %d | %llu | %.4f | %.0f | %.3f |\n", label, workers,
                 static_cast<unsigned long long>(samples[i].back().delivered),
                 seconds, rate[i], Median(cpu));
  }
  printf("\n");
  for (const char* peer : {"block", "poll"}) {
    for (size_t i = 1; i < names.size(); ++i) {
      if (names[i] == peer) {
        printf("default / %s throughput: %.3f\n", peer, rate[0] / rate[i]);
      }
    }
  }
  return status;
}

}  // namespace
}  // namespace haltpool::bench

int main(int argc, char** argv) { return haltpool::bench::Main(argc, argv); }
