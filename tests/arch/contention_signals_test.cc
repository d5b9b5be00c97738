// The contention readers (arch/contention_signals.h): procs_running and the
// cpu line parsed from /proc/stat contents, fed whole, through SystemFiles
// and in pieces of every size; refused when missing or malformed; the real
// file read without allocating; the thread's involuntary switches.

#include "arch/contention_signals.h"

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "arch/hypervisor.h"
#include "arch/system_files.h"
#include "gtest/gtest.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_allocations{0};
}  // namespace

// Every allocation in the test passes through here.
void* operator new(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace haltpool::arch {
namespace {

constexpr char kProcStat[] =
    "cpu  4705 356 584 3699 23 23 0 17 5 0\n"
    "cpu0 1393 280 283 1847 3 0 0 9 0 0\n"
    "intr 114930548 113199788 3 0 5 263 0 4 [... 23 more]\n"
    "ctxt 1990473\n"
    "btime 1062191376\n"
    "processes 2915\n"
    "procs_running 3\n"
    "procs_blocked 0\n";

// kProcStat with an intr line of `numbers` counts, as on a large machine.
std::string WithLongIntrLine(int numbers) {
  std::string intr = "intr 114930548";
  for (int i = 0; i < numbers; ++i) absl::StrAppend(&intr, " ", i * 7919);
  return absl::StrCat("cpu  4705 356 584 3699 23 23 0 17 5 0\n",
                      "cpu0 1393 280 283 1847 3 0 0 9 0 0\n", intr,
                      "\nctxt 1990473\nprocs_running 5\nprocs_blocked 1\n");
}

TEST(ContentionSignals, ProcsRunningFromProcStat) {
  absl::StatusOr<int64_t> n = ParseProcsRunning(kProcStat);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 3);
}

TEST(ContentionSignals, MissingOrBadProcsRunningIsAnError) {
  for (const std::string& bad :
       {std::string("cpu  1 2 3 4 5 6 7 8\n"), std::string("procs_running x\n"),
        std::string("procs_running -2\n"), std::string("")}) {
    absl::StatusOr<int64_t> n = ParseProcsRunning(bad);
    ASSERT_FALSE(n.ok()) << bad;
    EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(n.status().message().find("/proc/stat"), std::string::npos);
  }
}

TEST(ContentionSignals, BothSignalsFromOneRead) {
  absl::StatusOr<ProcStatSignals> s = ParseProcStatSignals(kProcStat);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->steal_ticks, 17u);
  EXPECT_EQ(s->total_ticks, 4705u + 356 + 584 + 3699 + 23 + 23 + 0 + 17);
  EXPECT_EQ(s->procs_running, 3);
  // The same ticks as the hypervisor layer's reading of the cpu line.
  absl::StatusOr<CpuTimes> t = ParseProcStat(kProcStat);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(s->steal_ticks, t->steal);
  EXPECT_EQ(s->total_ticks, t->Total());
}

TEST(ContentionSignals, ReadThroughInjectedFiles) {
  FakeSystemFiles files({{"/proc/stat", kProcStat}});
  absl::StatusOr<ProcStatSignals> s = ReadProcStatSignals(files);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->procs_running, 3);
  EXPECT_EQ(s->steal_ticks, 17u);
  EXPECT_EQ(ReadProcStatSignals(FakeSystemFiles()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ContentionSignals, AnyChunkingGivesTheSameReading) {
  const std::string content = WithLongIntrLine(3000);  // About 15 KiB.
  ASSERT_GT(content.size(), 8192u);
  absl::StatusOr<ProcStatSignals> whole = ParseProcStatSignals(content);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->procs_running, 5);
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64},
                       size_t{255}, size_t{256}, size_t{257}, size_t{4096}}) {
    ProcStatScanner scanner;
    for (size_t at = 0; at < content.size(); at += chunk) {
      scanner.Feed(absl::string_view(content).substr(at, chunk));
    }
    ProcStatSignals s;
    ASSERT_TRUE(scanner.Finish(s)) << chunk << ": " << scanner.problem();
    EXPECT_EQ(s.steal_ticks, whole->steal_ticks) << chunk;
    EXPECT_EQ(s.total_ticks, whole->total_ticks) << chunk;
    EXPECT_EQ(s.procs_running, whole->procs_running) << chunk;
  }
}

TEST(ContentionSignals, ALastLineWithoutNewlineCounts) {
  absl::StatusOr<ProcStatSignals> s =
      ParseProcStatSignals("cpu  1 2 3 4 5 6 7 8\nprocs_running 4");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->procs_running, 4);
  EXPECT_EQ(s->total_ticks, 36u);
}

TEST(ContentionSignals, BadContentIsRefusedAsTheOtherParsersRefuseIt) {
  struct Case {
    std::string content;
    std::string problem;
  };
  const Case cases[] = {
      {"cpu0 1 2 3 4 5 6 7 8\nprocs_running 1\n", "no 'cpu ' line"},
      {"cpu  1 2 3 4 5 6 7\nprocs_running 1\n", "eight values"},
      {"cpu  1 2 3 x 5 6 7 8\nprocs_running 1\n", "not a number"},
      {"cpu  1 2 3 4 5 6 7 8 9 y\nprocs_running 1\n", "not a number"},
      {"cpu  1 2 3 4 5 6 7 8\n", "no procs_running line"},
      {"cpu  1 2 3 4 5 6 7 8\nprocs_running many\n", "not a count"},
      {"", "no 'cpu ' line"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ProcStatSignals> s = ParseProcStatSignals(c.content);
    ASSERT_FALSE(s.ok()) << c.content;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find("/proc/stat"), std::string::npos);
    EXPECT_NE(s.status().message().find(c.problem), std::string::npos)
        << s.status();
    // The string parsers refuse it too.
    EXPECT_FALSE(ParseProcStat(c.content).ok() &&
                 ParseProcsRunning(c.content).ok())
        << c.content;
  }
}

TEST(ContentionSignals, StealFractionOfTwoReadings) {
  ProcStatSignals a{.steal_ticks = 10, .total_ticks = 1000};
  ProcStatSignals b{.steal_ticks = 60, .total_ticks = 1200};
  EXPECT_DOUBLE_EQ(StealFraction(a, b), 0.25);
  EXPECT_EQ(StealFraction(a, a), 0.0);  // No tick passed.
  EXPECT_EQ(StealFraction(b, a), 0.0);  // Backwards.
}

TEST(ContentionSignals, TheRealProcStatHasIt) {
  absl::StatusOr<std::string> stat = RealSystemFiles().Read("/proc/stat");
  ASSERT_TRUE(stat.ok()) << stat.status();
  absl::StatusOr<int64_t> n = ParseProcsRunning(*stat);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_GE(*n, 1);  // This thread is running.
}

TEST(ContentionSignals, TheRealFileReadsWithoutAllocating) {
  ProcStatSignals before, after;
  ASSERT_TRUE(ReadProcStatSignalsNoAlloc(before));  // Warm: first-use costs.
  g_allocations.store(0);
  g_counting.store(true);
  const bool ok = ReadProcStatSignalsNoAlloc(after);
  const int64_t switches = ThreadInvoluntarySwitches();
  g_counting.store(false);
  ASSERT_TRUE(ok);
  EXPECT_EQ(g_allocations.load(), 0u);
  EXPECT_GE(switches, 0);
  EXPECT_GE(after.procs_running, 1);
  EXPECT_GT(after.total_ticks, 0u);
  EXPECT_GE(after.total_ticks, before.total_ticks);
  EXPECT_GE(after.steal_ticks, before.steal_ticks);
  // The same file as the allocating reader sees, a moment later.
  absl::StatusOr<ProcStatSignals> later =
      ReadProcStatSignals(RealSystemFiles());
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_GE(later->total_ticks, after.total_ticks);
}

TEST(ContentionSignals, InvoluntarySwitchesNeverGoBack) {
  const int64_t a = ThreadInvoluntarySwitches();
  const int64_t b = ThreadInvoluntarySwitches();
  EXPECT_GE(a, 0);
  EXPECT_GE(b, a);
}

}  // namespace
}  // namespace haltpool::arch
