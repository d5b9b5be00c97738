// Where the process runs: bare metal or which hypervisor, with the hints the
// hypervisor gives its guests.
//
// One detector per source, each in its own file: x86-64 asks CPUID
// (cpuid_hypervisor.h); s390x reads /proc/sysinfo (s390_sysinfo.h); arm64
// and the rest read the device tree, /sys/hypervisor and DMI
// (firmware_hypervisor.h). Every detector is a plain function of recorded
// CPUID registers or of a SystemFiles, so tests feed captures from each kind
// of machine on any architecture; only HostHypervisor() and ReadHostCpuid()
// look at this one. This file picks the detector for the machine.
//
// Steal time (proc_stat.h) and the kernel's cpuidle (kernel_cpuidle.h) are
// included for the callers that report them beside the hypervisor.

#ifndef HALTPOOL_ARCH_HYPERVISOR_H_
#define HALTPOOL_ARCH_HYPERVISOR_H_

#include "arch/cpuid_hypervisor.h"
#include "arch/firmware_hypervisor.h"
#include "arch/hypervisor_info.h"
#include "arch/kernel_cpuidle.h"
#include "arch/proc_stat.h"
#include "arch/s390_sysinfo.h"
#include "arch/system_files.h"

namespace haltpool::arch {

// --- All architectures -----------------------------------------------------

// Where a machine with these CPUID leaves and files runs: CPUID if `cpuid`
// is not empty, else /proc/sysinfo where it exists, else the firmware files.
// A /proc/sysinfo that cannot be read or understood gives kUnknownVm with the
// error as its source, never an error.
HypervisorInfo DetectHypervisor(const CpuidLeaves& cpuid,
                                const SystemFiles& files);

// DetectHypervisor(ReadHostCpuid(), RealSystemFiles()) for the machine the
// process runs on, computed on first use (under a millisecond); thread-safe.
const HypervisorInfo& HostHypervisor();

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_HYPERVISOR_H_
