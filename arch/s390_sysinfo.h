// Hypervisor detection on s390x from /proc/sysinfo, the kernel's print of
// the STSI instruction: LPAR, z/VM or KVM, read through a SystemFiles.

#ifndef HALTPOOL_ARCH_S390_SYSINFO_H_
#define HALTPOOL_ARCH_S390_SYSINFO_H_

#include "absl/status/statusor.h"
#include "arch/hypervisor_info.h"
#include "arch/system_files.h"

namespace haltpool::arch {

inline constexpr char kProcSysinfo[] = "/proc/sysinfo";

// Where an s390x machine runs according to /proc/sysinfo (the kernel's STSI
// output): a "VM00 Control Program:" line names the hypervisor right under
// this guest ("z/VM    7.3.0" -> kZvm, "KVM/Linux" -> kKvmS390, anything else
// kUnknownVm); without one, the "LPAR ..." lines mean an LPAR (dedicated
// hint if "LPAR CPUs Shared" is 0). NotFound without /proc/sysinfo (not
// s390x); InvalidArgument naming the file if it has neither.
absl::StatusOr<HypervisorInfo> HypervisorFromSysinfo(const SystemFiles& files);

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_S390_SYSINFO_H_
