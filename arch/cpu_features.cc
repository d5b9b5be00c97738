#include "arch/cpu_features.h"

#include "absl/strings/str_cat.h"
#include "arch/platform.h"

namespace haltpool::arch {

const CpuFeatures& HostCpuFeatures() {
  static const CpuFeatures kFeatures = platform::DetectFeatures();
  return kFeatures;
}

std::string DescribeCpuFeatures(const CpuFeatures& f) {
  auto yn = [](bool b) { return b ? "yes" : "no"; };
  return absl::StrCat(f.arch, ": waitpkg=", yn(f.waitpkg),
                      " mwaitx=", yn(f.mwaitx), " evtstrm=", yn(f.evtstrm),
                      " wfxt=", yn(f.wfxt), " hypervisor=", yn(f.hypervisor));
}

}  // namespace haltpool::arch
