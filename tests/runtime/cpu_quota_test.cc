// The usable-CPU count (runtime/cpu_quota.h) from injected affinity masks and
// fake cgroup files: cgroup v2 cpu.max with nesting, v1 CFS files, malformed
// files, and the explanation line; and the real mask of this machine. The
// file reader it stands on (arch/system_files.h) is tested in tests/arch.

#include "runtime/cpu_quota.h"

#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "arch/system_files.h"
#include "arch/thread_affinity.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace haltpool {
namespace {

using ::haltpool::arch::FakeSystemFiles;
using ::haltpool::arch::SystemFiles;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kProc[] = "/proc/self/cgroup";

CpuQuotaInput Cpus(std::vector<int> cpus) { return CpuQuotaInput{cpus}; }

// A pure cgroup v2 system with the process in /app.
FakeSystemFiles V2(absl::string_view cpu_max) {
  FakeSystemFiles files({{kProc, "0::/app\n"}});
  files.Set("/sys/fs/cgroup/app/cpu.max", cpu_max);
  return files;
}

CpuQuota Load(const CpuQuotaInput& input, const SystemFiles& files) {
  absl::StatusOr<CpuQuota> q = LoadCpuQuota(input, files);
  EXPECT_TRUE(q.ok()) << q.status();
  return q.ok() ? *q : CpuQuota{};
}

TEST(CpuQuotaV2, MaxIsNoQuota) {
  const CpuQuota q = Load(Cpus({0, 1}), V2("max 100000\n"));
  EXPECT_EQ(q.usable_cpus, 2);
  EXPECT_EQ(q.allowed_cpus, 2);
  EXPECT_FALSE(q.cgroup_limit.has_value());
  EXPECT_EQ(q.explanation, "2 CPUs: affinity mask 0-1, no cgroup quota");
}

TEST(CpuQuotaV2, HalfACpuCapsTwoAllowedToOne) {
  const CpuQuota q = Load(Cpus({0, 1}), V2("50000 100000\n"));
  EXPECT_EQ(q.usable_cpus, 1);
  ASSERT_TRUE(q.cgroup_limit.has_value());
  EXPECT_EQ(q.cgroup_limit->cgroup_version, 2);
  EXPECT_EQ(q.cgroup_limit->dir, "/sys/fs/cgroup/app");
  EXPECT_EQ(q.cgroup_limit->quota_us, 50000);
  EXPECT_EQ(q.cgroup_limit->period_us, 100000);
  EXPECT_EQ(q.explanation,
            "1 CPU: cgroup cpu.max 50000/100000 in /sys/fs/cgroup/app caps 2 "
            "allowed CPUs (affinity mask 0-1)");
}

TEST(CpuQuotaV2, FractionalQuotaRoundsUp) {
  // 1.5 CPUs' worth of time per period: two workers can run at once.
  const CpuQuota q = Load(Cpus({0, 1, 2, 3}), V2("150000 100000\n"));
  EXPECT_EQ(q.usable_cpus, 2);
  EXPECT_EQ(q.cgroup_limit->Cpus(), 2);
  EXPECT_THAT(q.explanation, HasSubstr("caps 4 allowed CPUs"));
}

TEST(CpuQuotaV2, QuotaAboveTheMaskDoesNotCap) {
  const CpuQuota q = Load(Cpus({0, 1}), V2("300000 100000\n"));
  EXPECT_EQ(q.usable_cpus, 2);
  ASSERT_TRUE(q.cgroup_limit.has_value());
  EXPECT_EQ(q.explanation,
            "2 CPUs: affinity mask 0-1; cgroup cpu.max 300000/100000 in "
            "/sys/fs/cgroup/app allows 3");
}

TEST(CpuQuotaV2, TinyQuotaStillGivesOneCpu) {
  const CpuQuota q = Load(Cpus({0, 1}), V2("1000 100000"));
  EXPECT_EQ(q.usable_cpus, 1);
}

TEST(CpuQuotaV2, SmallerParentQuotaBinds) {
  FakeSystemFiles files({{kProc, "0::/a/b\n"}});
  files.Set("/sys/fs/cgroup/a/b/cpu.max", "max 100000\n");
  files.Set("/sys/fs/cgroup/a/cpu.max", "100000 100000\n");
  const CpuQuota q = Load(Cpus({0, 1, 2, 3}), files);
  EXPECT_EQ(q.usable_cpus, 1);
  ASSERT_TRUE(q.cgroup_limit.has_value());
  EXPECT_EQ(q.cgroup_limit->dir, "/sys/fs/cgroup/a");
}

TEST(CpuQuotaV2, ComparesQuotaPerPeriodNotRawQuota) {
  // Leaf: 3 CPUs' worth; parent: 400000 per 200000, 2 CPUs' worth, though
  // its raw quota is the larger.
  FakeSystemFiles files({{kProc, "0::/a/b"}});
  files.Set("/sys/fs/cgroup/a/b/cpu.max", "300000 100000");
  files.Set("/sys/fs/cgroup/a/cpu.max", "400000 200000");
  const CpuQuota q = Load(Cpus({0, 1, 2, 3, 4, 5, 6, 7}), files);
  EXPECT_EQ(q.usable_cpus, 2);
  EXPECT_EQ(q.cgroup_limit->dir, "/sys/fs/cgroup/a");
}

TEST(CpuQuotaV2, SmallerLeafQuotaBinds) {
  FakeSystemFiles files({{kProc, "0::/a/b/"}});
  files.Set("/sys/fs/cgroup/a/b/cpu.max", "100000 100000");
  files.Set("/sys/fs/cgroup/a/cpu.max", "200000 100000");
  const CpuQuota q = Load(Cpus({0, 1, 2, 3}), files);
  EXPECT_EQ(q.usable_cpus, 1);
  EXPECT_EQ(q.cgroup_limit->dir, "/sys/fs/cgroup/a/b");
}

TEST(CpuQuotaV2, ContainerWithoutCgroupNamespaceFindsItsRoot) {
  // Docker without a cgroup namespace: /proc/self/cgroup names the host's
  // path, but the container's own cgroup is mounted at /sys/fs/cgroup.
  FakeSystemFiles files({{kProc, "0::/docker/0123abcd\n"}});
  files.Set("/sys/fs/cgroup/cpu.max", "200000 100000\n");
  const CpuQuota q = Load(Cpus({0, 1, 2, 3}), files);
  EXPECT_EQ(q.usable_cpus, 2);
  EXPECT_EQ(q.cgroup_limit->dir, "/sys/fs/cgroup");
}

TEST(CpuQuotaV2, MissingFilesMeanNoQuota) {
  FakeSystemFiles no_cpu_max({{kProc, "0::/app\n"}});
  EXPECT_EQ(Load(Cpus({0, 1}), no_cpu_max).explanation,
            "2 CPUs: affinity mask 0-1, no cgroup quota");
  FakeSystemFiles no_proc;
  const CpuQuota q = Load(Cpus({0, 1, 2}), no_proc);
  EXPECT_EQ(q.usable_cpus, 3);
  EXPECT_FALSE(q.cgroup_limit.has_value());
}

TEST(CpuQuotaV2, MalformedCpuMaxIsAnErrorNamingFileAndContent) {
  for (absl::string_view bad :
       {"abc", "abc\n", "50000", "max", "50000 0", "-1 100000",
        "50000 100000 7", "50000  100000", " 50000 100000", "0 100000",
        "max abc", "50000 99999999999999999999", ""}) {
    absl::StatusOr<CpuQuota> q = LoadCpuQuota(Cpus({0, 1}), V2(bad));
    ASSERT_FALSE(q.ok()) << "'" << bad << "'";
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(q.status().message(),
                AllOf(HasSubstr("/sys/fs/cgroup/app/cpu.max"),
                      HasSubstr(absl::StrCat(
                          "\"", absl::StripTrailingAsciiWhitespace(bad))),
                      HasSubstr("expected")))
        << "'" << bad << "'";
  }
}

TEST(CpuQuotaV2, MalformedContentIsEscapedAndCut) {
  const std::string long_junk(500, 'x');
  absl::StatusOr<CpuQuota> q =
      LoadCpuQuota(Cpus({0}), V2(absl::StrCat("\x01", long_junk)));
  ASSERT_FALSE(q.ok());
  EXPECT_THAT(q.status().message(), HasSubstr("\"\\x01xxx"));
  EXPECT_THAT(q.status().message(), HasSubstr("...\""));
  EXPECT_LT(q.status().message().size(), 300u);
}

TEST(CpuQuotaProcCgroup, MalformedLineIsAnError) {
  FakeSystemFiles files({{kProc, "garbage\n"}});
  absl::StatusOr<CpuQuota> q = LoadCpuQuota(Cpus({0}), files);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(q.status().message(),
              AllOf(HasSubstr("/proc/self/cgroup"), HasSubstr("garbage")));
}

TEST(CpuQuotaV1, CfsQuotaUnderCpuCpuacct) {
  FakeSystemFiles files({{kProc,
                          "12:pids:/docker/x\n"
                          "4:cpu,cpuacct:/docker/x\n"
                          "1:name=systemd:/docker/x\n"}});
  files.Set("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  files.Set("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  files.Set("/sys/fs/cgroup/cpu,cpuacct/docker/x/cpu.cfs_quota_us", "50000\n");
  files.Set("/sys/fs/cgroup/cpu,cpuacct/docker/x/cpu.cfs_period_us",
            "100000\n");
  const CpuQuota q = Load(Cpus({0, 1}), files);
  EXPECT_EQ(q.usable_cpus, 1);
  ASSERT_TRUE(q.cgroup_limit.has_value());
  EXPECT_EQ(q.cgroup_limit->cgroup_version, 1);
  EXPECT_EQ(q.explanation,
            "1 CPU: cgroup cpu.cfs_quota_us/cpu.cfs_period_us 50000/100000 in "
            "/sys/fs/cgroup/cpu,cpuacct/docker/x caps 2 allowed CPUs "
            "(affinity mask 0-1)");
}

TEST(CpuQuotaV1, CfsQuotaUnderCpuAloneAndNestedParent) {
  // This machine's layout: the cpu controller mounted alone, beside a
  // cgroup2 mount at unified/ that has no cpu controller.
  FakeSystemFiles files({{kProc, "1:cpu:/a/b\n0::/\n"}});
  files.Set("/sys/fs/cgroup/cpu/a/b/cpu.cfs_quota_us", "-1\n");
  files.Set("/sys/fs/cgroup/cpu/a/b/cpu.cfs_period_us", "100000\n");
  files.Set("/sys/fs/cgroup/cpu/a/cpu.cfs_quota_us", "250000\n");
  files.Set("/sys/fs/cgroup/cpu/a/cpu.cfs_period_us", "100000\n");
  files.Set("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n");
  files.Set("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
  const CpuQuota q = Load(Cpus({0, 1, 2, 3, 4, 5, 6, 7}), files);
  EXPECT_EQ(q.usable_cpus, 3);
  EXPECT_EQ(q.cgroup_limit->dir, "/sys/fs/cgroup/cpu/a");
}

TEST(CpuQuotaV1, MinusOneIsNoQuota) {
  FakeSystemFiles files({{kProc, "3:cpu,cpuacct:/\n"}});
  files.Set("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  files.Set("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  const CpuQuota q = Load(Cpus({0, 1}), files);
  EXPECT_EQ(q.usable_cpus, 2);
  EXPECT_FALSE(q.cgroup_limit.has_value());
}

TEST(CpuQuotaV1, MalformedFilesAreErrors) {
  const std::string dir = "/sys/fs/cgroup/cpu,cpuacct/app";
  for (auto [quota, period, bad_file] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"-2\n", "100000\n", "cpu.cfs_quota_us"},
           {"abc\n", "100000\n", "cpu.cfs_quota_us"},
           {"50000\n", "0\n", "cpu.cfs_period_us"},
           {"50000\n", "abc\n", "cpu.cfs_period_us"}}) {
    FakeSystemFiles files({{kProc, "4:cpu,cpuacct:/app\n"}});
    files.Set(dir + "/cpu.cfs_quota_us", quota);
    files.Set(dir + "/cpu.cfs_period_us", period);
    absl::StatusOr<CpuQuota> q = LoadCpuQuota(Cpus({0, 1}), files);
    ASSERT_FALSE(q.ok()) << quota << period;
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(q.status().message(), HasSubstr(dir + "/" + bad_file));
  }
}

TEST(CpuQuotaV1, HybridTakesTheTighterOfBoth) {
  FakeSystemFiles files({{kProc, "0::/svc\n2:cpu:/svc\n"}});
  files.Set("/sys/fs/cgroup/svc/cpu.max", "300000 100000\n");
  files.Set("/sys/fs/cgroup/cpu/svc/cpu.cfs_quota_us", "200000\n");
  files.Set("/sys/fs/cgroup/cpu/svc/cpu.cfs_period_us", "100000\n");
  const CpuQuota q = Load(Cpus({0, 1, 2, 3}), files);
  EXPECT_EQ(q.usable_cpus, 2);
  EXPECT_EQ(q.cgroup_limit->cgroup_version, 1);
}

TEST(CpuQuotaMask, NarrowAffinityCapsBelowTheQuota) {
  // A 2-CPU machine, the process pinned (taskset -c 1) to one: the quota of
  // two CPUs does not raise it.
  const CpuQuota q = Load(Cpus({1}), V2("200000 100000\n"));
  EXPECT_EQ(q.usable_cpus, 1);
  EXPECT_EQ(q.allowed_cpus, 1);
  EXPECT_EQ(q.explanation,
            "1 CPU: affinity mask 1; cgroup cpu.max 200000/100000 in "
            "/sys/fs/cgroup/app allows 2");
}

TEST(CpuQuotaMask, EmptyMaskStillGivesOne) {
  const CpuQuota q = Load(Cpus({}), FakeSystemFiles());
  EXPECT_EQ(q.usable_cpus, 1);
  EXPECT_EQ(q.allowed_cpus, 0);
  EXPECT_THAT(q.explanation, HasSubstr("affinity mask empty"));
}

TEST(CpuQuotaMask, DuplicatesCountOnce) {
  const CpuQuota q = Load(Cpus({3, 1, 3, 1}), FakeSystemFiles());
  EXPECT_EQ(q.usable_cpus, 2);
  EXPECT_EQ(q.explanation, "2 CPUs: affinity mask 1,3, no cgroup quota");
}

TEST(CpuQuotaReal, QuotaLoadsWithinTheAffinityMask) {
  const std::vector<int> cpus = arch::ThreadCpus();
  absl::StatusOr<CpuQuota> q = ProcessCpuQuota();
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_GE(q->usable_cpus, 1);
  EXPECT_LE(q->usable_cpus, static_cast<int>(cpus.size()));
  EXPECT_FALSE(q->explanation.empty());
  RecordProperty("explanation", q->explanation);
  std::cout << "this machine: " << q->explanation << "\n";
}

}  // namespace
}  // namespace haltpool
