// Governors by name: the one place that maps a name to an implementation.
// A new governor is added here and nowhere else in idle/.

#ifndef HALTPOOL_IDLE_GOVERNOR_REGISTRY_H_
#define HALTPOOL_IDLE_GOVERNOR_REGISTRY_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "idle/governor.h"
#include "idle/idle_options.h"

namespace haltpool::idle {

// "haltpoll|predictive|poll|block|fixed", for help and error messages.
absl::string_view GovernorNames();

// True if `name` is one of GovernorNames().
bool IsGovernorName(absl::string_view name);

// A new governor for one waiter, configured from `options`. Fails with
// InvalidArgument (as ValidateIdleOptions) on a bad name or value.
absl::StatusOr<std::unique_ptr<Governor>> MakeGovernor(
    const IdleOptions& options);

}  // namespace haltpool::idle

#endif  // HALTPOOL_IDLE_GOVERNOR_REGISTRY_H_
