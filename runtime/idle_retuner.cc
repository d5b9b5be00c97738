#include "runtime/idle_retuner.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "runtime/tunables.h"

namespace haltpool {

IdleRetuner::IdleRetuner(Config config) : config_(std::move(config)) {}

absl::Status IdleRetuner::Change(
    const IdleChoices& change,
    absl::FunctionRef<void(const idle::IdleOptions&)> on_publish) {
  std::lock_guard<std::mutex> lock(mu_);
  if (change.wait) {
    const Tunable& wait = *FindTunable("HALTPOOL_WAIT");
    return absl::InvalidArgumentError(absl::StrCat(
        "SetIdleOptions: ", wait.field, " (", wait.variable,
        ") = ", arch::WaitMechanismName(*change.wait),
        ": the wait mechanism is chosen once, when the pool starts; "
        "accepted: unset (the workers keep ",
        wait.format(config_), ")"));
  }
  PoolOptions code;
  code.idle = change;
  Config changed = config_;
  if (absl::Status s = ApplyCodeOptions(code, changed); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("SetIdleOptions: ", s.message()));
  }
  // What the change set, spelled as the resolved configuration shows it.
  std::vector<std::string> set;
  Config scratch = config_;
  for (const Tunable& t : Tunables()) {
    absl::StatusOr<bool> is_set = t.from_code(code, scratch);
    if (is_set.ok() && *is_set) {
      set.push_back(absl::StrCat(t.variable, "=", t.format(changed)));
    }
  }
  if (set.empty()) return absl::OkStatus();
  on_publish(changed.pool.idle);
  config_ = std::move(changed);
  stats_.changes += 1;
  stats_.last_change_at = absl::Now();
  stats_.last_change = absl::StrJoin(set, " ");
  generation_.store(stats_.changes, std::memory_order_release);
  return absl::OkStatus();
}

uint64_t IdleRetuner::Current(idle::IdleOptions& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  out = config_.pool.idle;
  return generation_.load(std::memory_order_relaxed);
}

IdleOptionsStats IdleRetuner::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace haltpool
