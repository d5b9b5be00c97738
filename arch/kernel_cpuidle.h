// The guest kernel's own idle policy, read from sysfs: its cpuidle driver
// and governor and the haltpoll governor's guest_halt_poll_ns.

#ifndef HALTPOOL_ARCH_KERNEL_CPUIDLE_H_
#define HALTPOOL_ARCH_KERNEL_CPUIDLE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "arch/system_files.h"

namespace haltpool::arch {

// What the kernel's cpuidle does where the process runs; haltpool polls in user
// space on top of it.
struct KernelCpuidle {
  std::string driver;    // "haltpoll", "intel_idle", "acpi_idle"; "" if none.
  std::string governor;  // "haltpoll", "menu", "teo"; "" if none.
  // The haltpoll governor's guest_halt_poll_ns, where the module is loaded.
  std::optional<int64_t> guest_halt_poll_ns;
};

// Reads /sys/devices/system/cpu/cpuidle/current_driver and current_governor
// (current_governor_ro on older kernels) and
// /sys/module/haltpoll/parameters/guest_halt_poll_ns. Missing files leave
// fields empty; never fails.
KernelCpuidle ReadKernelCpuidle(const SystemFiles& files);

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_KERNEL_CPUIDLE_H_
