// bench/pipe end to end, as a user runs it: perf's output lines, both
// transports and task modes, every governor, bad options and bad variables.
// Small loop counts; nothing here asserts a speed.

#include <stdio.h>
#include <sys/wait.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace {

std::string g_pipe;

struct RunResult {
  int status;
  std::string output;  // stdout and stderr.
};

RunResult Exec(const std::string& env, const std::string& args) {
  const std::string cmd = absl::StrCat("env -u HALTPOOL_GOVERNOR ", env, " ",
                                       g_pipe, " ", args, " 2>&1");
  FILE* f = popen(cmd.c_str(), "r");
  RunResult r{-1, ""};
  if (f == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
  const int st = pclose(f);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

bool Has(const RunResult& r, const std::string& s) {
  return r.output.find(s) != std::string::npos;
}

TEST(PipeCli, PrintsPerfsLinesForEveryTransportModeAndGovernor) {
  for (const char* governor : {"haltpoll", "predictive", "poll", "block", "fixed"}) {
    for (const char* transport : {"pipe", "parker"}) {
      for (const char* mode : {"", "-T"}) {
        const RunResult r =
            Exec(absl::StrCat("HALTPOOL_GOVERNOR=", governor),
                 absl::StrCat("-l 2000 ", mode, " --transport=", transport));
        SCOPED_TRACE(
            absl::StrCat(governor, " ", transport, " ", mode, "\n", r.output));
        EXPECT_EQ(r.status, 0);
        EXPECT_TRUE(Has(r, "# Running 'sched/pipe' benchmark:"));
        EXPECT_TRUE(
            Has(r, absl::StrCat("# Executed 2000 pipe operations between two ",
                                *mode ? "threads" : "processes")));
        EXPECT_TRUE(Has(r, "Total time: "));
        EXPECT_TRUE(Has(r, " usecs/op"));
        EXPECT_TRUE(Has(r, " ops/sec"));
        EXPECT_TRUE(Has(r, " cpu usecs/op (both sides"));
        EXPECT_TRUE(Has(r, absl::StrCat("governor=", governor)));
      }
    }
  }
}

TEST(PipeCli, StatsCountEveryWakeOfTheParkerTransport) {
  const RunResult r = Exec("HALTPOOL_GOVERNOR=haltpoll",
                           "-l 3000 -T --transport=parker --stats");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(Has(r, "Number of idle states: 2")) << r.output;
  EXPECT_TRUE(Has(r, "Available idle states: POLL BLOCK")) << r.output;
  // Each side receives exactly `loops` messages, each after one Unpark.
  int sides = 0;
  for (size_t at = r.output.find("Wakes: "); at != std::string::npos;
       at = r.output.find("Wakes: ", at + 1)) {
    unsigned long long polling = 0, running = 0, syscall = 0;
    ASSERT_EQ(sscanf(r.output.c_str() + at,
                     "Wakes: %llu while polling, %llu while running, %llu by",
                     &polling, &running, &syscall),
              3);
    EXPECT_EQ(polling + running + syscall, 3000u) << r.output;
    ++sides;
  }
  EXPECT_EQ(sides, 2) << r.output;
}

TEST(PipeCli, JsonStats) {
  const RunResult r = Exec("", "-l 500 --transport=parker --stats=json");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(Has(r, "{\"label\":\"side 0 (reads first)\"")) << r.output;
  EXPECT_TRUE(Has(r, "\"wakes\":{\"polling\":")) << r.output;
}

TEST(PipeCli, GapReportsLatencyAndCpu) {
  const RunResult r = Exec("", "-l 50 -T --transport=parker --gap-us=200");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(Has(r, "usecs mean wake latency (gap 200 us; p50 ")) << r.output;
  EXPECT_TRUE(Has(r, "% of a CPU used by the waiting side 0")) << r.output;
}

TEST(PipeCli, BadOptionsGetPerfStyleUsage) {
  for (const char* args :
       {"--bogus", "-l", "-l x", "--transport=udp", "--gap-us=-3"}) {
    const RunResult r = Exec("", args);
    SCOPED_TRACE(absl::StrCat(args, "\n", r.output));
    EXPECT_EQ(r.status, 129);
    EXPECT_TRUE(Has(r, "  Error: "));
    EXPECT_TRUE(Has(r, " Usage: pipe [<options>]"));
    EXPECT_FALSE(Has(r, "# Running"));
  }
}

TEST(PipeCli, BadVariablesStopBeforeAnyWork) {
  struct Case {
    const char* env;
    const char* message;
  };
  for (const Case& c : {
           Case{"HALTPOOL_GOVERNOR=fast",
                "HALTPOOL_GOVERNOR='fast': unknown governor"},
           Case{"HALTPOOL_POLL_NS=5x",
                "HALTPOOL_POLL_NS='5x': unknown unit 'x'"},
           Case{"HALTPOOL_POLL_NS=", "HALTPOOL_POLL_NS='': empty"},
           Case{"HALTPOOL_WAIT=mwait",
                "HALTPOOL_WAIT='mwait': unknown wait mechanism"},
           Case{"HALTPOOL_GOVENOR=poll",
                "HALTPOOL_GOVENOR='poll': not a haltpool variable"},
       }) {
    const RunResult r = Exec(c.env, "-l 10");
    SCOPED_TRACE(r.output);
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(Has(r, c.message));
    EXPECT_FALSE(Has(r, "# Running"));
  }
}

TEST(PipeCli, DisplayEnvShowsSources) {
  const RunResult r =
      Exec("HALTPOOL_DISPLAY_ENV=1 HALTPOOL_POLL_NS=100us "
           "HALTPOOL_HYPERVISOR=kvm-shared",
           "-l 10 -T");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(Has(r, "HALTPOOL DISPLAY ENVIRONMENT BEGIN")) << r.output;
  EXPECT_TRUE(Has(r, "HALTPOOL_POLL_NS = '100us'  [environment]")) << r.output;
  EXPECT_TRUE(Has(r, "HALTPOOL_GOVERNOR = 'predictive'  [profile]"))
      << r.output;
  EXPECT_TRUE(Has(r, "HALTPOOL_WAIT = 'auto'  [default]")) << r.output;
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc > 1) g_pipe = argv[1];
  return RUN_ALL_TESTS();
}
