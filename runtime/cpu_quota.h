// How many CPUs the process may use: its affinity mask, capped by the CFS
// bandwidth quota of its cgroup (v2 cpu.max, or v1 cpu.cfs_quota_us and
// cpu.cfs_period_us), with a one-line explanation for logs and for
// HALTPOOL_DISPLAY_ENV-style output.
//
// The quota counts CPU time, not CPUs: "50000 100000" lets the cgroup run
// 50 ms of every 100 ms on any of its CPUs. A pool with more busy workers than
// ceil(quota / period) gets throttled for the rest of each period, so that
// ceiling is how many workers can run at once.

#ifndef HALTPOOL_RUNTIME_CPU_QUOTA_H_
#define HALTPOOL_RUNTIME_CPU_QUOTA_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/system_files.h"

namespace haltpool {

// What the kernel lets the process run on before any cgroup quota; a value
// so tests can inject a mask.
struct CpuQuotaInput {
  // The OS indices of the CPUs in the affinity mask (sched_getaffinity), as
  // arch::ThreadCpus() returns them. Duplicates count once.
  std::vector<int> allowed_cpus;
};

// One CFS bandwidth limit: quota_us of CPU time in every period_us.
struct CgroupCpuLimit {
  int cgroup_version = 2;  // 2: cpu.max; 1: cpu.cfs_quota_us/_period_us.
  std::string dir;         // The cgroup directory it was read in.
  int64_t quota_us = 0;    // > 0.
  int64_t period_us = 0;   // > 0.

  // ceil(quota_us / period_us): how many CPUs can run at once without being
  // throttled. At least 1.
  int64_t Cpus() const;

  // "cpu.max 50000/100000 in /sys/fs/cgroup/app" (v2) or
  // "cpu.cfs_quota_us/cpu.cfs_period_us 50000/100000 in /sys/fs/cgroup/cpu/app"
  // (v1).
  std::string Describe() const;
};

// The result: how many CPUs to plan for, and why.
struct CpuQuota {
  int usable_cpus = 1;   // min(allowed CPUs, cgroup_limit->Cpus()), >= 1.
  int allowed_cpus = 0;  // Distinct CPUs in the affinity mask (may be 0).
  std::optional<CgroupCpuLimit> cgroup_limit;  // The tightest; nullopt: none.
  // One line, e.g. "2 CPUs: affinity mask 0-1, no cgroup quota" or "1 CPU:
  // cgroup cpu.max 50000/100000 in /sys/fs/cgroup/app caps 2 allowed CPUs
  // (affinity mask 0-1)".
  std::string explanation;
};

// The kernel's root of the cgroup file systems; paths from /proc/self/cgroup
// are relative to it (v2), or to the v1 cpu controller's mount below it
// ("cpu,cpuacct" or "cpu"), as systemd and Docker mount them.
inline constexpr char kCgroupRoot[] = "/sys/fs/cgroup";

// Computes the usable CPUs for `input` from the cgroup files in `files`:
// finds the process's cgroup in /proc/self/cgroup ("0::/path" for v2,
// "N:...cpu...:/path" for v1), then reads the quota in that cgroup and in
// every ancestor up to the root, keeping the smallest quota/period (a
// parent's limit binds its children). v2 (kCgroupRoot<path>/cpu.max) and v1
// (kCgroupRoot/cpu,cpuacct<path> or kCgroupRoot/cpu<path>) are both read; on
// a hybrid system only one of them has the cpu controller. A missing file
// means no limit at that level; a missing /proc/self/cgroup means no cgroup.
// A malformed file is InvalidArgument naming the file and its content; any
// other read failure is returned as is. Blocks on a few small reads.
absl::StatusOr<CpuQuota> LoadCpuQuota(const CpuQuotaInput& input,
                                      const arch::SystemFiles& files);

// LoadCpuQuota({arch::ThreadCpus()}, arch::RealSystemFiles()).
absl::StatusOr<CpuQuota> ProcessCpuQuota();

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_CPU_QUOTA_H_
