#include "idle/calibration.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "arch/cpu_wait.h"
#include "arch/cycle_clock.h"
#include "arch/futex.h"

namespace haltpool::idle {
namespace {

// The first two CPUs of the caller's affinity mask; fewer if it has fewer.
std::vector<int> TwoCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// Pins the calling thread to `cpu`; a refusal leaves it unpinned (the
// measurement is then of wherever the scheduler puts it).
void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// One side of a ping-pong: a word the other side flips and this side
// waits on, by blocking in FUTEX_WAIT or by polling.
struct Side {
  std::atomic<uint32_t> turn{0};  // Bumped by the other side.
};

// Waits until `side.turn` moves past `seen`, blocking or polling; false if
// kCalibrationStallNs passed first.
bool Await(const Side& side, uint32_t seen, bool block) {
  const int64_t deadline = arch::MonotonicNowNs() + kCalibrationStallNs;
  while (side.turn.load(std::memory_order_acquire) == seen) {
    if (arch::MonotonicNowNs() >= deadline) return false;
    if (block) {
      arch::FutexWaitUntil(side.turn, seen, deadline,
                           arch::FutexScope::kPrivate);
    } else {
      arch::CpuRelax();
    }
  }
  return true;
}

void Hand(Side& side, bool block) {
  side.turn.fetch_add(1, std::memory_order_release);
  if (block) arch::FutexWake(side.turn, 1, arch::FutexScope::kPrivate);
}

// Ping-pong between two new threads, on `cpus[0]` and `cpus[1]` when
// given, that block (FUTEX_WAIT / FUTEX_WAKE, the block state's path) or
// poll (the poll state's): the median one-way wake in ns, or 0 if a round
// trip stalled. On two CPUs a blocked side's wake crosses CPUs, as a worker
// woken by a submitter elsewhere: under a hypervisor, an IPI to a halted
// vCPU and a VM exit.
int64_t PingPong(bool block, int round_trips, const std::vector<int>& cpus) {
  Side ping;
  Side pong;
  std::atomic<bool> ready{false};  // The responder is at its first wait.
  std::thread responder([&] {
    if (cpus.size() == 2) PinTo(cpus[1]);
    ready.store(true, std::memory_order_release);
    for (int i = 0; i < round_trips; ++i) {
      if (!Await(pong, static_cast<uint32_t>(i), block)) return;
      Hand(ping, block);
    }
  });
  std::vector<int64_t> trips;
  trips.reserve(round_trips);
  std::thread initiator([&] {
    if (cpus.size() == 2) PinTo(cpus[0]);
    // Thread start-up is not a wake: time only round trips.
    while (!ready.load(std::memory_order_acquire)) std::this_thread::yield();
    for (int i = 0; i < round_trips; ++i) {
      const int64_t start = arch::MonotonicNowNs();
      Hand(pong, block);
      if (!Await(ping, static_cast<uint32_t>(i), block)) break;
      trips.push_back(arch::MonotonicNowNs() - start);
    }
  });
  initiator.join();
  responder.join();  // It gives up by itself after a stall.
  if (trips.size() != static_cast<size_t>(round_trips)) return 0;
  std::nth_element(trips.begin(), trips.begin() + trips.size() / 2,
                   trips.end());
  return trips[trips.size() / 2] / 2;
}

}  // namespace

Calibration Calibrate() {
  Calibration c;
  const int64_t start = arch::MonotonicNowNs();
  const std::string stalled = absl::StrCat(
      ": a round trip took over ", kCalibrationStallNs / 1000000, " ms");
  const std::vector<int> cpus = TwoCpus();
  c.cross_cpu = cpus.size() == 2;
  c.block_wake_ns = PingPong(/*block=*/true, kCalibrationBlockRoundTrips, cpus);
  c.round_trips = kCalibrationBlockRoundTrips;
  if (c.block_wake_ns == 0) c.note = absl::StrCat("block", stalled);
  if (!c.cross_cpu) {
    if (c.note.empty()) c.note = "poll: not measured with one CPU";
  } else {
    c.poll_wake_ns =
        PingPong(/*block=*/false, kCalibrationPollRoundTrips, cpus);
    if (c.poll_wake_ns == 0 && c.note.empty()) {
      c.note = absl::StrCat("poll", stalled);
    }
  }
  c.measured = c.block_wake_ns > 0;
  c.took_ns = arch::MonotonicNowNs() - start;
  return c;
}

const Calibration& ProcessCalibration() {
  static const Calibration kCalibration = Calibrate();
  return kCalibration;
}

}  // namespace haltpool::idle
