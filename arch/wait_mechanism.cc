#include "arch/wait_mechanism.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace haltpool::arch {

absl::string_view WaitMechanismName(WaitMechanism m) {
  return kWaitMechanisms.Name(m);
}

absl::string_view WaitMechanismNames() {
  static const std::string* kJoined = new std::string(kWaitMechanisms.Names());
  return *kJoined;
}

absl::StatusOr<WaitMechanism> ParseWaitMechanism(absl::string_view name) {
  if (std::optional<WaitMechanism> m = kWaitMechanisms.Parse(name)) return *m;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown wait mechanism '", name, "'; accepted: ", WaitMechanismNames()));
}

}  // namespace haltpool::arch
