#include "idle/calibration.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "arch/cpu_wait.h"
#include "arch/cycle_clock.h"
#include "arch/futex.h"
#include "arch/thread_affinity.h"
#include "arch/timer_slack.h"

namespace haltpool::idle {
namespace {

// The first two CPUs of the caller's affinity mask; fewer if it has fewer.
std::vector<int> TwoCpus() {
  std::vector<int> cpus = arch::ThreadCpus();
  if (cpus.size() > 2) cpus.resize(2);
  return cpus;
}

// One side of a ping-pong: a word the other side flips and this side
// waits on, by blocking in FUTEX_WAIT or by polling.
struct Side {
  std::atomic<uint32_t> turn{0};  // Bumped by the other side.
};

// How an Await ended.
enum class Awaited {
  kStalled,  // kCalibrationStallNs passed first.
  kSeen,     // The turn moved before the waiter slept (or it polled).
  kWoken,    // The waiter slept in FUTEX_WAIT and a FUTEX_WAKE woke it.
};

// Waits until `side.turn` moves past `seen`, blocking or polling.
Awaited Await(const Side& side, uint32_t seen, bool block) {
  const int64_t deadline = arch::MonotonicNowNs() + kCalibrationStallNs;
  bool slept = false;
  while (side.turn.load(std::memory_order_acquire) == seen) {
    if (arch::MonotonicNowNs() >= deadline) return Awaited::kStalled;
    if (block) {
      slept = arch::FutexWaitUntil(side.turn, seen, deadline,
                                   arch::FutexScope::kPrivate) ==
              arch::FutexWaitResult::kWoken;
    } else {
      arch::CpuRelax();
    }
  }
  return slept ? Awaited::kWoken : Awaited::kSeen;
}

void Hand(Side& side, bool block) {
  side.turn.fetch_add(1, std::memory_order_release);
  if (block) arch::FutexWake(side.turn, 1, arch::FutexScope::kPrivate);
}

// Before each hand-over of the block measurement, the handing side waits
// this long so that the other side is asleep in FUTEX_WAIT when the wake
// comes: its way back from its own FUTEX_WAKE into FUTEX_WAIT takes a few
// us on a 2-vCPU KVM guest. Without it the two sides can fall into a lock
// step in which each finds its turn already moved, neither ever sleeps, and
// the "block wake" measured is a system call (0.7 us there, against 11 us
// for a real one).
constexpr int64_t kSettleNs = 30000;

void Settle() {
  const int64_t until = arch::MonotonicNowNs() + kSettleNs;
  while (arch::MonotonicNowNs() < until) arch::CpuRelax();
}

// Runs `initiator` and `responder` on two new threads, pinned to `cpus[0]`
// and `cpus[1]` when given, the responder started first. A refused pin
// leaves a thread where the scheduler puts it, and that is then measured.
template <typename Initiator, typename Responder>
void OnTwoThreads(const std::vector<int>& cpus, Initiator&& initiator,
                  Responder&& responder) {
  std::atomic<bool> ready{false};  // The responder is at its first wait.
  std::thread r([&] {
    if (cpus.size() == 2) (void)arch::SetThreadCpus({cpus[1]});
    ready.store(true, std::memory_order_release);
    responder();
  });
  std::thread i([&] {
    if (cpus.size() == 2) (void)arch::SetThreadCpus({cpus[0]});
    // Thread start-up is not a wake.
    while (!ready.load(std::memory_order_acquire)) std::this_thread::yield();
    initiator();
  });
  i.join();
  r.join();  // It gives up by itself after a stall.
}

int64_t Median(std::vector<int64_t>& v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// The block state's one-way wake, as a worker's: `round_trips` times, one
// side sleeps in FUTEX_WAIT and the other, after kSettleNs, stamps the time
// and wakes it (FUTEX_WAKE); the woken side takes the time it took, and
// after kSettleNs wakes the first side the same way. On two CPUs each wake
// crosses CPUs: under a hypervisor, an IPI to a halted vCPU and a VM exit.
// Only wakes of a side that really slept count. The median in ns; 0 if a
// wake stalled or fewer than half the wakes found their side asleep.
int64_t BlockWake(int round_trips, const std::vector<int>& cpus) {
  Side ping;
  Side pong;
  std::atomic<int64_t> stamp{0};  // When the last hand-over began.
  std::vector<int64_t> wakes[2];  // Of the initiator, of the responder.
  std::atomic<bool> stalled{false};
  auto side = [&](Side& mine, Side& theirs, std::vector<int64_t>& out,
                  bool first) {
    for (int i = 0; i < round_trips; ++i) {
      if (first) {
        Settle();
        stamp.store(arch::MonotonicNowNs(), std::memory_order_relaxed);
        Hand(theirs, /*block=*/true);
      }
      const Awaited a = Await(mine, static_cast<uint32_t>(i), /*block=*/true);
      if (a == Awaited::kStalled) {
        stalled.store(true, std::memory_order_relaxed);
        return;
      }
      const int64_t now = arch::MonotonicNowNs();
      if (a == Awaited::kWoken) {
        out.push_back(now - stamp.load(std::memory_order_relaxed));
      }
      if (!first) {
        Settle();
        stamp.store(arch::MonotonicNowNs(), std::memory_order_relaxed);
        Hand(theirs, /*block=*/true);
      }
    }
  };
  OnTwoThreads(
      cpus, [&] { side(ping, pong, wakes[0], /*first=*/true); },
      [&] { side(pong, ping, wakes[1], /*first=*/false); });
  std::vector<int64_t> all = wakes[0];
  all.insert(all.end(), wakes[1].begin(), wakes[1].end());
  if (stalled.load() || all.size() < static_cast<size_t>(round_trips)) return 0;
  return Median(all);
}

// The poll state's one-way wake: half the median round trip of two sides
// that poll for their turn; 0 if a round trip stalled.
int64_t PollWake(int round_trips, const std::vector<int>& cpus) {
  Side ping;
  Side pong;
  std::vector<int64_t> trips;
  trips.reserve(round_trips);
  OnTwoThreads(
      cpus,
      [&] {
        for (int i = 0; i < round_trips; ++i) {
          const int64_t start = arch::MonotonicNowNs();
          Hand(pong, /*block=*/false);
          if (Await(ping, static_cast<uint32_t>(i), /*block=*/false) ==
              Awaited::kStalled) {
            return;
          }
          trips.push_back(arch::MonotonicNowNs() - start);
        }
      },
      [&] {
        for (int i = 0; i < round_trips; ++i) {
          if (Await(pong, static_cast<uint32_t>(i), /*block=*/false) ==
              Awaited::kStalled) {
            return;
          }
          Hand(ping, /*block=*/false);
        }
      });
  if (trips.size() != static_cast<size_t>(round_trips)) return 0;
  return Median(trips) / 2;
}

// How late a timed block ends: `waits` times, a FUTEX_WAIT that nobody
// wakes until now + `wait_ns`, on a new thread with a worker's timer slack,
// pinned to the last of `cpus` (the block measurement's responder's CPU),
// so its CPU halts while it waits as an idle worker's does. The 90th
// percentile of the lateness in ns, as the predictive governor takes its
// margin. A wait that ends early (a signal) waits again until its deadline.
int64_t TimedWaitLateness(int waits, int64_t wait_ns,
                          const std::vector<int>& cpus) {
  std::vector<int64_t> late;
  late.reserve(waits);
  std::thread t([&] {
    if (!cpus.empty()) (void)arch::SetThreadCpus({cpus.back()});
    // A refused slack leaves the thread's own, and that is then measured.
    (void)arch::SetThreadTimerSlackNs(kTimedBlockSlackNs);
    const std::atomic<uint32_t> never{0};
    for (int i = 0; i < waits; ++i) {
      const int64_t deadline = arch::MonotonicNowNs() + wait_ns;
      while (arch::MonotonicNowNs() < deadline) {
        (void)arch::FutexWaitUntil(never, 0, deadline,
                                   arch::FutexScope::kPrivate);
      }
      late.push_back(arch::MonotonicNowNs() - deadline);
    }
  });
  t.join();
  std::sort(late.begin(), late.end());
  return late[(late.size() * 9 + 9) / 10 - 1];
}

}  // namespace

Calibration Calibrate() {
  Calibration c;
  const int64_t start = arch::MonotonicNowNs();
  const std::string stalled = absl::StrCat(
      ": a round trip took over ", kCalibrationStallNs / 1000000, " ms");
  const std::vector<int> cpus = TwoCpus();
  c.cross_cpu = cpus.size() == 2;
  c.block_wake_ns = BlockWake(kCalibrationBlockRoundTrips, cpus);
  c.round_trips = kCalibrationBlockRoundTrips;
  if (c.block_wake_ns == 0) {
    c.note =
        absl::StrCat("block: a wake took over ", kCalibrationStallNs / 1000000,
                     " ms, or under half the wakes found their side asleep");
  }
  if (!c.cross_cpu) {
    if (c.note.empty()) c.note = "poll: not measured with one CPU";
  } else {
    c.poll_wake_ns = PollWake(kCalibrationPollRoundTrips, cpus);
    if (c.poll_wake_ns == 0 && c.note.empty()) {
      c.note = absl::StrCat("poll", stalled);
    }
  }
  c.timed_wait_late_ns =
      TimedWaitLateness(kCalibrationTimedWaits, kCalibrationTimedWaitNs, cpus);
  c.measured = c.block_wake_ns > 0;
  c.took_ns = arch::MonotonicNowNs() - start;
  return c;
}

const Calibration& ProcessCalibration() {
  static const Calibration kCalibration = Calibrate();
  return kCalibration;
}

}  // namespace haltpool::idle
