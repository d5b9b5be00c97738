#include "idle/governor_registry.h"

#include "idle/fixed_governor.h"
#include "idle/haltpoll_governor.h"
#include "idle/predictive_governor.h"

namespace haltpool::idle {

absl::string_view GovernorNames() {
  return "haltpoll|predictive|poll|block|fixed";
}

bool IsGovernorName(absl::string_view name) {
  return name == "haltpoll" || name == "predictive" || name == "poll" ||
         name == "block" || name == "fixed";
}

absl::StatusOr<std::unique_ptr<Governor>> MakeGovernor(
    const IdleOptions& options) {
  if (absl::Status s = ValidateIdleOptions(options); !s.ok()) return s;
  const std::string& name = options.governor;
  if (name == "haltpoll") {
    return std::make_unique<HaltpollGovernor>(options.haltpoll);
  }
  if (name == "predictive") {
    return std::make_unique<PredictiveGovernor>(PredictiveParams{
        .poll_ns = options.haltpoll.poll_ns,
        .block_exit_latency_ns = options.block_exit_latency_ns,
        .block_target_residency_ns = options.block_target_residency_ns,
        .wake_margin_ns = options.wake_margin_ns,
        .dense_poll_ns = options.dense_poll_ns});
  }
  if (name == "poll") {
    return std::make_unique<FixedGovernor>("poll", kUnlimitedPollNs);
  }
  if (name == "block") return std::make_unique<FixedGovernor>("block", 0);
  return std::make_unique<FixedGovernor>("fixed", options.fixed_poll_ns);
}

}  // namespace haltpool::idle
