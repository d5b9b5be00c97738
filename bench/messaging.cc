// bench/messaging: perf bench sched messaging (hackbench) through the pool.
//
// G groups, each of S senders and R receivers; every sender sends L small
// messages to every receiver of its group. Senders and receivers are pool
// tasks and none blocks: a sender task sends one round (a message to each
// receiver) and resubmits itself; a receiver has a mailbox, and a delivery
// that finds it not scheduled submits its drain task. The pool is made
// once per governor, with the same worker count, in one run: messages per
// second and the process's CPU time for each, and the default governor's
// throughput against `block` and `poll`.
//
// Oversubscribed means at least four workers per usable CPU (hackbench's
// point: far more runnable threads than CPUs); --hogs adds spinning threads
// outside the pool to contend for the CPUs too.
//
// Usage: messaging [--groups=10] [--senders=20] [--receivers=20]
//   [--loops=100] [--size=100] [--workers=N] [--hogs=0] [--governors=a,b]

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "arch/cycle_clock.h"
#include "bench/bench_flags.h"
#include "runtime/config.h"
#include "runtime/environment.h"
#include "runtime/thread_pool.h"

namespace haltpool::bench {
namespace {

struct Sizes {
  int groups, senders, receivers, loops, size;
};

// One receiver: a mailbox of message bytes and whether its drain task is
// submitted.
struct Receiver {
  std::mutex mu;
  std::vector<char> mailbox;  // Concatenated messages.
  std::atomic<bool> scheduled{false};
  uint64_t checksum = 0;  // Touches every byte, as a reader would.
};

struct Run {
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

class Messaging {
 public:
  Messaging(ThreadPool& pool, const Sizes& z)
      : pool_(pool),
        z_(z),
        receivers_(static_cast<size_t>(z.groups) * z.receivers),
        expected_(static_cast<uint64_t>(z.groups) * z.senders * z.receivers *
                  z.loops) {}

  Run Go() {
    const double cpu0 = ProcessCpuSeconds();
    const int64_t t0 = arch::MonotonicNowNs();
    for (int g = 0; g < z_.groups; ++g) {
      for (int s = 0; s < z_.senders; ++s) Send(g, s, 0);
    }
    {
      std::unique_lock<std::mutex> lock(done_mu_);
      done_cv_.wait(lock, [&] { return done_; });
    }
    const int64_t t1 = arch::MonotonicNowNs();
    return {(t1 - t0) / 1e9, ProcessCpuSeconds() - cpu0, delivered_.load()};
  }

 private:
  // One round of sender `s` of group `g`: a message to each receiver.
  void Send(int g, int s, int round) {
    (void)pool_.Submit([this, g, s, round] {
      char message[4096];
      memset(message, 'a' + (s + round) % 26, z_.size);
      for (int r = 0; r < z_.receivers; ++r) {
        Receiver& rx = receivers_[static_cast<size_t>(g) * z_.receivers + r];
        {
          std::lock_guard<std::mutex> lock(rx.mu);
          rx.mailbox.insert(rx.mailbox.end(), message, message + z_.size);
        }
        if (!rx.scheduled.exchange(true, std::memory_order_acq_rel)) {
          Drain(rx);
        }
      }
      if (round + 1 < z_.loops) Send(g, s, round + 1);
    });
  }

  // Submits the drain task of `rx`, which reads every message in its
  // mailbox, then unschedules it and looks once more.
  void Drain(Receiver& rx) {
    (void)pool_.Submit([this, &rx] {
      std::vector<char> got;
      for (;;) {
        {
          std::lock_guard<std::mutex> lock(rx.mu);
          got.swap(rx.mailbox);
        }
        for (char c : got) rx.checksum += static_cast<unsigned char>(c);
        Delivered(got.size() / z_.size);
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

  void Delivered(uint64_t n) {
    if (n == 0) return;
    if (delivered_.fetch_add(n, std::memory_order_acq_rel) + n == expected_) {
      std::lock_guard<std::mutex> lock(done_mu_);
      done_ = true;
      done_cv_.notify_one();
    }
  }

  ThreadPool& pool_;
  const Sizes z_;
  std::vector<Receiver> receivers_;
  const uint64_t expected_;
  std::atomic<uint64_t> delivered_{0};
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  bool done_ = false;
};

int Main(int argc, char** argv) {
  BenchFlags defaults;
  defaults.ints = {
      {"groups", {10, 1, 1000, "groups (hackbench -g)"}},
      {"senders", {20, 1, 1000, "senders per group (hackbench -f)"}},
      {"receivers", {20, 1, 1000, "receivers per group (hackbench -f)"}},
      {"loops", {100, 1, 1000000, "messages each sender sends each receiver"}},
      {"size", {100, 1, 4096, "bytes per message (hackbench's 100)"}},
      {"workers", {0, 0, 4096, "pool workers; 0: one per usable CPU"}},
      {"hogs", {0, 0, 256, "spinning threads outside the pool"}},
  };
  absl::StatusOr<BenchFlags> flags = ParseBenchFlags(defaults, argc - 1, argv + 1);
  if (!flags.ok()) {
    fprintf(stderr, "messaging: %s\n%s", std::string(flags.status().message()).c_str(),
            BenchUsage("messaging", defaults).c_str());
    return 2;
  }
  if (flags->help) {
    fputs(BenchUsage("messaging", defaults).c_str(), stdout);
    return 0;
  }
  auto flag = [&](const char* name) {
    return static_cast<int>(flags->ints.at(name).value);
  };
  const Sizes z{flag("groups"), flag("senders"), flag("receivers"),
                flag("loops"), flag("size")};
  const Config config = ConfigFromEnvironmentOrExit();
  const uint64_t expected =
      static_cast<uint64_t>(z.groups) * z.senders * z.receivers * z.loops;

  std::atomic<bool> stop_hogs{false};
  std::vector<std::thread> hogs;
  for (int i = 0; i < flag("hogs"); ++i) {
    hogs.emplace_back([&] {
      while (!stop_hogs.load(std::memory_order_relaxed)) {
      }
    });
  }

  std::vector<std::string> names = {"default"};
  for (const std::string& g : flags->governors) names.push_back(g);
  std::vector<double> rate(names.size());
  int workers = 0;
  printf("# messaging: %d groups x %d senders x %d receivers x %d loops, %d "
         "bytes; %d hogs\n\n",
         z.groups, z.senders, z.receivers, z.loops, z.size, flag("hogs"));
  printf("| governor | workers | messages | seconds | messages/s | CPU s |\n");
  printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
  int status = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    PoolOptions o = config.pool;
    o.workers = flag("workers");
    if (names[i] != "default") o.idle.governor = names[i];
    absl::StatusOr<std::unique_ptr<ThreadPool>> pool =
        ThreadPool::Create(o, MapEnvironment());
    if (!pool.ok()) {
      fprintf(stderr, "messaging: %s\n",
              std::string(pool.status().message()).c_str());
      return 2;
    }
    workers = (*pool)->size();
    Messaging m(**pool, z);
    const Run r = m.Go();
    pool->reset();
    rate[i] = r.delivered / r.seconds;
    const std::string label =
        names[i] == "default"
            ? absl::StrFormat("default (%s)", config.pool.idle.governor)
            : names[i];
    printf("| %s | %d | %llu | %.3f | %.0f | %.2f |\n", label.c_str(), workers,
           static_cast<unsigned long long>(r.delivered), r.seconds, rate[i],
           r.cpu_seconds);
    fflush(stdout);
    if (r.delivered != expected) {
      fprintf(stderr, "messaging: %s delivered %llu of %llu messages\n",
              names[i].c_str(), static_cast<unsigned long long>(r.delivered),
              static_cast<unsigned long long>(expected));
      status = 1;
    }
  }
  stop_hogs = true;
  for (std::thread& t : hogs) t.join();
  for (const char* peer : {"block", "poll"}) {
    for (size_t i = 1; i < names.size(); ++i) {
      if (names[i] == peer) {
        printf("\ndefault / %s throughput: %.3f", peer, rate[0] / rate[i]);
      }
    }
  }
  printf("\n");
  return status;
}

}  // namespace
}  // namespace haltpool::bench

int main(int argc, char** argv) { return haltpool::bench::Main(argc, argv); }
