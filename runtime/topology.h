// Where the pool's workers run: the CPU topology (which logical CPUs share a
// physical core, a package, a NUMA node), read with hwloc or assumed flat,
// and a placement plan that pins workers to cores or to single logical CPUs.
//
// Only the CPUs the process may use are considered (the affinity mask; see
// arch/thread_affinity.h). Loading is setup work; planning is pure and
// deterministic; applying a placement is one syscall on the calling thread.

#ifndef HALTPOOL_RUNTIME_TOPOLOGY_H_
#define HALTPOOL_RUNTIME_TOPOLOGY_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arch/named_enum.h"

namespace haltpool {

// How workers are pinned.
enum class PinMode {
  kNone,  // Not pinned: each worker may run on every allowed CPU.
  kCore,  // Each worker on the logical CPUs (PUs) of one physical core.
  kPu,    // Each worker on exactly one logical CPU.
};

inline constexpr arch::NamedEnum<PinMode, 3> kPinModes({{
    {PinMode::kNone, "none"},
    {PinMode::kCore, "core"},
    {PinMode::kPu, "pu"},
}});

// The lower-case name of `mode`: "none", "core" or "pu".
absl::string_view PinModeName(PinMode mode);

// One logical CPU (hwloc's PU) and where it sits.
struct CpuInfo {
  int os_index = 0;    // The kernel's CPU number, as in sched_setaffinity.
  int core = 0;        // Machine-wide id of its physical core; SMT siblings
                       // share it. hwloc: the core's logical index.
  int package = 0;     // Machine-wide id of its package (socket); -1 unknown.
  int numa_node = -1;  // The kernel's number of its local NUMA node (as
                       // libnuma and mbind use); -1 unknown.
};

// The allowed CPUs and their places.
struct Topology {
  std::vector<CpuInfo> cpus;  // Ascending os_index, no duplicates.
  bool from_hwloc = false;    // False: FallbackTopology's flat guess.
  std::string note;           // One line on where this came from.
};

// Reads the machine's topology with hwloc and keeps the CPUs in `allowed`
// (OS indices; order and duplicates do not matter). Fails if hwloc cannot
// load a topology, if the hwloc library's major API version differs from the
// headers', if `allowed` is empty, or if an allowed CPU is unknown to hwloc
// (offline, or beyond what hwloc saw). Costs one hwloc_topology_load: 20-70
// ms on a 2-vCPU KVM guest, mostly hwloc opening its plugins. Never changes
// any thread's affinity (hwloc's x86 CPUID backend, which would, is off).
// In a build with HALTPOOL_WITHOUT_HWLOC defined (the cross-test tool's static
// builds) it always fails, kUnimplemented, "no hwloc in this build".
// Thread-safe.
absl::StatusOr<Topology> LoadHwlocTopology(const std::vector<int>& allowed);

// A flat topology for when hwloc is unavailable: each allowed CPU is its own
// core, all in package 0 and NUMA node 0. `why` goes into the note. Pure.
Topology FallbackTopology(const std::vector<int>& allowed,
                          absl::string_view why);

// LoadHwlocTopology(allowed), or FallbackTopology if it fails or if
// `force_fallback`. An hwloc failure is reported once per process on stderr
// ("haltpool: hwloc topology unavailable (...); ..."); a forced fallback
// is silent. Thread-safe.
Topology LoadTopology(const std::vector<int>& allowed,
                      bool force_fallback = false);

// Where one worker runs.
struct WorkerPlacement {
  int worker = 0;             // 0-based worker number.
  std::optional<int> os_cpu;  // Its home CPU; nullopt: not pinned (kNone).
  std::vector<int> cpu_set;   // The CPUs it may run on, ascending.
  int numa_node = -1;         // The node of cpu_set, -1 if unknown or mixed.
  // Applied even when not pinned: the pool runs on fewer CPUs than the
  // creating thread's mask (PoolOptions::cpus).
  bool confined = false;
};

// Places `workers` workers (none if <= 0) on `topology` for `mode`:
//  - kNone: no pinning; cpu_set is every CPU of the topology; numa_node is
//    theirs if they share one node, else -1.
//  - kCore: worker i gets the allowed PUs of one physical core; os_cpu is
//    the core's first PU. Cores are handed out round robin across packages,
//    then across NUMA nodes within a package, so every core gets a worker
//    before any gets a second and neighbours land far apart; beyond the core
//    count it wraps.
//  - kPu: worker i gets one PU (cpu_set = {os_cpu}): the first PU of every
//    core in kCore's order, then every core's second PU (SMT siblings), and
//    so on; beyond the PU count it wraps.
// A topology without CPUs gives unpinned placements with an empty cpu_set.
// Pure and deterministic: the same topology always gives the same plan.
std::vector<WorkerPlacement> PlanPlacement(const Topology& topology,
                                           int workers, PinMode mode);

// Pins the calling thread to placement.cpu_set (arch::SetThreadCpus) if
// placement.os_cpu is set or the placement is confined; does nothing for
// any other unpinned (kNone) placement. Fails with an error naming the
// worker and the CPU set, with the errno text when the kernel refused (e.g.
// no CPU of the set is in the process's cgroup cpuset). Call it on the
// worker thread itself, before it runs tasks.
absl::Status ApplyPlacement(const WorkerPlacement& placement);

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_TOPOLOGY_H_
