// CPU topology and worker placement (runtime/topology.h): pin-mode names,
// placement plans on hand-built topologies (SMT, several packages, NUMA
// nodes inside a package), hwloc on this machine and the flat fallback, and
// that ApplyPlacement really changes a thread's affinity.

#include "runtime/topology.h"

#include <sched.h>

#include <algorithm>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "arch/thread_affinity.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace haltpool {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Whether runtime/topology.cc was built with hwloc: tools/cross-test builds
// it with HALTPOOL_WITHOUT_HWLOC, where the tests that read hwloc's view of
// this machine skip and LoadHwlocTopology must say it has no hwloc.
#ifdef HALTPOOL_WITHOUT_HWLOC
constexpr bool kBuiltWithHwloc = false;
#else
constexpr bool kBuiltWithHwloc = true;
#endif
constexpr char kNoHwlocReason[] =
    "built with HALTPOOL_WITHOUT_HWLOC: no hwloc topology to test";

// Two packages x two cores x two SMT threads, each package its own NUMA
// node, numbered siblings-adjacent (as AMD and many VMs do): core c has PUs
// 2c and 2c+1; package 0 has cores 0-1 (PUs 0-3), package 1 cores 2-3.
Topology TwoByTwoByTwoAdjacent() {
  Topology t;
  for (int cpu = 0; cpu < 8; ++cpu) {
    t.cpus.push_back(CpuInfo{.os_index = cpu,
                             .core = cpu / 2,
                             .package = cpu / 4,
                             .numa_node = cpu / 4});
  }
  return t;
}

// The same machine numbered as Linux numbers Intel: first threads of every
// core (package 0: 0-1, package 1: 2-3), then their siblings (4-7).
Topology TwoByTwoByTwoIntel() {
  Topology t;
  for (int cpu = 0; cpu < 8; ++cpu) {
    const int core = cpu % 4;
    t.cpus.push_back(CpuInfo{.os_index = cpu,
                             .core = core,
                             .package = core / 2,
                             .numa_node = core / 2});
  }
  return t;
}

// The CPU sets of a plan, in worker order.
std::vector<std::vector<int>> Sets(const std::vector<WorkerPlacement>& plan) {
  std::vector<std::vector<int>> sets;
  for (const WorkerPlacement& p : plan) sets.push_back(p.cpu_set);
  return sets;
}

std::vector<int> HomeCpus(const std::vector<WorkerPlacement>& plan) {
  std::vector<int> cpus;
  for (const WorkerPlacement& p : plan) cpus.push_back(p.os_cpu.value_or(-1));
  return cpus;
}

std::vector<int> ThreadAffinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

TEST(PinModeTest, NamesRoundTrip) {
  for (PinMode mode : {PinMode::kNone, PinMode::kCore, PinMode::kPu}) {
    const std::optional<PinMode> parsed = kPinModes.Parse(PinModeName(mode));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, mode);
  }
  EXPECT_EQ(PinModeName(PinMode::kCore), "core");
  EXPECT_EQ(kPinModes.Names(), "none|core|pu");
}

TEST(PinModeTest, BadNamesAreNoNames) {
  for (absl::string_view bad :
       {"", "Core", "PU", "cores", "numa", "socket", " core", "core "}) {
    EXPECT_FALSE(kPinModes.Parse(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(PlanPlacementTest, CoreSpreadsOverCoresAndPackagesBeforeDoubling) {
  const std::vector<WorkerPlacement> plan =
      PlanPlacement(TwoByTwoByTwoAdjacent(), 6, PinMode::kCore);
  ASSERT_EQ(plan.size(), 6u);
  // Alternating packages: core 0 (pkg 0), core 2 (pkg 1), core 1, core 3;
  // then it wraps.
  EXPECT_THAT(Sets(plan), ElementsAre(ElementsAre(0, 1), ElementsAre(4, 5),
                                      ElementsAre(2, 3), ElementsAre(6, 7),
                                      ElementsAre(0, 1), ElementsAre(4, 5)));
  EXPECT_THAT(HomeCpus(plan), ElementsAre(0, 4, 2, 6, 0, 4));
  for (int w = 0; w < 6; ++w) {
    EXPECT_EQ(plan[w].worker, w);
    EXPECT_EQ(plan[w].numa_node, plan[w].cpu_set[0] / 4);
  }
}

TEST(PlanPlacementTest, CoreFourWorkersGetFourDistinctCoresOnBothPackages) {
  for (const Topology& t : {TwoByTwoByTwoAdjacent(), TwoByTwoByTwoIntel()}) {
    const std::vector<WorkerPlacement> plan =
        PlanPlacement(t, 4, PinMode::kCore);
    std::set<int> cores;
    std::vector<int> per_package(2);
    for (const WorkerPlacement& p : plan) {
      ASSERT_EQ(p.cpu_set.size(), 2u);  // Both SMT threads of the core.
      const CpuInfo& info = t.cpus[p.cpu_set[0]];
      cores.insert(info.core);
      ++per_package[info.package];
      // The set is one core's PUs.
      EXPECT_EQ(t.cpus[p.cpu_set[1]].core, info.core);
    }
    EXPECT_EQ(cores.size(), 4u);
    EXPECT_THAT(per_package, ElementsAre(2, 2));
    // The first two workers already sit on different packages.
    EXPECT_NE(t.cpus[plan[0].cpu_set[0]].package,
              t.cpus[plan[1].cpu_set[0]].package);
  }
}

TEST(PlanPlacementTest, CoreIntelNumberingKeepsSiblingsTogether) {
  const std::vector<WorkerPlacement> plan =
      PlanPlacement(TwoByTwoByTwoIntel(), 4, PinMode::kCore);
  EXPECT_THAT(Sets(plan), ElementsAre(ElementsAre(0, 4), ElementsAre(2, 6),
                                      ElementsAre(1, 5), ElementsAre(3, 7)));
}

TEST(PlanPlacementTest, PuTakesFirstThreadsBeforeSiblingsThenWraps) {
  const std::vector<WorkerPlacement> plan =
      PlanPlacement(TwoByTwoByTwoAdjacent(), 10, PinMode::kPu);
  EXPECT_THAT(HomeCpus(plan), ElementsAre(0, 4, 2, 6, 1, 5, 3, 7, 0, 4));
  for (const WorkerPlacement& p : plan) {
    EXPECT_THAT(p.cpu_set, ElementsAre(*p.os_cpu));
    EXPECT_EQ(p.numa_node, *p.os_cpu / 4);
  }
  // The first four use four distinct cores.
  std::set<int> cores;
  for (int w = 0; w < 4; ++w) cores.insert(*plan[w].os_cpu / 2);
  EXPECT_EQ(cores.size(), 4u);
}

TEST(PlanPlacementTest, PuIntelNumbering) {
  EXPECT_THAT(HomeCpus(PlanPlacement(TwoByTwoByTwoIntel(), 8, PinMode::kPu)),
              ElementsAre(0, 2, 1, 3, 4, 6, 5, 7));
}

TEST(PlanPlacementTest, SpreadsOverNumaNodesWithinAPackage) {
  // One package split into two NUMA nodes (sub-NUMA clustering): cores 0-1
  // on node 0, cores 2-3 on node 1, no SMT.
  Topology t;
  for (int cpu = 0; cpu < 4; ++cpu) {
    t.cpus.push_back(CpuInfo{
        .os_index = cpu, .core = cpu, .package = 0, .numa_node = cpu / 2});
  }
  const std::vector<WorkerPlacement> plan = PlanPlacement(t, 4, PinMode::kCore);
  EXPECT_THAT(HomeCpus(plan), ElementsAre(0, 2, 1, 3));
  EXPECT_EQ(plan[0].numa_node, 0);
  EXPECT_EQ(plan[1].numa_node, 1);
}

TEST(PlanPlacementTest, UnevenPackages) {
  // Package 0 keeps three cores, package 1 one (an affinity mask cut it).
  Topology t;
  for (int cpu : {0, 1, 2, 5}) {
    t.cpus.push_back(CpuInfo{.os_index = cpu,
                             .core = cpu,
                             .package = cpu / 4,
                             .numa_node = cpu / 4});
  }
  EXPECT_THAT(HomeCpus(PlanPlacement(t, 5, PinMode::kCore)),
              ElementsAre(0, 5, 1, 2, 0));
}

TEST(PlanPlacementTest, NoneIsUnpinnedOnEveryCpu) {
  const std::vector<WorkerPlacement> plan =
      PlanPlacement(TwoByTwoByTwoAdjacent(), 3, PinMode::kNone);
  ASSERT_EQ(plan.size(), 3u);
  for (int w = 0; w < 3; ++w) {
    EXPECT_EQ(plan[w].worker, w);
    EXPECT_FALSE(plan[w].os_cpu.has_value());
    EXPECT_THAT(plan[w].cpu_set, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
    EXPECT_EQ(plan[w].numa_node, -1);  // Two nodes: no single one.
  }
  const std::vector<WorkerPlacement> one_node =
      PlanPlacement(FallbackTopology({0, 1}, "test"), 1, PinMode::kNone);
  EXPECT_EQ(one_node[0].numa_node, 0);
}

TEST(PlanPlacementTest, NoWorkersAndNoCpus) {
  EXPECT_THAT(PlanPlacement(TwoByTwoByTwoAdjacent(), 0, PinMode::kCore),
              IsEmpty());
  EXPECT_THAT(PlanPlacement(TwoByTwoByTwoAdjacent(), -3, PinMode::kPu),
              IsEmpty());
  const std::vector<WorkerPlacement> plan =
      PlanPlacement(Topology{}, 2, PinMode::kCore);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_FALSE(plan[1].os_cpu.has_value());
  EXPECT_THAT(plan[1].cpu_set, IsEmpty());
  EXPECT_EQ(plan[1].numa_node, -1);
}

TEST(PlanPlacementTest, FallbackMakesEveryCpuItsOwnCore) {
  const Topology t = FallbackTopology({3, 1, 2, 1}, "test");
  EXPECT_THAT(HomeCpus(PlanPlacement(t, 4, PinMode::kCore)),
              ElementsAre(1, 2, 3, 1));
  EXPECT_THAT(Sets(PlanPlacement(t, 3, PinMode::kCore)),
              ElementsAre(ElementsAre(1), ElementsAre(2), ElementsAre(3)));
  EXPECT_THAT(HomeCpus(PlanPlacement(t, 4, PinMode::kPu)),
              ElementsAre(1, 2, 3, 1));
}

TEST(FallbackTopologyTest, SaysHwlocWasNotUsedAndWhy) {
  const Topology t = FallbackTopology({1, 0}, "no hwloc in this build");
  EXPECT_FALSE(t.from_hwloc);
  ASSERT_EQ(t.cpus.size(), 2u);
  EXPECT_EQ(t.cpus[0].os_index, 0);
  EXPECT_EQ(t.cpus[1].core, 1);
  EXPECT_EQ(t.cpus[1].package, 0);
  EXPECT_EQ(t.cpus[1].numa_node, 0);
  EXPECT_THAT(t.note, AllOf(HasSubstr("hwloc not used"),
                            HasSubstr("no hwloc in this build"),
                            HasSubstr("2 allowed CPUs (0-1)")));
}

TEST(LoadTopologyTest, HwlocOnThisMachine) {
  if (!kBuiltWithHwloc) GTEST_SKIP() << kNoHwlocReason;
  const std::vector<int> allowed = arch::ThreadCpus();
  ASSERT_FALSE(allowed.empty());
  const Topology t = LoadTopology(allowed);
  std::cout << "this machine: " << t.note << "\n";
  EXPECT_TRUE(t.from_hwloc) << t.note;
  ASSERT_EQ(t.cpus.size(), allowed.size());
  std::set<int> cores;
  for (size_t i = 0; i < allowed.size(); ++i) {
    EXPECT_EQ(t.cpus[i].os_index, allowed[i]);
    EXPECT_GE(t.cpus[i].core, 0);
    EXPECT_GE(t.cpus[i].package, 0);
    EXPECT_GE(t.cpus[i].numa_node, 0);
    cores.insert(t.cpus[i].core);
  }
  EXPECT_THAT(t.note, HasSubstr("hwloc 2."));
  // Every worker of a kCore plan gets a whole core, and the first
  // cores.size() workers get distinct ones.
  const std::vector<WorkerPlacement> plan =
      PlanPlacement(t, static_cast<int>(cores.size()), PinMode::kCore);
  std::set<std::vector<int>> sets;
  for (const WorkerPlacement& p : plan) sets.insert(p.cpu_set);
  EXPECT_EQ(sets.size(), cores.size());
}

TEST(LoadTopologyTest, NarrowerAllowedSetKeepsOnlyThoseCpus) {
  if (!kBuiltWithHwloc) GTEST_SKIP() << kNoHwlocReason;
  const std::vector<int> allowed = arch::ThreadCpus();
  ASSERT_FALSE(allowed.empty());
  absl::StatusOr<Topology> t = LoadHwlocTopology({allowed.back()});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->cpus.size(), 1u);
  EXPECT_EQ(t->cpus[0].os_index, allowed.back());
  EXPECT_THAT(t->note, HasSubstr("1 allowed CPU ("));
}

TEST(LoadTopologyTest, HwlocRejectsUnknownAndEmpty) {
  if (!kBuiltWithHwloc) GTEST_SKIP() << kNoHwlocReason;
  absl::StatusOr<Topology> unknown = LoadHwlocTopology({0, 100000});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("CPU 100000"));
  EXPECT_EQ(LoadHwlocTopology({}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LoadTopologyTest, ForcedFallbackIsFlatAndSilent) {
  testing::internal::CaptureStderr();
  const Topology t = LoadTopology({0, 1}, /*force_fallback=*/true);
  EXPECT_THAT(testing::internal::GetCapturedStderr(), IsEmpty());
  EXPECT_FALSE(t.from_hwloc);
  EXPECT_THAT(t.note,
              AllOf(HasSubstr("hwloc not used"), HasSubstr("fallback forced")));
  EXPECT_EQ(t.cpus.size(), 2u);
}

TEST(LoadTopologyTest, HwlocFailureFallsBackAndReportsAtMostOnce) {
  if (!kBuiltWithHwloc) GTEST_SKIP() << kNoHwlocReason;
  // CPU 100000 is unknown to hwloc, so both calls fall back. The report is
  // once per process: this is the only test that triggers it, so it shows
  // once here (at most once if tests are repeated in one process).
  testing::internal::CaptureStderr();
  const Topology a = LoadTopology({0, 100000});
  const Topology b = LoadTopology({0, 100000});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(a.from_hwloc);
  EXPECT_FALSE(b.from_hwloc);
  EXPECT_THAT(a.note,
              AllOf(HasSubstr("hwloc not used"), HasSubstr("CPU 100000")));
  EXPECT_EQ(a.cpus.size(), 2u);
  const std::string report = "haltpool: hwloc topology unavailable";
  size_t count = 0;
  for (size_t at = err.find(report); at != std::string::npos;
       at = err.find(report, at + 1)) {
    ++count;
  }
  EXPECT_LE(count, 1u) << err;
  std::cout << "stderr of both calls: " << err;
}

TEST(LoadTopologyTest, BuildWithoutHwlocFallsBackAndSaysSo) {
  if (kBuiltWithHwloc) GTEST_SKIP() << "this build has hwloc";
  const absl::StatusOr<Topology> direct = LoadHwlocTopology({0});
  EXPECT_EQ(direct.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(direct.status().message(), HasSubstr("no hwloc in this build"));
  const std::vector<int> allowed = arch::ThreadCpus();
  ASSERT_FALSE(allowed.empty());
  const Topology t = LoadTopology(allowed);
  EXPECT_FALSE(t.from_hwloc);
  EXPECT_THAT(t.note, AllOf(HasSubstr("hwloc not used"),
                            HasSubstr("no hwloc in this build")));
  ASSERT_EQ(t.cpus.size(), allowed.size());
  for (size_t i = 0; i < allowed.size(); ++i) {
    EXPECT_EQ(t.cpus[i].os_index, allowed[i]);
  }
}

TEST(ApplyPlacementTest, PuPlacementPinsTheThreadToExactlyThatCpu) {
  const std::vector<int> allowed = arch::ThreadCpus();
  if (std::find(allowed.begin(), allowed.end(), 0) == allowed.end()) {
    GTEST_SKIP() << "CPU 0 is not in the affinity mask ("
                 << arch::FormatCpuList(allowed) << ")";
  }
  const std::vector<WorkerPlacement> plan =
      PlanPlacement(FallbackTopology({0}, "test"), 1, PinMode::kPu);
  ASSERT_EQ(plan.size(), 1u);
  ASSERT_EQ(plan[0].os_cpu, 0);
  absl::Status status;
  std::vector<int> after;
  int ran_on = -1;
  std::thread worker([&] {
    status = ApplyPlacement(plan[0]);
    after = ThreadAffinity();
    ran_on = sched_getcpu();
  });
  worker.join();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_THAT(after, ElementsAre(0));
  EXPECT_EQ(ran_on, 0);
  // Only that thread moved.
  EXPECT_THAT(ThreadAffinity(), ElementsAreArray(allowed));
}

TEST(ApplyPlacementTest, CorePlacementOnThisMachine) {
  const Topology t = LoadTopology(arch::ThreadCpus());
  const int workers = static_cast<int>(t.cpus.size());
  for (const WorkerPlacement& p : PlanPlacement(t, workers, PinMode::kCore)) {
    absl::Status status;
    std::vector<int> after;
    std::thread worker([&] {
      status = ApplyPlacement(p);
      after = ThreadAffinity();
    });
    worker.join();
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(after, p.cpu_set);
  }
}

TEST(ApplyPlacementTest, NoneLeavesTheMaskAlone) {
  const std::vector<int> allowed = arch::ThreadCpus();
  const std::vector<WorkerPlacement> plan =
      PlanPlacement(FallbackTopology({0}, "test"), 1, PinMode::kNone);
  std::vector<int> after;
  absl::Status status;
  std::thread worker([&] {
    status = ApplyPlacement(plan[0]);
    after = ThreadAffinity();
  });
  worker.join();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(after, allowed);
}

TEST(ApplyPlacementTest, ErrorsNameTheCpuSetAndErrno) {
  // A CPU beyond any real machine's: the kernel rejects a mask with no
  // usable CPU with EINVAL.
  WorkerPlacement bad{.worker = 3, .os_cpu = 4000, .cpu_set = {4000, 4001}};
  absl::Status status;
  std::thread worker([&] { status = ApplyPlacement(bad); });
  worker.join();
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("worker 3"), HasSubstr("4000-4001"),
                    HasSubstr("Invalid argument")));

  WorkerPlacement empty{.worker = 1, .os_cpu = 0, .cpu_set = {}};
  EXPECT_EQ(ApplyPlacement(empty).code(), absl::StatusCode::kInvalidArgument);
  WorkerPlacement negative{.worker = 1, .os_cpu = -1, .cpu_set = {-1}};
  EXPECT_EQ(ApplyPlacement(negative).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace haltpool
