// bench/micro_park (Google Benchmark): the park/unpark round trip. Two
// threads ping-pong through two WakeWord/Parker pairs; one iteration is one
// round trip (two wakes). One row per wait mechanism (governor `poll`, so
// the mechanism is all that differs; a mechanism this CPU lacks is reported
// as an error row with the reason) and one per governor (the CPU's best
// mechanism). The native baselines do the same ping-pong through
// std::binary_semaphore, std::atomic<uint32_t>::wait/notify_one, and a
// pure spin on an atomic (the physical limit).
//
// ./bazelw run -c opt //bench:micro_park

#include <atomic>
#include <cstdint>
#include <semaphore>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "arch/wait_mechanism.h"
#include "bench/micro_main.h"
#include "benchmark/benchmark.h"
#include "idle/governor_registry.h"
#include "idle/idle_options.h"
#include "idle/parker.h"

namespace haltpool::bench {
namespace {

// Runs the benchmark loop as the pinging side of a ping-pong with a partner
// thread. Each iteration calls `ping()` (wake the partner) and
// `wait_pong()` (wait for its answer); the partner loops on `wait_ping()`
// and `pong()`. Afterwards the partner is pinged once more with `stop` set
// and joined. `ping` must release and `wait_ping` acquire, so the partner
// sees `stop`.
template <typename Ping, typename WaitPong, typename WaitPing, typename Pong>
void RunPingPong(benchmark::State& state, Ping ping, WaitPong wait_pong,
                 WaitPing wait_ping, Pong pong) {
  std::atomic<bool> stop{false};
  std::thread partner([&] {
    for (;;) {
      wait_ping();
      if (stop.load(std::memory_order_relaxed)) return;
      pong();
    }
  });
  for (auto _ : state) {
    ping();
    wait_pong();
  }
  stop.store(true, std::memory_order_relaxed);
  ping();
  partner.join();
}

// The round trip through two parkers idling under `options`.
void ParkRoundTrip(benchmark::State& state, const idle::IdleOptions& options) {
  idle::WakeWord to_main;
  idle::WakeWord to_partner;
  absl::StatusOr<idle::Parker> main_parker =
      idle::Parker::Create(to_main, options);
  absl::StatusOr<idle::Parker> partner_parker =
      idle::Parker::Create(to_partner, options);
  if (!main_parker.ok() || !partner_parker.ok()) {
    const absl::Status& s =
        main_parker.ok() ? partner_parker.status() : main_parker.status();
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  RunPingPong(
      state, [&] { to_partner.Unpark(); }, [&] { main_parker->Park(); },
      [&] { partner_parker->Park(); }, [&] { to_main.Unpark(); });
  // How the wakes found their waiter, as shares of all wakes (two a round
  // trip): asleep (FUTEX_WAKE), polling (a store), or not idle yet (a store:
  // the answer came before the waiter had entered its poll).
  const idle::WakeStats a = to_main.wake_stats();
  const idle::WakeStats b = to_partner.wake_stats();
  const double wakes = static_cast<double>(a.total() + b.total());
  if (wakes > 0) {
    state.counters["futex_pct"] = 100.0 * (a.syscall + b.syscall) / wakes;
    state.counters["polled_pct"] = 100.0 * (a.polling + b.polling) / wakes;
    state.counters["early_pct"] = 100.0 * (a.not_idle + b.not_idle) / wakes;
  }
  state.SetLabel(absl::StrCat(
      "round trip; governor=", options.governor,
      " wait=", arch::WaitMechanismName(main_parker->wait_mechanism())));
}

// The same ping-pong through two std::binary_semaphore.
void BM_BinarySemaphoreRoundTrip(benchmark::State& state) {
  std::binary_semaphore to_main{0};
  std::binary_semaphore to_partner{0};
  RunPingPong(
      state, [&] { to_partner.release(); }, [&] { to_main.acquire(); },
      [&] { to_partner.acquire(); }, [&] { to_main.release(); });
  state.SetLabel("round trip; std::binary_semaphore");
}

// Through two atomic sequence numbers with C++20 wait/notify_one.
void BM_AtomicWaitRoundTrip(benchmark::State& state) {
  std::atomic<uint32_t> to_main{0};
  std::atomic<uint32_t> to_partner{0};
  uint32_t sent = 0;  // Main's side.
  uint32_t seen = 0;  // The partner's side.
  RunPingPong(
      state,
      [&] {
        to_partner.store(++sent, std::memory_order_release);
        to_partner.notify_one();
      },
      [&] {
        for (uint32_t v; (v = to_main.load(std::memory_order_acquire)) != sent;)
          to_main.wait(v, std::memory_order_acquire);
      },
      [&] {
        uint32_t v;
        while ((v = to_partner.load(std::memory_order_acquire)) == seen) {
          to_partner.wait(seen, std::memory_order_acquire);
        }
        seen = v;
      },
      [&] {
        to_main.store(seen, std::memory_order_release);
        to_main.notify_one();
      });
  state.SetLabel("round trip; std::atomic<uint32_t>::wait/notify_one");
}

// Through two atomic sequence numbers, each side spinning on a plain load:
// two cache-line transfers per round trip, no instruction hint, no syscall.
void BM_SpinRoundTrip(benchmark::State& state) {
  std::atomic<uint32_t> to_main{0};
  std::atomic<uint32_t> to_partner{0};
  uint32_t sent = 0;
  uint32_t seen = 0;
  RunPingPong(
      state, [&] { to_partner.store(++sent, std::memory_order_release); },
      [&] {
        while (to_main.load(std::memory_order_acquire) != sent) {
        }
      },
      [&] {
        uint32_t v;
        while ((v = to_partner.load(std::memory_order_acquire)) == seen) {
        }
        seen = v;
      },
      [&] { to_main.store(seen, std::memory_order_release); });
  state.SetLabel("round trip; spin on an atomic (the limit)");
}

void RegisterAll() {
  // Every mechanism, whether or not this CPU has it: the ones it lacks show
  // up as error rows saying what is missing.
  for (arch::WaitMechanism m : arch::kAllWaitMechanisms) {
    idle::IdleOptions options;
    options.governor = "poll";
    options.wait = m;
    benchmark::RegisterBenchmark(
        absl::StrCat("BM_ParkRoundTrip/wait:", arch::WaitMechanismName(m))
            .c_str(),
        [options](benchmark::State& state) { ParkRoundTrip(state, options); })
        ->UseRealTime();
  }
  // Every governor the registry knows, with the CPU's best mechanism.
  for (absl::string_view name : absl::StrSplit(idle::GovernorNames(), '|')) {
    idle::IdleOptions options;
    options.governor = std::string(name);
    benchmark::RegisterBenchmark(
        absl::StrCat("BM_ParkRoundTrip/governor:", name).c_str(),
        [options](benchmark::State& state) { ParkRoundTrip(state, options); })
        ->UseRealTime();
  }
  // The native baselines, after the parker's rows.
  struct Baseline {
    const char* name;
    void (*fn)(benchmark::State&);
  };
  for (const Baseline& b : {
           Baseline{"BM_BinarySemaphoreRoundTrip", BM_BinarySemaphoreRoundTrip},
           Baseline{"BM_AtomicWaitRoundTrip", BM_AtomicWaitRoundTrip},
           Baseline{"BM_SpinRoundTrip", BM_SpinRoundTrip},
       }) {
    benchmark::RegisterBenchmark(b.name, b.fn)->UseRealTime();
  }
}

}  // namespace
}  // namespace haltpool::bench

int main(int argc, char** argv) {
  return haltpool::bench::RunMicrobenchmarks(argc, argv,
                                             haltpool::bench::RegisterAll);
}
