#include "arch/wait_mechanism.h"

#include "absl/strings/str_cat.h"

namespace haltpool::arch {

absl::string_view WaitMechanismName(WaitMechanism m) {
  switch (m) {
    case WaitMechanism::kSpin:
      return "spin";
    case WaitMechanism::kPause:
      return "pause";
    case WaitMechanism::kUmwait:
      return "umwait";
    case WaitMechanism::kTpause:
      return "tpause";
    case WaitMechanism::kMwaitx:
      return "mwaitx";
    case WaitMechanism::kYield:
      return "yield";
    case WaitMechanism::kWfe:
      return "wfe";
    case WaitMechanism::kWfet:
      return "wfet";
  }
  return "unknown";
}

absl::string_view WaitMechanismNames() {
  return "spin|pause|umwait|tpause|mwaitx|yield|wfe|wfet";
}

absl::StatusOr<WaitMechanism> ParseWaitMechanism(absl::string_view name) {
  for (WaitMechanism m : kAllWaitMechanisms) {
    if (name == WaitMechanismName(m)) return m;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown wait mechanism '", name, "'; accepted: ", WaitMechanismNames()));
}

}  // namespace haltpool::arch
