// One side of a two-way message channel for bench/pipe: kernel pipes (as
// perf bench sched pipe) or a ring in shared memory with a parker. Receive()
// idles under the configured governor.
//
// The links are made before fork() (or thread start) by the main process;
// each side then builds its own Endpoint, because governor state and idle
// statistics belong to the waiter's process.

#ifndef HALTPOOL_BENCH_ENDPOINT_H_
#define HALTPOOL_BENCH_ENDPOINT_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "arch/futex.h"
#include "idle/idle_options.h"
#include "idle/idle_stats.h"
#include "idle/parker.h"

namespace haltpool::bench {

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  // Sends one message to the peer. Never drops one.
  virtual void Send(uint64_t message) noexcept = 0;
  // Waits for the next message from the peer under the governor.
  virtual uint64_t Receive() noexcept = 0;
  // This side's idle statistics.
  virtual idle::IdleStats Stats(absl::string_view label) const = 0;
};

// Two kernel pipes, one per direction.
struct PipeLink {
  int fds[2][2];  // fds[d] = pipe(2) pair of direction d.
};

// Opens both pipes. Errors carry errno's text.
absl::StatusOr<PipeLink> OpenPipeLink();

// Side `side` (0 or 1) of `link`: reads direction side, writes direction
// 1 - side. Its poll state tries non-blocking reads; its block state is a
// plain blocking read(), exactly what perf does.
absl::StatusOr<std::unique_ptr<Endpoint>> MakePipeEndpoint(
    const PipeLink& link, int side, const idle::IdleOptions& options);

// A single-producer single-consumer ring of messages with the reader's
// wake word; lives in memory shared by both sides.
struct alignas(64) Ring {
  static constexpr uint64_t kSlots = 64;
  explicit Ring(arch::FutexScope scope) : reader(scope) {}
  alignas(64) std::atomic<uint64_t> head{0};  // Next slot to read.
  alignas(64) std::atomic<uint64_t> tail{0};  // Next slot to write.
  alignas(64) uint64_t slots[kSlots] = {};
  idle::WakeWord reader;
};

// Two rings in MAP_SHARED memory, usable across fork() (futex words shared)
// or between threads.
struct RingLink {
  Ring* rings;  // rings[d]: direction d.
};

absl::StatusOr<RingLink> OpenRingLink(bool across_processes);

// Side `side` of `link`: receives on rings[side], sends on rings[1 - side],
// idling on its ring's wake word through a Parker.
absl::StatusOr<std::unique_ptr<Endpoint>> MakeRingEndpoint(
    const RingLink& link, int side, const idle::IdleOptions& options);

}  // namespace haltpool::bench

#endif  // HALTPOOL_BENCH_ENDPOINT_H_
