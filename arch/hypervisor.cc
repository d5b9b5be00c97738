#include "arch/hypervisor.h"

#include <string>

#include "absl/status/status.h"

namespace haltpool::arch {

HypervisorInfo DetectHypervisor(const CpuidLeaves& cpuid,
                                const SystemFiles& files) {
  if (!cpuid.empty()) return HypervisorFromCpuid(cpuid);
  absl::StatusOr<HypervisorInfo> sysinfo = HypervisorFromSysinfo(files);
  if (sysinfo.ok()) return *sysinfo;
  if (!absl::IsNotFound(sysinfo.status())) {
    return FoundHypervisor(HostEnvironment::kUnknownVm, "",
                           std::string(sysinfo.status().message()));
  }
  return HypervisorFromFirmware(files);
}

const HypervisorInfo& HostHypervisor() {
  static const HypervisorInfo* kInfo =
      new HypervisorInfo(DetectHypervisor(ReadHostCpuid(), RealSystemFiles()));
  return *kInfo;
}

}  // namespace haltpool::arch
