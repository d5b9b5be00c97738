// The /proc/stat reader (arch/proc_stat.h) on files captured from real
// machines (tests/arch/testdata/: each machine's proc/stat, and proc-stat/
// for samples named after the kernel or machine they come from), fed whole
// and in pieces of every size; malformed content refused; the real file read
// without allocating.

#include "arch/proc_stat.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "arch/system_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/arch/allocation_counter.h"

namespace haltpool::arch {
namespace {

namespace fs = std::filesystem;

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A captured file, by its path under tests/arch/testdata/: next to this
// source file, which Bazel runs tests beside (relative __FILE__) and CMake
// and tools/cross-test compile by its absolute path.
std::string Captured(absl::string_view path) {
  const fs::path file =
      fs::path(__FILE__).parent_path() / "testdata" / std::string(path);
  std::ifstream in(file, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << file;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A small /proc/stat in the layout of proc(5).
constexpr char kSmall[] =
    "cpu  4705 356 584 3699 23 23 0 17 5 0\n"
    "cpu0 1393 280 283 1847 3 0 0 9 0 0\n"
    "intr 114930548 113199788 3 0 5 263 0 4 [... 23 more]\n"
    "ctxt 1990473\n"
    "btime 1062191376\n"
    "processes 2915\n"
    "procs_running 3\n"
    "procs_blocked 0\n";

// kSmall with an intr line of `numbers` counts, as on a large machine.
std::string WithLongIntrLine(int numbers) {
  std::string intr = "intr 114930548";
  for (int i = 0; i < numbers; ++i) absl::StrAppend(&intr, " ", i * 7919);
  return absl::StrCat("cpu  4705 356 584 3699 23 23 0 17 5 0\n",
                      "cpu0 1393 280 283 1847 3 0 0 9 0 0\n", intr,
                      "\nctxt 1990473\nprocs_running 5\nprocs_blocked 1\n");
}

TEST(ProcStatTest, ModernKernelWithGuestColumns) {
  // A KVM host: its guests' time in guest and guest_nice, already counted in
  // user and nice.
  absl::StatusOr<ProcStat> s =
      ParseProcStat(Captured("x86_64-bare-metal-epyc/proc/stat"));
  ASSERT_TRUE(s.ok()) << s.status();
  const CpuTimes& t = s->cpu;
  EXPECT_EQ(t.user, 77864106u);
  EXPECT_EQ(t.nice, 39526u);
  EXPECT_EQ(t.system, 5623241u);
  EXPECT_EQ(t.idle, 368088840u);
  EXPECT_EQ(t.iowait, 142504u);
  EXPECT_EQ(t.irq, 0u);
  EXPECT_EQ(t.softirq, 383834u);
  EXPECT_EQ(t.steal, 0u);
  EXPECT_EQ(t.guest, 73723981u);
  EXPECT_EQ(t.guest_nice, 9858u);
  EXPECT_EQ(t.Total(),
            77864106u + 39526u + 5623241u + 368088840u + 142504u + 383834u);
  ASSERT_FALSE(s->per_cpu.empty());
  EXPECT_EQ(s->per_cpu.front().cpu, 0);
  EXPECT_TRUE(s->procs_running.has_value());
  EXPECT_TRUE(s->procs_blocked.has_value());
}

TEST(ProcStatTest, OldKernelWithEightValues) {
  absl::StatusOr<ProcStat> s =
      ParseProcStat(Captured("proc-stat/linux-2.6.18"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->cpu.user, 353995u);
  EXPECT_EQ(s->cpu.softirq, 26073u);
  EXPECT_EQ(s->cpu.steal, 0u);
  EXPECT_EQ(s->cpu.guest, 0u);
  EXPECT_EQ(s->cpu.guest_nice, 0u);
  ASSERT_EQ(s->per_cpu.size(), 2u);
  EXPECT_EQ(s->per_cpu[1].cpu, 1);
  EXPECT_EQ(s->per_cpu[1].times.user, 171655u);
  EXPECT_EQ(s->per_cpu[0].times.user + s->per_cpu[1].times.user, 353995u);
  EXPECT_EQ(s->procs_running, 1);
  EXPECT_EQ(s->procs_blocked, 0);
}

TEST(ProcStatTest, EveryCapturedFileParses) {
  for (const char* path :
       {"aarch64-kvm-qemu/proc/stat", "s390x-zvm/proc/stat",
        "x86_64-bare-metal-epyc/proc/stat", "x86_64-kvm-shared-epyc/proc/stat",
        "proc-stat/linux-2.6.18", "proc-stat/s390x-zvm-10s-later"}) {
    const std::string content = Captured(path);
    absl::StatusOr<ProcStat> s = ParseProcStat(content);
    ASSERT_TRUE(s.ok()) << path << ": " << s.status();
    EXPECT_GT(s->cpu.Total(), 0u) << path;
    EXPECT_FALSE(s->per_cpu.empty()) << path;
    FakeSystemFiles files({{kProcStat, content}});
    absl::StatusOr<CpuTimes> cpu = ReadCpuTimes(files);
    ASSERT_TRUE(cpu.ok()) << path << ": " << cpu.status();
    EXPECT_EQ(cpu->Total(), s->cpu.Total()) << path;
  }
}

TEST(ProcStatTest, RejectsWhatIsNotAProcStat) {
  struct Bad {
    const char* content;
    const char* says;
  };
  for (const Bad& bad : {
           Bad{"", "no 'cpu ' line"},
           Bad{"cpu0 1 2 3 4 5 6 7 8\nintr 5\n", "no 'cpu ' line"},
           Bad{"intr 5\ncpu  1 2 3 4 5 6 7\n",
               "eight values up to steal (user nice system idle iowait irq "
               "softirq steal), or one is not a number: 'cpu  1 2 3 4 5 6 7'"},
           Bad{"cpu \n", "the cpu line lacks the eight values"},
           Bad{"cpu  1 2 3 x 5 6 7 8 9 10\n", "'cpu  1 2 3 x 5 6 7 8 9 10'"},
           Bad{"cpu  1 2 3 4 5 6 7 8 9 -1\n", "not a number"},
           Bad{"cpu  1 2 3 4 5 6 7 8\ncpu1 1 2\n", "a per-CPU line"},
           Bad{"cpu  1 2 3 4 5 6 7 8\nprocs_running many\n",
               "procs_running is not a count: 'procs_running many'"},
           Bad{"cpu  1 2 3 4 5 6 7 8\nprocs_running -2\n", "not a count"},
           Bad{"cpu  1 2 3 4 5 6 7 8\nprocs_blocked x\n",
               "procs_blocked is not a count"},
       }) {
    absl::StatusOr<ProcStat> s = ParseProcStat(bad.content);
    ASSERT_FALSE(s.ok()) << bad.content;
    EXPECT_TRUE(absl::IsInvalidArgument(s.status()));
    EXPECT_THAT(std::string(s.status().message()),
                AllOf(StartsWith("/proc/stat: "), HasSubstr(bad.says)));
  }
  EXPECT_TRUE(absl::IsNotFound(ReadProcStat(FakeSystemFiles()).status()));
  EXPECT_TRUE(absl::IsNotFound(ReadCpuTimes(FakeSystemFiles()).status()));
}

TEST(ProcStatTest, CountsAreOptional) {
  absl::StatusOr<ProcStat> s = ParseProcStat("cpu  1 2 3 4 5 6 7 8\n");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->procs_running.has_value());
  EXPECT_FALSE(s->procs_blocked.has_value());
  EXPECT_EQ(s->cpu.Total(), 36u);
}

TEST(ProcStatTest, ALastLineWithoutNewlineCounts) {
  absl::StatusOr<ProcStat> s =
      ParseProcStat("cpu  1 2 3 4 5 6 7 8\nprocs_running 4");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->procs_running, 4);
  EXPECT_EQ(s->cpu.Total(), 36u);
}

TEST(ProcStatTest, AnyChunkingGivesTheSameReading) {
  const std::string content = WithLongIntrLine(3000);  // About 15 KiB.
  ASSERT_GT(content.size(), 8192u);
  absl::StatusOr<ProcStat> whole = ParseProcStat(content);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->procs_running, 5);
  EXPECT_EQ(whole->procs_blocked, 1);
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64},
                       size_t{255}, size_t{256}, size_t{257}, size_t{4096}}) {
    for (bool per_cpu : {false, true}) {
      ProcStatScanner scanner(per_cpu);
      for (size_t at = 0; at < content.size(); at += chunk) {
        scanner.Feed(absl::string_view(content).substr(at, chunk));
      }
      ProcStat s;
      ASSERT_TRUE(scanner.Finish(s)) << chunk << ": " << scanner.problem();
      EXPECT_EQ(s.cpu.steal, whole->cpu.steal) << chunk;
      EXPECT_EQ(s.cpu.Total(), whole->cpu.Total()) << chunk;
      EXPECT_EQ(s.procs_running, whole->procs_running) << chunk;
      EXPECT_EQ(s.per_cpu.size(), per_cpu ? 1u : 0u) << chunk;
    }
  }
}

TEST(ProcStatTest, TheSmallExample) {
  absl::StatusOr<ProcStat> s = ParseProcStat(kSmall);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->cpu.steal, 17u);
  EXPECT_EQ(s->cpu.Total(), 4705u + 356 + 584 + 3699 + 23 + 23 + 0 + 17);
  EXPECT_EQ(s->procs_running, 3);
}

TEST(StealFractionTest, TwoReadingsOfAGuest) {
  // The z/VM guest's /proc/stat and the same file ten seconds later: 3999
  // ticks on four vCPUs, 520 of them stolen.
  absl::StatusOr<ProcStat> before =
      ParseProcStat(Captured("s390x-zvm/proc/stat"));
  absl::StatusOr<ProcStat> after =
      ParseProcStat(Captured("proc-stat/s390x-zvm-10s-later"));
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->cpu.Total() - before->cpu.Total(), 3999u);
  EXPECT_EQ(after->cpu.steal - before->cpu.steal, 520u);
  EXPECT_DOUBLE_EQ(StealFraction(before->cpu, after->cpu), 520.0 / 3999.0);

  // Backwards, or no time at all: 0.
  EXPECT_EQ(StealFraction(after->cpu, before->cpu), 0.0);
  EXPECT_EQ(StealFraction(before->cpu, before->cpu), 0.0);
}

TEST(StealFractionTest, CountersGoingBackwardsOrAllStolen) {
  CpuTimes a{.user = 100, .idle = 100, .steal = 50};
  CpuTimes b{.user = 200, .idle = 200, .steal = 40};  // steal went back
  EXPECT_EQ(StealFraction(a, b), 0.0);
  CpuTimes c{.user = 100, .idle = 100, .steal = 150};  // all stolen
  EXPECT_EQ(StealFraction(a, c), 1.0);
  CpuTimes d{.user = 150, .idle = 150, .steal = 50};
  EXPECT_DOUBLE_EQ(StealFraction(a, d), 0.0);
  CpuTimes e{.user = 100, .idle = 190, .steal = 60};
  EXPECT_DOUBLE_EQ(StealFraction(a, e), 0.1);
}

TEST(ProcStatTest, TheRealFileReadsWithoutAllocating) {
  ProcStat before, after;
  ASSERT_TRUE(ReadProcStatNoAlloc(before));  // Warm: first-use costs.
  g_allocations.store(0);
  g_counting.store(true);
  const bool ok = ReadProcStatNoAlloc(after);
  g_counting.store(false);
  ASSERT_TRUE(ok);
  EXPECT_EQ(g_allocations.load(), 0u);
  EXPECT_TRUE(after.per_cpu.empty());
  ASSERT_TRUE(after.procs_running.has_value());
  EXPECT_GE(*after.procs_running, 1);  // This thread is running.
  EXPECT_GT(after.cpu.Total(), 0u);
  EXPECT_GE(after.cpu.Total(), before.cpu.Total());
  EXPECT_GE(after.cpu.steal, before.cpu.steal);
  // The same file as the allocating reader sees, a moment later.
  absl::StatusOr<ProcStat> later = ReadProcStat(RealSystemFiles());
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_GE(later->cpu.Total(), after.cpu.Total());
  EXPECT_FALSE(later->per_cpu.empty());
}

}  // namespace
}  // namespace haltpool::arch
