#include "arch/kernel_cpuidle.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace haltpool::arch {

KernelCpuidle ReadKernelCpuidle(const SystemFiles& files) {
  constexpr char kDir[] = "/sys/devices/system/cpu/cpuidle/";
  KernelCpuidle k;
  k.driver =
      ReadTrimmed(files, absl::StrCat(kDir, "current_driver")).value_or("");
  k.governor =
      ReadTrimmed(files, absl::StrCat(kDir, "current_governor")).value_or("");
  if (k.governor.empty()) {
    k.governor = ReadTrimmed(files, absl::StrCat(kDir, "current_governor_ro"))
                     .value_or("");
  }
  if (k.driver == "none") k.driver.clear();
  if (k.governor == "none") k.governor.clear();
  int64_t ns = 0;
  if (std::optional<std::string> v = ReadTrimmed(
          files, "/sys/module/haltpoll/parameters/guest_halt_poll_ns");
      v && absl::SimpleAtoi(*v, &ns)) {
    k.guest_halt_poll_ns = ns;
  }
  return k;
}

}  // namespace haltpool::arch
