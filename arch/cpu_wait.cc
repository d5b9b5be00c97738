#include "arch/cpu_wait.h"

#include "absl/strings/str_cat.h"

namespace haltpool::arch {

absl::Status CheckWaitMechanism(WaitMechanism m, const CpuFeatures& features) {
  if (platform::Supports(m, features)) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "wait mechanism '", WaitMechanismName(m), "' is unavailable on ",
      features.arch, ": ", platform::MissingReason(m)));
}

WaitMechanism BestWaitMechanism(const CpuFeatures& features) {
  return platform::Best(features);
}

}  // namespace haltpool::arch
