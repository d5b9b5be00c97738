// ConfigFromEnvironmentOrExit as a program sees it: tests/runtime:
// config_probe is run (fork + execve, with an environment of the test's
// choosing and nothing else) and its exit status, stdout and stderr checked.
//
// The probe's path comes as the first argument (BUILD: args =
// ["$(rootpath :config_probe)"], relative to the runfiles directory that
// bazel test starts in).

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace haltpool {
namespace {

using ::testing::AllOf;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string g_probe;  // Set by main().

struct ProbeRun {
  bool exited = false;
  int status = -1;  // Exit status, or the signal if !exited.
  std::string out, err;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the probe with exactly `env` as its environment.
ProbeRun RunProbe(const std::vector<std::string>& env) {
  const char* tmp = getenv("TEST_TMPDIR");
  const std::string dir = tmp ? tmp : "/tmp";
  const std::string out_path = dir + "/probe_out." + std::to_string(getpid());
  const std::string err_path = dir + "/probe_err." + std::to_string(getpid());
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  char* argv[] = {const_cast<char*>(g_probe.c_str()), nullptr};
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0) _exit(126);
    dup2(out, 1);
    dup2(err, 2);
    execve(g_probe.c_str(), argv, envp.data());
    _exit(127);
  }
  ProbeRun r;
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid) {
    r.exited = WIFEXITED(status);
    r.status = r.exited ? WEXITSTATUS(status) : WTERMSIG(status);
  }
  r.out = ReadFile(out_path);
  r.err = ReadFile(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  return r;
}

TEST(ConfigProbe, IsThere) {
  ASSERT_FALSE(g_probe.empty())
      << "pass the probe's path as the first argument";
  struct stat st;
  ASSERT_EQ(stat(g_probe.c_str(), &st), 0) << g_probe;
  EXPECT_TRUE(st.st_mode & S_IXUSR) << g_probe;
}

TEST(ConfigProbe, CleanEnvironmentRuns) {
  const ProbeRun r = RunProbe({});
  ASSERT_TRUE(r.exited) << "signal " << r.status;
  EXPECT_EQ(r.status, 0) << r.err;
  // The governor is the profile's of the host the test runs on.
  EXPECT_THAT(r.out, AllOf(StartsWith("OK governor="), EndsWith("\n")));
  EXPECT_EQ(r.err, "");
}

TEST(ConfigProbe, TheHypervisorVariableChoosesTheProfile) {
  ProbeRun r = RunProbe({"HALTPOOL_HYPERVISOR=kvm-shared"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "OK governor=predictive\n");
  r = RunProbe({"HALTPOOL_HYPERVISOR=kvm-dedicated"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "OK governor=haltpoll\n");
}

TEST(ConfigProbe, GoodVariableIsUsed) {
  const ProbeRun r =
      RunProbe({"HALTPOOL_GOVERNOR=block", "PATH=/usr/bin:/bin"});
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "OK governor=block\n");
}

TEST(ConfigProbe, BadValueExitsWithStatus2AndSaysWhy) {
  const ProbeRun r = RunProbe({"HALTPOOL_POLL_NS=5x"});
  ASSERT_TRUE(r.exited) << "signal " << r.status;
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "") << "no work before the check";
  EXPECT_THAT(r.err,
              AllOf(StartsWith("haltpool: HALTPOOL_POLL_NS='5x': "),
                    HasSubstr("unknown unit 'x'"), HasSubstr("accepted: "),
                    HasSubstr("ns, us, ms or s")));
  EXPECT_EQ(r.err.back(), '\n');
}

TEST(ConfigProbe, UnknownVariableExitsWithStatus2) {
  const ProbeRun r = RunProbe({"HALTPOOL_POLLNS=200us"});
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err,
              AllOf(StartsWith("haltpool: "), HasSubstr("HALTPOOL_POLLNS"),
                    HasSubstr("HALTPOOL_POLL_NS")));
}

TEST(ConfigProbe, BadGovernorAndWait) {
  ProbeRun r = RunProbe({"HALTPOOL_GOVERNOR=menu"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("HALTPOOL_GOVERNOR='menu'"),
                           HasSubstr("haltpoll|predictive|poll|block|fixed")));
  r = RunProbe({"HALTPOOL_WAIT=mwait"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(
      r.err, AllOf(HasSubstr("HALTPOOL_WAIT='mwait'"), HasSubstr("auto|spin")));
}

TEST(ConfigProbe, DisplayEnvGoesToStderr) {
  const ProbeRun r =
      RunProbe({"HALTPOOL_DISPLAY_ENV=1", "HALTPOOL_GOVERNOR=poll",
                "HALTPOOL_HYPERVISOR=kvm-dedicated"});
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "OK governor=poll\n");
  EXPECT_THAT(r.err,
              AllOf(StartsWith("HALTPOOL DISPLAY ENVIRONMENT BEGIN\n"),
                    HasSubstr("  HALTPOOL_GOVERNOR = 'poll'  [environment]\n"),
                    HasSubstr("  HALTPOOL_DISPLAY_ENV = '1'  [environment]\n"),
                    HasSubstr("  HALTPOOL_POLL_NS = '200us'  [profile]\n"),
                    HasSubstr("  HALTPOOL_POLL_GROW = '2'  [default]\n"),
                    HasSubstr("  HALTPOOL_HYPERVISOR = 'kvm-dedicated'  "
                              "[environment]\n"),
                    HasSubstr("HALTPOOL DISPLAY ENVIRONMENT END\n")));
}

}  // namespace
}  // namespace haltpool

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc > 1) haltpool::g_probe = argv[1];
  return RUN_ALL_TESTS();
}
