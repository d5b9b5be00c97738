// The pair contenders of bench/tradeoff: one WakeChannel per way of waking
// a thread that people use, and haltpool's parker.

#ifndef HALTPOOL_BENCH_WAKE_CHANNELS_H_
#define HALTPOOL_BENCH_WAKE_CHANNELS_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "bench/wake_harness.h"
#include "idle/idle_options.h"

namespace haltpool::bench {

// haltpool's parker under `options`: the waiter parks on its wake word, the
// waker unparks it. Fails if the options are invalid.
absl::StatusOr<std::unique_ptr<WakeChannel>> MakeParkerChannel(
    const idle::IdleOptions& options);

// std::binary_semaphore: acquire() / release().
std::unique_ptr<WakeChannel> MakeSemaphoreChannel();

// std::atomic<uint32_t>::wait() / notify_one() on a flag.
std::unique_ptr<WakeChannel> MakeAtomicWaitChannel();

// absl::Mutex and absl::CondVar around a flag.
std::unique_ptr<WakeChannel> MakeAbslCondVarChannel();

// std::mutex and std::condition_variable around a flag.
std::unique_ptr<WakeChannel> MakeStdCondVarChannel();

// folly::Baton's policy: spin `spin_ns` on the flag, then FUTEX_WAIT; the
// waker calls FUTEX_WAKE only if the waiter sleeps.
std::unique_ptr<WakeChannel> MakeSpinThenFutexChannel(int64_t spin_ns);

// oneTBB's concurrent_bounded_queue: pop() / push().
std::unique_ptr<WakeChannel> MakeTbbQueueChannel();

}  // namespace haltpool::bench

#endif  // HALTPOOL_BENCH_WAKE_CHANNELS_H_
