// Run-time changes of a pool's idle options (ThreadPool::SetIdleOptions), as
// the kernel's 0644 haltpoll module parameters change a running guest:
// checks a change exactly as code options are checked when a pool is made,
// keeps the newest options with a generation number, and counts the changes.
// Workers compare the generation at the start of each idle period (one
// acquire load) and copy the options, under the lock, only when it moved.

#ifndef HALTPOOL_RUNTIME_IDLE_RETUNER_H_
#define HALTPOOL_RUNTIME_IDLE_RETUNER_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "idle/idle_options.h"
#include "runtime/config.h"
#include "runtime/pool_options.h"

namespace haltpool {

// A snapshot for the statistics.
struct IdleOptionsStats {
  // Changes so far: the newest options are generation `changes`; the ones
  // the pool was made with are generation 0.
  uint64_t changes = 0;
  absl::Time last_change_at = absl::InfinitePast();  // Never changed.
  // What the last change set, as the variables spell it:
  // "HALTPOOL_GOVERNOR=poll HALTPOOL_POLL_NS=100us"; empty if none.
  std::string last_change;
};

class IdleRetuner {
 public:
  // Generation 0: the idle options of `config`, the pool's resolved
  // configuration (ResolveConfig, calibration applied).
  explicit IdleRetuner(Config config);

  IdleRetuner(const IdleRetuner&) = delete;
  IdleRetuner& operator=(const IdleRetuner&) = delete;

  // Sets the fields `change` sets over the newest options, with the checks
  // ResolveConfig applies to code options (each field's range, a known
  // governor, a fixed window no longer than the poll cap): InvalidArgument
  // naming the field, its variable, the value and what is accepted. `wait`
  // is refused when set: the wait mechanism is chosen once, at start-up.
  // On success the new options become the next generation and
  // `on_publish` runs with them under the lock, so concurrent changes reach
  // it in generation order. A change that sets no field is OK and publishes
  // nothing. On error nothing changes. Any thread; takes a lock, allocates.
  absl::Status Change(
      const IdleChoices& change,
      absl::FunctionRef<void(const idle::IdleOptions&)> on_publish);

  // The newest generation. One acquire load: a caller that then calls
  // Current() gets that generation or a newer one. Any thread.
  uint64_t generation() const noexcept {
    return generation_.load(std::memory_order_acquire);
  }

  // Copies the newest options into `out`; returns their generation. Any
  // thread; takes the lock.
  uint64_t Current(idle::IdleOptions& out) const;

  IdleOptionsStats Stats() const;

 private:
  // A std::mutex (pthread's), not absl::Mutex: ThreadSanitizer sees it.
  mutable std::mutex mu_;  // Guards config_ and stats_.
  Config config_;          // Its idle options are the newest.
  IdleOptionsStats stats_;
  // Written under mu_, after config_; read without it.
  std::atomic<uint64_t> generation_{0};
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_IDLE_RETUNER_H_
