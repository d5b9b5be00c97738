// Hypervisor detection where there is no CPUID (arm64 and others), from
// what the firmware tells the kernel: the device tree's hypervisor node,
// /sys/hypervisor and DMI, read through a SystemFiles.

#ifndef HALTPOOL_ARCH_FIRMWARE_HYPERVISOR_H_
#define HALTPOOL_ARCH_FIRMWARE_HYPERVISOR_H_

#include "arch/hypervisor_info.h"
#include "arch/system_files.h"

namespace haltpool::arch {

inline constexpr char kDeviceTreeHypervisor[] =
    "/proc/device-tree/hypervisor/compatible";
inline constexpr char kSysHypervisorType[] = "/sys/hypervisor/type";
inline constexpr char kDmiSysVendor[] = "/sys/class/dmi/id/sys_vendor";
inline constexpr char kDmiProductName[] = "/sys/class/dmi/id/product_name";

// Where the machine runs according to its firmware, in this order: the
// device tree's hypervisor node ("xen,xen" -> Xen, "linux,kvm" -> KVM),
// /sys/hypervisor/type ("xen"), then DMI: "QEMU" with a "KVM ..." product is
// KVM (without KVM, QEMU emulates: kUnknownVm), "Amazon EC2" is KVM (Nitro)
// unless the product is a bare-metal size ("c7g.metal", "m8g.metal-24xl"),
// "Microsoft Corporation" with "Virtual Machine" is Hyper-V, "VMware, Inc."
// VMware, "Xen" Xen, "Google" KVM, "innotek GmbH" (VirtualBox) and "Parallels"
// kUnknownVm. Anything else, or no such file at all, is bare metal. KVM found
// this way is kKvmShared: arm64 has no dedicated-CPU hint. Never fails;
// unreadable files count as missing.
HypervisorInfo HypervisorFromFirmware(const SystemFiles& files);

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_FIRMWARE_HYPERVISOR_H_
