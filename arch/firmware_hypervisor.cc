#include "arch/firmware_hypervisor.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace haltpool::arch {
namespace {

using E = HostEnvironment;

// The device tree's hypervisor node: a list of NUL-terminated strings.
std::optional<HypervisorInfo> FromDeviceTree(const SystemFiles& files) {
  absl::StatusOr<std::string> compatible = files.Read(kDeviceTreeHypervisor);
  if (!compatible.ok()) return std::nullopt;
  std::vector<absl::string_view> names =
      absl::StrSplit(*compatible, '\0', absl::SkipEmpty());
  for (absl::string_view name : names) {
    if (absl::StartsWith(name, "xen,xen")) {
      return FoundHypervisor(E::kXen, "Xen", kDeviceTreeHypervisor);
    }
    if (name == "linux,kvm") {
      return FoundHypervisor(E::kKvmShared, "KVM", kDeviceTreeHypervisor);
    }
  }
  return FoundHypervisor(
      E::kUnknownVm,
      names.empty() ? std::string("unnamed")
                    : std::string(absl::StripAsciiWhitespace(names[0])),
      kDeviceTreeHypervisor);
}

std::optional<HypervisorInfo> FromSysHypervisor(const SystemFiles& files) {
  std::optional<std::string> type = ReadTrimmed(files, kSysHypervisorType);
  if (!type || type->empty()) return std::nullopt;
  if (*type == "xen")
    return FoundHypervisor(E::kXen, "Xen", kSysHypervisorType);
  return FoundHypervisor(E::kUnknownVm, *type, kSysHypervisorType);
}

std::optional<HypervisorInfo> FromDmi(const SystemFiles& files) {
  std::optional<std::string> vendor = ReadTrimmed(files, kDmiSysVendor);
  if (!vendor || vendor->empty()) return std::nullopt;
  const std::string product = ReadTrimmed(files, kDmiProductName).value_or("");
  const std::string both =
      product.empty() ? *vendor : absl::StrCat(*vendor, " ", product);
  const std::string source = kDmiSysVendor;
  if (*vendor == "QEMU") {
    // QEMU's arm64 "virt" machine names itself "KVM Virtual Machine" when
    // KVM runs it and "QEMU Virtual Machine" when it emulates.
    if (absl::StrContains(product, "KVM")) {
      return FoundHypervisor(E::kKvmShared, both, source);
    }
    return FoundHypervisor(E::kUnknownVm, both, source);
  }
  if (*vendor == "Amazon EC2") {
    // Nitro is KVM-based; bare-metal instances have no hypervisor. Their
    // sizes are "c7g.metal" and, on newer families, "m8g.metal-24xl".
    if (absl::StrContains(product, ".metal")) {
      HypervisorInfo info = FoundHypervisor(E::kBareMetal, "", source);
      info.source = absl::StrCat(source, " (", both, ")");
      return info;
    }
    return FoundHypervisor(E::kKvmShared, both, source);
  }
  if (*vendor == "Microsoft Corporation") {
    if (product == "Virtual Machine")
      return FoundHypervisor(E::kHyperV, both, source);
    return std::nullopt;  // Microsoft's own hardware (Surface, ...).
  }
  if (absl::StartsWith(*vendor, "VMware")) {
    return FoundHypervisor(E::kVmware, both, source);
  }
  if (*vendor == "Xen") return FoundHypervisor(E::kXen, both, source);
  if (*vendor == "Google") return FoundHypervisor(E::kKvmShared, both, source);
  if (*vendor == "innotek GmbH" || absl::StartsWith(*vendor, "Parallels")) {
    return FoundHypervisor(E::kUnknownVm, both, source);
  }
  return std::nullopt;
}

}  // namespace

HypervisorInfo HypervisorFromFirmware(const SystemFiles& files) {
  if (auto info = FromDeviceTree(files)) return *info;
  if (auto info = FromSysHypervisor(files)) return *info;
  if (auto info = FromDmi(files)) return *info;
  const bool dmi = files.Read(kDmiSysVendor).ok();
  return FoundHypervisor(
      E::kBareMetal, "",
      dmi ? absl::StrCat(kDmiSysVendor, " (no hypervisor vendor)")
          : "no hypervisor node, /sys/hypervisor or DMI vendor");
}

}  // namespace haltpool::arch
