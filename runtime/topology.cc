#include "runtime/topology.h"

#include <errno.h>
#include <stdio.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/thread_affinity.h"

// HALTPOOL_WITHOUT_HWLOC builds without hwloc (the cross-test tool defines it:
// Debian's static hwloc needs libudev, which has no static build). Then
// LoadHwlocTopology always fails, saying so, and LoadTopology takes its
// usual fallback: the allowed CPUs, each its own core.
#ifndef HALTPOOL_WITHOUT_HWLOC
#include <hwloc.h>
#endif

namespace haltpool {
namespace {

std::vector<int> SortedUnique(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::string Plural(size_t n, absl::string_view one, absl::string_view many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

// One physical core as PlanPlacement sees it.
struct Core {
  int package;
  int numa_node;
  std::vector<int> pus;  // Ascending OS indices.
};

// Round robin over `lists`: the first of each, then the second of each, ...
std::vector<int> Interleave(const std::vector<std::vector<int>>& lists) {
  std::vector<int> out;
  for (size_t round = 0;; ++round) {
    bool any = false;
    for (const std::vector<int>& list : lists) {
      if (round < list.size()) {
        out.push_back(list[round]);
        any = true;
      }
    }
    if (!any) return out;
  }
}

// The cores of `cpus` (sorted by os_index), each with its PUs.
std::vector<Core> CollectCores(const std::vector<CpuInfo>& cpus) {
  std::vector<Core> cores;
  std::map<std::pair<int, int>, size_t> index;  // (package, core) -> cores[i].
  for (const CpuInfo& cpu : cpus) {
    auto [it, inserted] =
        index.try_emplace({cpu.package, cpu.core}, cores.size());
    if (inserted) cores.push_back(Core{cpu.package, cpu.numa_node, {}});
    cores[it->second].pus.push_back(cpu.os_index);
  }
  return cores;
}

// Indices into `cores` in hand-out order: round robin over packages (in
// order of first appearance), within a package round robin over its NUMA
// nodes, within a node in order.
std::vector<int> SpreadOrder(const std::vector<Core>& cores) {
  std::vector<int> package_ids;                       // First-seen order.
  std::vector<std::vector<int>> nodes_of_package;     // Node ids, first-seen.
  std::vector<std::vector<std::vector<int>>> groups;  // [pkg][node] -> cores.
  for (size_t i = 0; i < cores.size(); ++i) {
    const Core& core = cores[i];
    auto pkg = std::find(package_ids.begin(), package_ids.end(), core.package);
    const size_t p = pkg - package_ids.begin();
    if (pkg == package_ids.end()) {
      package_ids.push_back(core.package);
      nodes_of_package.emplace_back();
      groups.emplace_back();
    }
    std::vector<int>& nodes = nodes_of_package[p];
    auto node = std::find(nodes.begin(), nodes.end(), core.numa_node);
    const size_t n = node - nodes.begin();
    if (node == nodes.end()) {
      nodes.push_back(core.numa_node);
      groups[p].emplace_back();
    }
    groups[p][n].push_back(static_cast<int>(i));
  }
  std::vector<std::vector<int>> per_package;
  per_package.reserve(groups.size());
  for (const auto& nodes : groups) per_package.push_back(Interleave(nodes));
  return Interleave(per_package);
}

#ifndef HALTPOOL_WITHOUT_HWLOC
struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

absl::StatusOr<TopologyPtr> LoadHwloc() {
  // HWLOC_API_VERSION is (X<<16)+(Y<<8)+Z and hwloc breaks its ABI only
  // across major versions X (1.x -> 2.x), so the library's X must be the
  // headers'.
  if ((hwloc_get_api_version() >> 16) != (HWLOC_API_VERSION >> 16)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "hwloc library API 0x", absl::Hex(hwloc_get_api_version()),
        " does not match headers' 0x", absl::Hex(HWLOC_API_VERSION)));
  }
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    return absl::ErrnoToStatus(errno, "hwloc_topology_init");
  }
  TopologyPtr topology(raw);
  // Without this flag hwloc's x86 backend binds the calling thread to every
  // CPU in turn to run CPUID there, even CPUs outside its affinity mask
  // (seen with strace under taskset on a KVM guest), racing any pinning the
  // application does meanwhile. The Linux backend alone (sysfs) still gives
  // cores, packages and NUMA nodes; only x86 cache and die details are lost.
  if (hwloc_topology_set_flags(topology.get(),
                               HWLOC_TOPOLOGY_FLAG_DONT_CHANGE_BINDING) != 0) {
    return absl::ErrnoToStatus(errno, "hwloc_topology_set_flags");
  }
  if (hwloc_topology_load(topology.get()) != 0) {
    return absl::ErrnoToStatus(errno, "hwloc_topology_load");
  }
  return topology;
}

#endif  // HALTPOOL_WITHOUT_HWLOC

}  // namespace

absl::string_view PinModeName(PinMode mode) { return kPinModes.Name(mode); }

absl::StatusOr<Topology> LoadHwlocTopology(const std::vector<int>& allowed) {
#ifdef HALTPOOL_WITHOUT_HWLOC
  (void)allowed;
  return absl::UnimplementedError(
      "no hwloc in this build (built with HALTPOOL_WITHOUT_HWLOC)");
#else
  const std::vector<int> wanted = SortedUnique(allowed);
  if (wanted.empty()) {
    return absl::InvalidArgumentError("no allowed CPUs to look up in hwloc");
  }
  absl::StatusOr<TopologyPtr> loaded = LoadHwloc();
  if (!loaded.ok()) return loaded.status();
  hwloc_topology* t = loaded->get();

  // PUs without a Core object (hwloc found no core level) are their own
  // core; their ids start after the real cores' so they stay distinct.
  const int ncores = std::max(0, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE));
  Topology topology;
  topology.from_hwloc = true;
  std::set<int> packages, nodes, cores;
  for (int cpu : wanted) {
    hwloc_obj_t pu =
        cpu < 0 ? nullptr
                : hwloc_get_pu_obj_by_os_index(t, static_cast<unsigned>(cpu));
    if (pu == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("hwloc's topology has no CPU ", cpu, " (allowed CPUs ",
                       arch::FormatCpuList(wanted), ")"));
    }
    hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu);
    hwloc_obj_t package =
        hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, pu);
    CpuInfo info;
    info.os_index = cpu;
    info.core = core != nullptr ? static_cast<int>(core->logical_index)
                                : ncores + static_cast<int>(pu->logical_index);
    info.package =
        package != nullptr ? static_cast<int>(package->logical_index) : -1;
    // The PU's nodeset holds its local NUMA nodes; with several (memory-side
    // nodes such as HBM or CXL share CPUs with DRAM) the lowest-numbered is
    // normally the DRAM one.
    info.numa_node = pu->nodeset != nullptr && !hwloc_bitmap_iszero(pu->nodeset)
                         ? hwloc_bitmap_first(pu->nodeset)
                         : -1;
    topology.cpus.push_back(info);
    cores.insert(info.core);
    packages.insert(info.package);
    nodes.insert(info.numa_node);
  }
  hwloc_obj_t root = hwloc_get_root_obj(t);
  const char* version = hwloc_obj_get_info_by_name(root, "hwlocVersion");
  const char* backend = hwloc_obj_get_info_by_name(root, "Backend");
  topology.note =
      absl::StrCat("hwloc ", version != nullptr ? version : "?", " (",
                   backend != nullptr ? backend : "?",
                   "): ", Plural(wanted.size(), "allowed CPU", "allowed CPUs"),
                   " (", arch::FormatCpuList(wanted), ") on ",
                   Plural(cores.size(), "core", "cores"), ", ",
                   Plural(packages.size(), "package", "packages"), ", ",
                   Plural(nodes.size(), "NUMA node", "NUMA nodes"));
  return topology;
#endif  // HALTPOOL_WITHOUT_HWLOC
}

Topology FallbackTopology(const std::vector<int>& allowed,
                          absl::string_view why) {
  const std::vector<int> cpus = SortedUnique(allowed);
  Topology topology;
  topology.from_hwloc = false;
  for (int cpu : cpus) {
    topology.cpus.push_back(
        CpuInfo{.os_index = cpu, .core = cpu, .package = 0, .numa_node = 0});
  }
  topology.note =
      absl::StrCat("hwloc not used (", why, "): assuming each of ",
                   Plural(cpus.size(), "allowed CPU", "allowed CPUs"), " (",
                   arch::FormatCpuList(cpus),
                   ") is its own core, in package 0, NUMA node 0");
  return topology;
}

Topology LoadTopology(const std::vector<int>& allowed, bool force_fallback) {
  if (force_fallback) return FallbackTopology(allowed, "fallback forced");
  absl::StatusOr<Topology> topology = LoadHwlocTopology(allowed);
  if (topology.ok()) return *std::move(topology);
  static std::once_flag reported;
  std::call_once(reported, [&] {
    absl::FPrintF(stderr,
                  "haltpool: hwloc topology unavailable (%s); assuming each "
                  "allowed CPU is its own core\n",
                  topology.status().ToString());
  });
  return FallbackTopology(allowed, topology.status().ToString());
}

std::vector<WorkerPlacement> PlanPlacement(const Topology& topology,
                                           int workers, PinMode mode) {
  std::vector<WorkerPlacement> plan;
  if (workers <= 0) return plan;
  std::vector<CpuInfo> cpus = topology.cpus;
  std::sort(cpus.begin(), cpus.end(), [](const CpuInfo& a, const CpuInfo& b) {
    return a.os_index < b.os_index;
  });
  plan.reserve(workers);

  if (mode == PinMode::kNone || cpus.empty()) {
    std::vector<int> all;
    std::set<int> nodes;
    for (const CpuInfo& cpu : cpus) {
      all.push_back(cpu.os_index);
      nodes.insert(cpu.numa_node);
    }
    const int node = nodes.size() == 1 ? *nodes.begin() : -1;
    for (int w = 0; w < workers; ++w) {
      plan.push_back(WorkerPlacement{w, std::nullopt, all, node});
    }
    return plan;
  }

  const std::vector<Core> cores = CollectCores(cpus);
  const std::vector<int> order = SpreadOrder(cores);
  if (mode == PinMode::kCore) {
    for (int w = 0; w < workers; ++w) {
      const Core& core = cores[order[w % order.size()]];
      plan.push_back(
          WorkerPlacement{w, core.pus.front(), core.pus, core.numa_node});
    }
    return plan;
  }

  // kPu: every core's first PU in spread order, then every second PU, ...
  std::vector<std::pair<int, int>> pus;  // (os_index, numa_node)
  for (size_t round = 0; pus.size() < cpus.size(); ++round) {
    for (int c : order) {
      if (round < cores[c].pus.size()) {
        pus.emplace_back(cores[c].pus[round], cores[c].numa_node);
      }
    }
  }
  for (int w = 0; w < workers; ++w) {
    const auto& [cpu, node] = pus[w % pus.size()];
    plan.push_back(WorkerPlacement{w, cpu, {cpu}, node});
  }
  return plan;
}

absl::Status ApplyPlacement(const WorkerPlacement& placement) {
  if (!placement.os_cpu.has_value() && !placement.confined) {
    return absl::OkStatus();
  }
  if (placement.cpu_set.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker ", placement.worker,
                     ": pinned placement with an empty CPU set"));
  }
  const absl::Status pinned = arch::SetThreadCpus(placement.cpu_set);
  if (!pinned.ok()) {
    return absl::Status(pinned.code(), absl::StrCat("worker ", placement.worker,
                                                    ": ", pinned.message()));
  }
  return absl::OkStatus();
}

}  // namespace haltpool
