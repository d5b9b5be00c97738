// What the CPU and kernel offer for waiting, read once from CPUID or the
// auxiliary vector.
//
// Only arch/ reads hardware. The struct is a plain value so tests can build
// any combination and ask which wait mechanisms it would allow.

#ifndef HALTPOOL_ARCH_CPU_FEATURES_H_
#define HALTPOOL_ARCH_CPU_FEATURES_H_

#include <string>

namespace haltpool::arch {

struct CpuFeatures {
  const char* arch = "generic";  // "x86_64", "aarch64", "s390x" or "generic".
  bool waitpkg = false;  // x86: CPUID.(7,0):ECX[5], UMONITOR/UMWAIT/TPAUSE.
  bool mwaitx = false;   // AMD: CPUID.80000001h:ECX[29], MONITORX/MWAITX.
  bool evtstrm =
      false;          // arm64: AT_HWCAP HWCAP_EVTSTRM, WFE wakes periodically.
  bool wfxt = false;  // arm64: AT_HWCAP2 HWCAP2_WFXT, WFET/WFIT.
  bool hypervisor = false;  // x86: CPUID.1:ECX[31], running under a hypervisor.
};

// The features of the CPU this process runs on; computed once, thread-safe.
const CpuFeatures& HostCpuFeatures();

// One line for humans: "x86_64: waitpkg=no mwaitx=no hypervisor=yes".
std::string DescribeCpuFeatures(const CpuFeatures& f);

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_CPU_FEATURES_H_
