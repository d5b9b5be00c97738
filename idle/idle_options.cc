#include "idle/idle_options.h"

#include "absl/strings/str_cat.h"
#include "idle/governor_registry.h"

namespace haltpool::idle {
namespace {

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t lo,
                        int64_t hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, " = ", value, " is out of range; accepted: ", lo, " to ", hi));
}

}  // namespace

absl::Status ValidateIdleOptions(const IdleOptions& o) {
  if (!IsGovernorName(o.governor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "governor '", o.governor, "' is unknown; accepted: ", GovernorNames()));
  }
  const HaltpollParams& h = o.haltpoll;
  for (absl::Status s : {
           CheckRange("haltpoll.poll_ns", h.poll_ns, 0, kMaxWindowNs),
           CheckRange("haltpoll.grow", h.grow, kMinGrow, kMaxFactor),
           CheckRange("haltpoll.grow_start", h.grow_start, 0, kMaxWindowNs),
           CheckRange("haltpoll.shrink", h.shrink, 0, kMaxFactor),
           CheckRange("fixed_poll_ns", o.fixed_poll_ns, 0, kMaxWindowNs),
           CheckRange("block_exit_latency_ns", o.block_exit_latency_ns, 0,
                      kMaxWindowNs),
           CheckRange("block_target_residency_ns", o.block_target_residency_ns,
                      0, kMaxWindowNs),
           CheckRange("wake_margin_ns", o.wake_margin_ns, 0, kMaxWindowNs),
           CheckRange("dense_poll_ns", o.dense_poll_ns, 0, kMaxWindowNs),
       }) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace haltpool::idle
