#include "arch/hypervisor_info.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace haltpool::arch {

absl::string_view HostEnvironmentName(HostEnvironment e) {
  return kHostEnvironments.Name(e);
}

std::string DescribeHypervisor(const HypervisorInfo& info) {
  auto yn = [](bool b) { return b ? "yes" : "no"; };
  std::string out(HostEnvironmentName(info.kind));
  if (!info.vendor.empty()) absl::StrAppend(&out, ": ", info.vendor);
  absl::StrAppend(&out, " (", info.source, "); dedicated hint ",
                  yn(info.dedicated_hint), ", steal time ", yn(info.steal_time),
                  ", poll control ", yn(info.poll_control));
  return out;
}

HypervisorInfo FoundHypervisor(HostEnvironment kind, std::string vendor,
                               std::string source) {
  HypervisorInfo info;
  info.kind = kind;
  info.vendor = std::move(vendor);
  info.source = std::move(source);
  info.steal_time = kind == HostEnvironment::kXen;  // Its runstate area.
  return info;
}

}  // namespace haltpool::arch
