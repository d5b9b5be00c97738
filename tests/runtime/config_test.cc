// Resolving the configuration from defaults, code and HALTPOOL_* variables
// (runtime/config.h), on a MapEnvironment: precedence, sources, every class
// of bad input and its message, and the OMP_DISPLAY_ENV-style dump.

#include "runtime/config.h"

#include <stdlib.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "arch/cpu_wait.h"
#include "arch/hypervisor.h"
#include "arch/wait_mechanism.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "idle/calibration.h"
#include "idle/idle_options.h"
#include "idle/profile.h"
#include "runtime/environment.h"
#include "runtime/io/io_backend.h"
#include "runtime/pool_options.h"
#include "runtime/topology.h"
#include "runtime/tunables.h"

namespace haltpool {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<std::string> kVariableNames = {
    "HALTPOOL_HYPERVISOR",
    "HALTPOOL_CALIBRATE",
    "HALTPOOL_BACKOFF",
    "HALTPOOL_GOVERNOR",
    "HALTPOOL_POLL_NS",
    "HALTPOOL_POLL_GROW",
    "HALTPOOL_POLL_GROW_START",
    "HALTPOOL_POLL_SHRINK",
    "HALTPOOL_POLL_ALLOW_SHRINK",
    "HALTPOOL_FIXED_POLL_NS",
    "HALTPOOL_BLOCK_EXIT_LATENCY_NS",
    "HALTPOOL_BLOCK_TARGET_RESIDENCY_NS",
    "HALTPOOL_WAKE_MARGIN_NS",
    "HALTPOOL_DENSE_POLL_NS",
    "HALTPOOL_WAIT",
    "HALTPOOL_WORKERS",
    "HALTPOOL_MAX_POLLERS",
    "HALTPOOL_PIN",
    "HALTPOOL_CPUS",
    "HALTPOOL_IO",
    "HALTPOOL_IO_ENTRIES",
    "HALTPOOL_IO_TASKRUN",
    "HALTPOOL_STATS",
    "HALTPOOL_DISPLAY_ENV",
};

// Detection as on a KVM guest with dedicated CPUs: its profile's values are
// the built-in defaults (idle/profile.h), but they come from the profile.
// ConfigProfile tests the other environments.
arch::HypervisorInfo KvmDedicated() {
  arch::HypervisorInfo info;
  info.kind = arch::HostEnvironment::kKvmDedicated;
  info.vendor = "KVM";
  info.dedicated_hint = true;
  return info;
}

arch::HypervisorInfo Detected(arch::HostEnvironment kind) {
  arch::HypervisorInfo info;
  info.kind = kind;
  return info;
}

absl::StatusOr<Config> Resolve(
    std::map<std::string, std::string> env, const PoolOptions& code = {},
    const arch::HypervisorInfo& detected = KvmDedicated()) {
  return ResolveConfig(code, MapEnvironment(std::move(env)), detected);
}

Config ResolveOk(std::map<std::string, std::string> env,
                 const PoolOptions& code = {},
                 const arch::HypervisorInfo& detected = KvmDedicated()) {
  absl::StatusOr<Config> c = Resolve(std::move(env), code, detected);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : Config{};
}

const ResolvedVariable& Var(const Config& c, const std::string& name) {
  for (const ResolvedVariable& v : c.variables) {
    if (v.name == name) return v;
  }
  ADD_FAILURE() << name << " not in the resolved variables";
  static const ResolvedVariable kMissing{"", "", ValueSource::kDefault};
  return kMissing;
}

std::string Source(const Config& c, const std::string& name) {
  return std::string(ValueSourceName(Var(c, name).source));
}

// A calibration that measured a block wake of `block_wake_ns` and a timed
// block `timed_wait_late_ns` late.
idle::Calibration Measured(int64_t block_wake_ns, int64_t timed_wait_late_ns) {
  idle::Calibration c;
  c.measured = true;
  c.block_wake_ns = block_wake_ns;
  c.timed_wait_late_ns = timed_wait_late_ns;
  return c;
}

std::vector<std::string> Names(const Config& c) {
  std::vector<std::string> names;
  for (const ResolvedVariable& v : c.variables) names.push_back(v.name);
  return names;
}

// --- Precedence and sources
// ----------------------------------------------------

TEST(ConfigResolve, DefaultsWithAnEmptyEnvironment) {
  const Config c = ResolveOk({});
  const idle::IdleOptions d;
  EXPECT_EQ(c.pool.idle.governor, "haltpoll");
  EXPECT_EQ(c.pool.idle.haltpoll.poll_ns, d.haltpoll.poll_ns);
  EXPECT_EQ(c.pool.idle.haltpoll.grow, d.haltpoll.grow);
  EXPECT_EQ(c.pool.idle.haltpoll.grow_start, d.haltpoll.grow_start);
  EXPECT_EQ(c.pool.idle.haltpoll.shrink, d.haltpoll.shrink);
  EXPECT_EQ(c.pool.idle.haltpoll.allow_shrink, d.haltpoll.allow_shrink);
  EXPECT_EQ(c.pool.idle.fixed_poll_ns, d.fixed_poll_ns);
  EXPECT_FALSE(c.pool.idle.wait.has_value());
  EXPECT_FALSE(c.display_env);
  EXPECT_EQ(Names(c), kVariableNames) << "every variable, in table order";
  std::map<std::string, std::string> values;
  for (const ResolvedVariable& v : c.variables) {
    const bool profiled = FindTunable(v.name)->from_profile;
    EXPECT_EQ(v.source,
              profiled ? ValueSource::kProfile : ValueSource::kDefault)
        << v.name;
    values[v.name] = v.value;
  }
  EXPECT_EQ(values["HALTPOOL_GOVERNOR"], "haltpoll");
  EXPECT_EQ(values["HALTPOOL_POLL_NS"], "200us");
  EXPECT_EQ(values["HALTPOOL_POLL_GROW"], "2");
  EXPECT_EQ(values["HALTPOOL_POLL_GROW_START"], "50us");
  EXPECT_EQ(values["HALTPOOL_POLL_SHRINK"], "2");
  EXPECT_EQ(values["HALTPOOL_POLL_ALLOW_SHRINK"], "1");
  EXPECT_EQ(values["HALTPOOL_FIXED_POLL_NS"], "2us");
  EXPECT_EQ(values["HALTPOOL_WAIT"], "auto");
  EXPECT_EQ(values["HALTPOOL_WORKERS"], "0");
  EXPECT_EQ(values["HALTPOOL_MAX_POLLERS"], "0");
  EXPECT_EQ(values["HALTPOOL_PIN"], "none");
  EXPECT_EQ(values["HALTPOOL_CPUS"], "all");
  EXPECT_EQ(values["HALTPOOL_IO"], "auto");
  EXPECT_EQ(values["HALTPOOL_IO_ENTRIES"], "256");
  EXPECT_EQ(values["HALTPOOL_IO_TASKRUN"], "coop");
  EXPECT_EQ(values["HALTPOOL_STATS"], "0");
  EXPECT_EQ(values["HALTPOOL_DISPLAY_ENV"], "0");
  EXPECT_EQ(c.pool.workers, 0);
  EXPECT_EQ(c.pool.max_pollers, 0);
  EXPECT_EQ(c.pool.pin, PinMode::kNone);
  EXPECT_EQ(c.pool.io, IoBackend::kAuto);
  EXPECT_FALSE(c.pool.print_stats);
}

TEST(ConfigResolve, CodeOverridesShowSourceCode) {
  PoolOptions code;
  code.idle.governor = "fixed";
  code.idle.fixed_poll_ns = 7000;
  code.idle.haltpoll.allow_shrink = false;
  code.idle.wait = arch::WaitMechanism::kSpin;
  code.workers = 3;
  code.pin = PinMode::kCore;
  code.cpus = std::vector<int>{1};
  const Config c = ResolveOk({}, code);
  EXPECT_EQ(c.pool.cpus, std::vector<int>{1});
  EXPECT_EQ(Source(c, "HALTPOOL_CPUS"), "code");
  EXPECT_EQ(Var(c, "HALTPOOL_CPUS").value, "1");
  EXPECT_EQ(c.pool.workers, 3);
  EXPECT_EQ(Source(c, "HALTPOOL_WORKERS"), "code");
  EXPECT_EQ(Var(c, "HALTPOOL_WORKERS").value, "3");
  EXPECT_EQ(Source(c, "HALTPOOL_PIN"), "code");
  EXPECT_EQ(Var(c, "HALTPOOL_PIN").value, "core");
  EXPECT_EQ(Source(c, "HALTPOOL_IO"), "default");
  EXPECT_EQ(c.pool.idle.governor, "fixed");
  EXPECT_EQ(c.pool.idle.fixed_poll_ns, 7000);
  EXPECT_FALSE(c.pool.idle.haltpoll.allow_shrink);
  EXPECT_EQ(c.pool.idle.wait, arch::WaitMechanism::kSpin);
  EXPECT_EQ(Source(c, "HALTPOOL_GOVERNOR"), "code");
  EXPECT_EQ(Var(c, "HALTPOOL_GOVERNOR").value, "fixed");
  EXPECT_EQ(Source(c, "HALTPOOL_FIXED_POLL_NS"), "code");
  EXPECT_EQ(Var(c, "HALTPOOL_FIXED_POLL_NS").value, "7us");
  EXPECT_EQ(Source(c, "HALTPOOL_POLL_ALLOW_SHRINK"), "code");
  EXPECT_EQ(Var(c, "HALTPOOL_POLL_ALLOW_SHRINK").value, "0");
  EXPECT_EQ(Source(c, "HALTPOOL_WAIT"), "code");
  EXPECT_EQ(Var(c, "HALTPOOL_WAIT").value, "spin");
  // Untouched fields stay the profile's or the defaults.
  EXPECT_EQ(Source(c, "HALTPOOL_POLL_NS"), "profile");
  EXPECT_EQ(Source(c, "HALTPOOL_POLL_GROW"), "default");
  EXPECT_EQ(Source(c, "HALTPOOL_DISPLAY_ENV"), "default");
}

TEST(ConfigResolve, EnvironmentWinsOverCodeAndDefaults) {
  PoolOptions code;
  code.idle.governor = "fixed";
  code.idle.haltpoll.poll_ns = 400000;
  code.idle.wait = arch::WaitMechanism::kSpin;
  const Config c = ResolveOk({{"HALTPOOL_GOVERNOR", "poll"},
                              {"HALTPOOL_POLL_NS", "100us"},
                              {"HALTPOOL_WAIT", "auto"},
                              {"HALTPOOL_POLL_GROW", "2"}},
                             code);
  EXPECT_EQ(c.pool.idle.governor, "poll");
  EXPECT_EQ(c.pool.idle.haltpoll.poll_ns, 100000);
  EXPECT_FALSE(c.pool.idle.wait.has_value()) << "auto undoes the code's choice";
  EXPECT_EQ(Source(c, "HALTPOOL_GOVERNOR"), "environment");
  EXPECT_EQ(Source(c, "HALTPOOL_POLL_NS"), "environment");
  EXPECT_EQ(Var(c, "HALTPOOL_POLL_NS").value, "100us");
  EXPECT_EQ(Source(c, "HALTPOOL_WAIT"), "environment");
  EXPECT_EQ(Var(c, "HALTPOOL_WAIT").value, "auto");
  // Set in the environment to the default value: still the environment's.
  EXPECT_EQ(Source(c, "HALTPOOL_POLL_GROW"), "environment");
  EXPECT_EQ(Source(c, "HALTPOOL_POLL_SHRINK"), "default");
}

TEST(ConfigResolve, EveryVariableIsApplied) {
  const Config c = ResolveOk({{"HALTPOOL_HYPERVISOR", "kvm-dedicated"},
                              {"HALTPOOL_CALIBRATE", "0"},
                              {"HALTPOOL_BACKOFF", "n"},
                              {"HALTPOOL_GOVERNOR", "block"},
                              {"HALTPOOL_POLL_NS", "1s"},
                              {"HALTPOOL_POLL_GROW", "4"},
                              {"HALTPOOL_POLL_GROW_START", "10us"},
                              {"HALTPOOL_POLL_SHRINK", "0"},
                              {"HALTPOOL_POLL_ALLOW_SHRINK", "no"},
                              {"HALTPOOL_FIXED_POLL_NS", "5000"},
                              {"HALTPOOL_BLOCK_EXIT_LATENCY_NS", "9us"},
                              {"HALTPOOL_BLOCK_TARGET_RESIDENCY_NS", "19us"},
                              {"HALTPOOL_WAKE_MARGIN_NS", "33us"},
                              {"HALTPOOL_DENSE_POLL_NS", "0"},
                              {"HALTPOOL_WAIT", "spin"},
                              {"HALTPOOL_WORKERS", "4096"},
                              {"HALTPOOL_MAX_POLLERS", "0"},
                              {"HALTPOOL_PIN", "pu"},
                              {"HALTPOOL_CPUS", "2,0-1"},
                              {"HALTPOOL_IO", "epoll"},
                              {"HALTPOOL_IO_ENTRIES", "8"},
                              {"HALTPOOL_IO_TASKRUN", "defer"},
                              {"HALTPOOL_STATS", "true"},
                              {"HALTPOOL_DISPLAY_ENV", "yes"}});
  EXPECT_EQ(c.pool.workers, 4096);
  EXPECT_EQ(c.pool.max_pollers, 0);
  EXPECT_EQ(c.pool.pin, PinMode::kPu);
  EXPECT_EQ(c.pool.io, IoBackend::kEpoll);
  EXPECT_EQ(c.pool.io_entries, 8u);
  EXPECT_EQ(c.pool.io_task_run, IoTaskRun::kDefer);
  EXPECT_TRUE(c.pool.print_stats);
  EXPECT_EQ(Var(c, "HALTPOOL_PIN").value, "pu");
  EXPECT_EQ(c.pool.cpus, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(Var(c, "HALTPOOL_CPUS").value, "0-2");
  EXPECT_EQ(Var(c, "HALTPOOL_IO").value, "epoll");
  EXPECT_EQ(Var(c, "HALTPOOL_STATS").value, "1");
  EXPECT_EQ(c.hypervisor_override, arch::HostEnvironment::kKvmDedicated);
  EXPECT_FALSE(c.pool.calibrate);
  EXPECT_FALSE(c.pool.backoff);
  EXPECT_EQ(c.pool.idle.governor, "block");
  EXPECT_EQ(c.pool.idle.haltpoll.poll_ns, 1000000000);
  EXPECT_EQ(c.pool.idle.haltpoll.grow, 4);
  EXPECT_EQ(c.pool.idle.haltpoll.grow_start, 10000);
  EXPECT_EQ(c.pool.idle.haltpoll.shrink, 0);
  EXPECT_FALSE(c.pool.idle.haltpoll.allow_shrink);
  EXPECT_EQ(c.pool.idle.fixed_poll_ns, 5000);
  EXPECT_EQ(c.pool.idle.block_exit_latency_ns, 9000);
  EXPECT_EQ(c.pool.idle.block_target_residency_ns, 19000);
  EXPECT_EQ(c.pool.idle.wake_margin_ns, 33000);
  EXPECT_EQ(c.pool.idle.dense_poll_ns, 0);
  EXPECT_EQ(c.pool.idle.wait, arch::WaitMechanism::kSpin);
  EXPECT_TRUE(c.display_env);
  for (const ResolvedVariable& v : c.variables) {
    EXPECT_EQ(v.source, ValueSource::kEnvironment) << v.name;
  }
  EXPECT_EQ(Var(c, "HALTPOOL_FIXED_POLL_NS").value, "5us");
  EXPECT_EQ(Var(c, "HALTPOOL_DISPLAY_ENV").value, "1");
  EXPECT_TRUE(idle::ValidateIdleOptions(c.pool.idle).ok());
}

TEST(ConfigResolve, DurationsInEveryUnit) {
  for (const auto& [text, ns] :
       std::vector<std::pair<std::string, int64_t>>{{"200us", 200000},
                                                    {"2ms", 2000000},
                                                    {"1s", 1000000000},
                                                    {"5000", 5000},
                                                    {"0", 0},
                                                    {"75ns", 75}}) {
    const Config c = ResolveOk({{"HALTPOOL_POLL_NS", text}});
    EXPECT_EQ(c.pool.idle.haltpoll.poll_ns, ns) << text;
  }
}

TEST(ConfigResolve, EveryUsableWaitNameIsAccepted) {
  for (arch::WaitMechanism m : arch::kAllWaitMechanisms) {
    const std::string name(arch::WaitMechanismName(m));
    const absl::StatusOr<Config> c = Resolve({{"HALTPOOL_WAIT", name}});
    if (!arch::CheckWaitMechanism(m).ok()) {
      // Unusable here: an error at start-up that names the variable.
      ASSERT_FALSE(c.ok()) << name;
      EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_THAT(std::string(c.status().message()),
                  AllOf(HasSubstr(absl::StrCat("HALTPOOL_WAIT=", name)),
                        HasSubstr("from environment"), HasSubstr("unavailable"),
                        HasSubstr("accepted: ")));
      continue;
    }
    ASSERT_TRUE(c.ok()) << name << ": " << c.status();
    EXPECT_EQ(c->pool.idle.wait, m) << name;
    EXPECT_EQ(Var(*c, "HALTPOOL_WAIT").value, name);
  }
}

TEST(ConfigResolve, AnUnusableWaitFromCodeNamesTheField) {
  for (arch::WaitMechanism m : arch::kAllWaitMechanisms) {
    if (arch::CheckWaitMechanism(m).ok()) continue;
    PoolOptions code;
    code.idle.wait = m;
    const absl::StatusOr<Config> c = Resolve({}, code);
    ASSERT_FALSE(c.ok()) << arch::WaitMechanismName(m);
    EXPECT_THAT(std::string(c.status().message()),
                AllOf(HasSubstr("HALTPOOL_WAIT="), HasSubstr("idle.wait"),
                      HasSubstr("from code")));
    return;
  }
  GTEST_SKIP() << "every wait mechanism is usable on this CPU";
}

TEST(ConfigResolve, OtherVariablesAreIgnored) {
  const Config c = ResolveOk({{"PATH", "/bin"},
                              {"HALTPOOLX_FOO", "1"},
                              {"haltpool_poll_ns", "junk"},
                              {"MY_HALTPOOL_GOVERNOR", "junk"}});
  EXPECT_EQ(c.pool.idle.governor, "haltpoll");
}

TEST(ConfigResolve, ResolvedValuesReadBackToTheSameConfig) {
  // What DisplayEnv prints can be pasted back into the environment.
  PoolOptions code;
  code.idle.fixed_poll_ns = 1500;  // "1500ns"
  code.idle.haltpoll.grow_start = 1234567;
  const Config first =
      ResolveOk({{"HALTPOOL_POLL_NS", "1ms"}, {"HALTPOOL_WAIT", "spin"}}, code);
  std::map<std::string, std::string> env;
  for (const ResolvedVariable& v : first.variables) env[v.name] = v.value;
  const Config second = ResolveOk(env);
  EXPECT_EQ(second.pool.idle.governor, first.pool.idle.governor);
  EXPECT_EQ(second.pool.idle.haltpoll.poll_ns,
            first.pool.idle.haltpoll.poll_ns);
  EXPECT_EQ(second.pool.idle.haltpoll.grow, first.pool.idle.haltpoll.grow);
  EXPECT_EQ(second.pool.idle.haltpoll.grow_start, 1234567);
  EXPECT_EQ(second.pool.idle.haltpoll.shrink, first.pool.idle.haltpoll.shrink);
  EXPECT_EQ(second.pool.idle.haltpoll.allow_shrink,
            first.pool.idle.haltpoll.allow_shrink);
  EXPECT_EQ(second.pool.idle.fixed_poll_ns, 1500);
  EXPECT_EQ(second.pool.idle.wait, first.pool.idle.wait);
  EXPECT_EQ(second.display_env, first.display_env);
}

// --- Bad input
// ----------------------------------------------------------------

struct BadCase {
  const char* name;
  const char* value;
  std::vector<std::string> says;  // Besides NAME='VALUE' and "accepted:".
};

class ConfigBadValue : public ::testing::TestWithParam<BadCase> {};

TEST_P(ConfigBadValue, NamesTheVariableTheValueAndWhatIsAccepted) {
  const BadCase& c = GetParam();
  const absl::StatusOr<Config> r = Resolve({{c.name, c.value}});
  ASSERT_FALSE(r.ok()) << c.name << "='" << c.value << "' was accepted";
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(r.status().message());
  EXPECT_THAT(msg, HasSubstr(absl::StrCat(c.name, "='", c.value, "'")));
  EXPECT_THAT(msg, HasSubstr("accepted: "));
  for (const std::string& s : c.says) EXPECT_THAT(msg, HasSubstr(s));
}

const char kDurations[] = "unit ns, us, ms or s";
const char kGovernors[] = "haltpoll|predictive|poll|block|fixed";
const char kWaits[] = "auto|spin|pause|umwait|tpause|mwaitx|yield|wfe|wfet";
const char kBools[] = "1, 0, true, false, yes, no, y, n";
const char kCpus[] =
    "all, or CPUs from 0 to 8191 and ranges, such as 1 or 0-3,6";

INSTANTIATE_TEST_SUITE_P(
    EveryClass, ConfigBadValue,
    ::testing::Values(
        // Junk.
        BadCase{"HALTPOOL_POLL_NS", "abc", {"not a duration", kDurations}},
        BadCase{
            "HALTPOOL_POLL_GROW", "two", {"not a number", "from 1 to 1024"}},
        // Empty.
        BadCase{"HALTPOOL_POLL_NS", "", {"empty", kDurations}},
        BadCase{"HALTPOOL_GOVERNOR", "", {"empty", kGovernors}},
        BadCase{"HALTPOOL_POLL_SHRINK", "", {"empty", "from 0 to 1024"}},
        BadCase{"HALTPOOL_POLL_ALLOW_SHRINK", "", {"empty", kBools}},
        BadCase{"HALTPOOL_WAIT", "", {"empty", kWaits}},
        BadCase{"HALTPOOL_DISPLAY_ENV", "", {"empty", kBools}},
        // Negative.
        BadCase{"HALTPOOL_POLL_NS", "-1", {"negative", kDurations}},
        BadCase{"HALTPOOL_FIXED_POLL_NS", "-2us", {"negative", kDurations}},
        BadCase{"HALTPOOL_POLL_GROW", "-2", {"negative", "from 1 to 1024"}},
        // Overflowing.
        BadCase{"HALTPOOL_POLL_NS", "99999999999999999999", {"too large"}},
        BadCase{"HALTPOOL_POLL_GROW_START",
                "99999999999999999999ms",
                {"too large"}},
        BadCase{"HALTPOOL_POLL_GROW", "99999999999999999999", {"too large"}},
        BadCase{"HALTPOOL_FIXED_POLL_NS", "10000000000s", {"too large"}},
        // Out of range.
        BadCase{"HALTPOOL_POLL_NS", "2s", {"out of range", "from 0 to 1s"}},
        BadCase{
            "HALTPOOL_POLL_GROW_START", "1000001us", {"out of range", "to 1s"}},
        BadCase{"HALTPOOL_FIXED_POLL_NS", "1000000001", {"out of range"}},
        BadCase{"HALTPOOL_POLL_GROW", "0", {"out of range", "from 1 to 1024"}},
        BadCase{
            "HALTPOOL_POLL_GROW", "1025", {"out of range", "from 1 to 1024"}},
        BadCase{
            "HALTPOOL_POLL_SHRINK", "1025", {"out of range", "from 0 to 1024"}},
        // Unknown unit, and a unit with no number.
        BadCase{"HALTPOOL_POLL_NS", "5x", {"unknown unit 'x'", kDurations}},
        BadCase{"HALTPOOL_POLL_NS", "5sec", {"unknown unit 'sec'"}},
        BadCase{"HALTPOOL_POLL_NS", "1.5ns", {"not a whole number"}},
        BadCase{"HALTPOOL_FIXED_POLL_NS", "us", {"not a duration"}},
        // A unit where none belongs.
        BadCase{"HALTPOOL_POLL_GROW", "2x", {"not a number"}},
        BadCase{"HALTPOOL_POLL_SHRINK", "2ms", {"not a number"}},
        // Unknown names.
        BadCase{"HALTPOOL_GOVERNOR", "menu", {"unknown governor", kGovernors}},
        BadCase{"HALTPOOL_GOVERNOR", "Haltpoll", {"unknown governor"}},
        BadCase{"HALTPOOL_WAIT", "mwait", {"unknown wait mechanism", kWaits}},
        BadCase{"HALTPOOL_WAIT", "AUTO", {"unknown wait mechanism", kWaits}},
        // Pool variables.
        BadCase{"HALTPOOL_WORKERS", "-1", {"negative", "from 0 to 4096"}},
        BadCase{"HALTPOOL_WORKERS", "4097", {"out of range", "from 0 to 4096"}},
        BadCase{"HALTPOOL_WORKERS", "", {"empty", "from 0 to 4096"}},
        BadCase{"HALTPOOL_WORKERS", "99999999999999999999", {"too large"}},
        BadCase{
            "HALTPOOL_MAX_POLLERS", "two", {"not a number", "from 0 to 4096"}},
        BadCase{"HALTPOOL_PIN", "cores", {"unknown pin mode", "none|core|pu"}},
        BadCase{"HALTPOOL_PIN", "", {"empty", "none|core|pu"}},
        BadCase{"HALTPOOL_CPUS", "1-0", {"'1-0' runs backwards", kCpus}},
        BadCase{"HALTPOOL_CPUS", "none", {"is not a CPU or a range", kCpus}},
        BadCase{"HALTPOOL_CPUS", "0-9000", {"is out of range", kCpus}},
        BadCase{"HALTPOOL_CPUS", "", {"empty", kCpus}},
        BadCase{"HALTPOOL_IO",
                "io_uring",
                {"unknown I/O backend", "auto|uring|epoll"}},
        BadCase{"HALTPOOL_IO", "", {"empty", "auto|uring|epoll"}},
        BadCase{"HALTPOOL_IO_ENTRIES", "0", {"from 1 to 32768"}},
        BadCase{"HALTPOOL_IO_ENTRIES", "65536", {"from 1 to 32768"}},
        BadCase{"HALTPOOL_IO_TASKRUN",
                "signal",
                {"unknown task-run mode", "interrupt|coop|defer"}},
        BadCase{"HALTPOOL_STATS", "on", {"not a boolean", kBools}},
        // Not a boolean.
        BadCase{
            "HALTPOOL_POLL_ALLOW_SHRINK", "maybe", {"not a boolean", kBools}},
        BadCase{"HALTPOOL_DISPLAY_ENV", "2", {"not a boolean", kBools}}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      return absl::StrCat(info.index, "_", info.param.name);
    });

TEST(ConfigUnknownVariable, IsRejectedWithTheKnownNames) {
  const absl::StatusOr<Config> r = Resolve({{"HALTPOOL_POLLNS", "200us"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(r.status().message());
  EXPECT_THAT(msg, HasSubstr("HALTPOOL_POLLNS"));
  EXPECT_THAT(msg, HasSubstr("not a haltpool variable"));
  for (const std::string& name : kVariableNames)
    EXPECT_THAT(msg, HasSubstr(name));
}

TEST(ConfigUnknownVariable, MessageQuotesTheValueToo) {
  // docs/DESIGN.md: a bad setting is an error that names the variable, the
  // value and what is accepted. For a misspelt variable the value is what
  // lets the operator find the line they wrote (HALTPOOL_POLLNS=200us).
  const absl::StatusOr<Config> r = Resolve({{"HALTPOOL_POLLNS", "200us"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("200us"));
}

TEST(ConfigUnknownVariable, EvenWithAnEmptyValue) {
  const absl::StatusOr<Config> r = Resolve({{"HALTPOOL_", ""}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(
      std::string(r.status().message()),
      AllOf(HasSubstr("HALTPOOL_=''"), HasSubstr("not a haltpool variable")));
}

TEST(ConfigBadCode, IsReportedAsCode) {
  PoolOptions code;
  code.idle.haltpoll.grow = 0;
  const absl::StatusOr<Config> r = Resolve({}, code);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              AllOf(HasSubstr("from code"),
                    HasSubstr("idle.haltpoll.grow (HALTPOOL_POLL_GROW) = 0"),
                    HasSubstr("1 to 1024")));
  code = {};
  code.idle.governor = "menu";
  EXPECT_THAT(std::string(Resolve({}, code).status().message()),
              AllOf(HasSubstr("from code"), HasSubstr("= menu"),
                    HasSubstr(kGovernors)));
}

TEST(ConfigBadCode, PoolValuesFromCodeAreCheckedToo) {
  // The contract: fails "on a bad code value". The same ranges as the
  // variables: workers and pollers from 0 to 4096.
  for (int bad : {-1, 4097}) {
    PoolOptions code;
    code.workers = bad;
    const absl::StatusOr<Config> r = Resolve({}, code);
    EXPECT_FALSE(r.ok()) << "workers = " << bad << " from code was accepted";
    if (!r.ok()) {
      EXPECT_THAT(std::string(r.status().message()),
                  AllOf(HasSubstr("from code"), HasSubstr("workers")));
    }
    code = {};
    code.max_pollers = bad;
    EXPECT_FALSE(Resolve({}, code).ok())
        << "max_pollers = " << bad << " from code was accepted";
  }
}

TEST(ConfigFirstError, FirstBadVariableStopsResolution) {
  const absl::StatusOr<Config> r =
      Resolve({{"HALTPOOL_GOVERNOR", "poll"}, {"HALTPOOL_POLL_GROW", "0"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("HALTPOOL_POLL_GROW='0'"));
}

// --- Display
// ------------------------------------------------------------------

TEST(ConfigDisplay, ListsEveryVariableWithItsSource) {
  PoolOptions code;
  code.idle.fixed_poll_ns = 3000;
  const Config c = ResolveOk({{"HALTPOOL_GOVERNOR", "poll"}}, code);
  const std::string out = DisplayEnv(c);
  const std::vector<std::string> lines = absl::StrSplit(out, '\n');
  ASSERT_EQ(lines.size(), kVariableNames.size() + 3)
      << out;  // + BEGIN, END, "".
  EXPECT_EQ(lines.front(), "HALTPOOL DISPLAY ENVIRONMENT BEGIN");
  EXPECT_EQ(lines[lines.size() - 2], "HALTPOOL DISPLAY ENVIRONMENT END");
  EXPECT_EQ(lines.back(), "");
  for (size_t i = 0; i < kVariableNames.size(); ++i) {
    EXPECT_THAT(lines[i + 1], HasSubstr("  " + kVariableNames[i] + " = '"));
  }
  EXPECT_THAT(out, HasSubstr("  HALTPOOL_GOVERNOR = 'poll'  [environment]\n"));
  EXPECT_THAT(out, HasSubstr("  HALTPOOL_FIXED_POLL_NS = '3us'  [code]\n"));
  EXPECT_THAT(out, HasSubstr("  HALTPOOL_POLL_NS = '200us'  [profile]\n"));
  EXPECT_THAT(out, HasSubstr("  HALTPOOL_POLL_GROW = '2'  [default]\n"));
  EXPECT_THAT(out, HasSubstr("  HALTPOOL_WAIT = 'auto'  [default]\n"));
}

TEST(ConfigDisplay, SourceNames) {
  EXPECT_EQ(ValueSourceName(ValueSource::kDefault), "default");
  EXPECT_EQ(ValueSourceName(ValueSource::kProfile), "profile");
  EXPECT_EQ(ValueSourceName(ValueSource::kCalibration), "calibration");
  EXPECT_EQ(ValueSourceName(ValueSource::kCode), "code");
  EXPECT_EQ(ValueSourceName(ValueSource::kEnvironment), "environment");
}

TEST(ConfigDisplay, TheTunablesTableMatchesTheResolvedVariables) {
  const Config defaults = ResolveOk({});
  ASSERT_EQ(Tunables().size(), kVariableNames.size());
  for (size_t i = 0; i < Tunables().size(); ++i) {
    const Tunable& t = Tunables()[i];
    EXPECT_EQ(t.variable, kVariableNames[i]);
    if (!t.from_profile) {
      EXPECT_EQ(t.default_value, defaults.variables[i].value) << t.variable;
    }
    EXPECT_FALSE(t.help.empty()) << t.variable;
    EXPECT_FALSE(t.accepted.empty()) << t.variable;
  }
}

TEST(ConfigDisplay, TheProfileGivesTheGovernorThePollCapAndTheBlockCosts) {
  std::vector<std::string> from_profile;
  for (const Tunable& t : Tunables()) {
    if (t.from_profile) from_profile.push_back(std::string(t.variable));
  }
  EXPECT_THAT(from_profile, ElementsAre("HALTPOOL_GOVERNOR", "HALTPOOL_POLL_NS",
                                        "HALTPOOL_BLOCK_EXIT_LATENCY_NS",
                                        "HALTPOOL_BLOCK_TARGET_RESIDENCY_NS",
                                        "HALTPOOL_WAKE_MARGIN_NS"));
}

TEST(ConfigDisplay, NamesEverySource) {
  PoolOptions code;
  code.idle.block_exit_latency_ns = 4000;
  Config c = ResolveOk({{"HALTPOOL_POLL_GROW", "3"}}, code,
                       Detected(arch::HostEnvironment::kKvmShared));
  const idle::Calibration measured = Measured(21000, 0);
  ApplyCalibration(measured, c);
  const std::string out = DisplayEnv(c);
  EXPECT_THAT(out, HasSubstr("  HALTPOOL_POLL_GROW = '3'  [environment]\n"));
  EXPECT_THAT(out,
              HasSubstr("  HALTPOOL_BLOCK_EXIT_LATENCY_NS = '4us'  [code]\n"));
  EXPECT_THAT(out, HasSubstr("  HALTPOOL_BLOCK_TARGET_RESIDENCY_NS = '42us'  "
                             "[calibration]\n"));
  EXPECT_THAT(out,
              HasSubstr("  HALTPOOL_GOVERNOR = 'predictive'  [profile]\n"));
  EXPECT_THAT(out, HasSubstr("  HALTPOOL_POLL_SHRINK = '2'  [default]\n"));
}

// --- Profiles
// ---------------------------------------------------------------

TEST(ConfigProfile, EachEnvironmentGetsItsProfile) {
  for (arch::HostEnvironment e : arch::kAllHostEnvironments) {
    const Config c = ResolveOk({}, {}, Detected(e));
    const idle::Profile& p = idle::ProfileFor(e);
    EXPECT_EQ(c.environment, e);
    EXPECT_EQ(c.pool.idle.governor, p.governor);
    EXPECT_EQ(c.pool.idle.haltpoll.poll_ns, p.poll_ns);
    EXPECT_EQ(c.pool.idle.block_exit_latency_ns, p.block_exit_latency_ns);
    EXPECT_EQ(c.pool.idle.block_target_residency_ns,
              p.block_target_residency_ns);
    EXPECT_TRUE(c.pool.calibrate);
    EXPECT_TRUE(idle::ValidateIdleOptions(c.pool.idle).ok());
  }
}

TEST(ConfigProfile, SharedKvmDefaultsToPredictiveFromTheProfile) {
  const Config c =
      ResolveOk({}, {}, Detected(arch::HostEnvironment::kKvmShared));
  EXPECT_EQ(c.pool.idle.governor, "predictive");
  EXPECT_EQ(Source(c, "HALTPOOL_GOVERNOR"), "profile");
  EXPECT_EQ(Source(c, "HALTPOOL_POLL_NS"), "profile");
  EXPECT_EQ(Source(c, "HALTPOOL_WAIT"), "default");
}

TEST(ConfigProfile, TheVariableOverridesDetection) {
  const Config c = ResolveOk({{"HALTPOOL_HYPERVISOR", "bare-metal"}}, {},
                             Detected(arch::HostEnvironment::kKvmShared));
  EXPECT_EQ(c.environment, arch::HostEnvironment::kBareMetal);
  EXPECT_EQ(c.detected.kind, arch::HostEnvironment::kKvmShared);
  EXPECT_EQ(c.pool.idle.governor, "haltpoll");
  EXPECT_EQ(c.pool.idle.haltpoll.poll_ns, 50000);
  EXPECT_EQ(Source(c, "HALTPOOL_HYPERVISOR"), "environment");
}

TEST(ConfigProfile, AutoMeansDetected) {
  const Config c = ResolveOk({{"HALTPOOL_HYPERVISOR", "auto"}}, {},
                             Detected(arch::HostEnvironment::kXen));
  EXPECT_EQ(c.environment, arch::HostEnvironment::kXen);
  EXPECT_FALSE(c.hypervisor_override.has_value());
}

TEST(ConfigProfile, CodeAndEnvironmentWinOverTheProfile) {
  PoolOptions code;
  code.idle.governor = "block";
  const Config c = ResolveOk({{"HALTPOOL_POLL_NS", "7us"}}, code,
                             Detected(arch::HostEnvironment::kKvmShared));
  EXPECT_EQ(c.pool.idle.governor, "block");
  EXPECT_EQ(Source(c, "HALTPOOL_GOVERNOR"), "code");
  EXPECT_EQ(c.pool.idle.haltpoll.poll_ns, 7000);
  EXPECT_EQ(Source(c, "HALTPOOL_POLL_NS"), "environment");
}

TEST(ConfigProfile, CalibrationFillsOnlyWhatCodeAndEnvironmentLeft) {
  PoolOptions code;
  code.idle.block_exit_latency_ns = 1234;
  Config c = ResolveOk({}, code, Detected(arch::HostEnvironment::kKvmShared));
  EXPECT_TRUE(c.pool.calibrate);
  EXPECT_TRUE(WantsCalibration(c)) << "the residency is still the profile's";
  const idle::Calibration measured = Measured(30000, 40000);
  ApplyCalibration(measured, c);
  EXPECT_EQ(c.pool.idle.wake_margin_ns, 40000);
  EXPECT_EQ(Source(c, "HALTPOOL_WAKE_MARGIN_NS"), "calibration");
  EXPECT_EQ(c.pool.idle.block_exit_latency_ns, 1234);
  EXPECT_EQ(Source(c, "HALTPOOL_BLOCK_EXIT_LATENCY_NS"), "code");
  EXPECT_EQ(c.pool.idle.block_target_residency_ns, 60000);
  EXPECT_EQ(Source(c, "HALTPOOL_BLOCK_TARGET_RESIDENCY_NS"), "calibration");
  EXPECT_EQ(Var(c, "HALTPOOL_BLOCK_TARGET_RESIDENCY_NS").value, "60us");
  EXPECT_FALSE(WantsCalibration(c));
}

TEST(ConfigProfile, TheCalibrationsLatenessIsTheFirstWakeMargin) {
  Config c = ResolveOk({{"HALTPOOL_BLOCK_EXIT_LATENCY_NS", "5us"},
                        {"HALTPOOL_BLOCK_TARGET_RESIDENCY_NS", "10us"}});
  EXPECT_EQ(Source(c, "HALTPOOL_WAKE_MARGIN_NS"), "profile");
  EXPECT_EQ(c.pool.idle.wake_margin_ns,
            idle::ProfileFor(c.environment).block_exit_latency_ns);
  EXPECT_TRUE(WantsCalibration(c)) << "the wake margin is the profile's";
  const idle::Calibration measured = Measured(30000, 47000);
  ApplyCalibration(measured, c);
  EXPECT_EQ(c.pool.idle.wake_margin_ns, 47000);
  EXPECT_EQ(Source(c, "HALTPOOL_WAKE_MARGIN_NS"), "calibration");
  EXPECT_EQ(Var(c, "HALTPOOL_WAKE_MARGIN_NS").value, "47us");
  EXPECT_EQ(c.pool.idle.block_exit_latency_ns, 5000) << "set, so kept";
  EXPECT_FALSE(WantsCalibration(c));

  Config set = ResolveOk({{"HALTPOOL_WAKE_MARGIN_NS", "70us"}});
  ApplyCalibration(measured, set);
  EXPECT_EQ(set.pool.idle.wake_margin_ns, 70000);
  EXPECT_EQ(Source(set, "HALTPOOL_WAKE_MARGIN_NS"), "environment");
  EXPECT_EQ(set.pool.idle.block_exit_latency_ns, 30000) << "still calibrated";
}

TEST(ConfigProfile, NoCalibrationWhereItIsOffOrNothingIsLeft) {
  const idle::Calibration measured = Measured(30000, 0);
  Config off = ResolveOk({{"HALTPOOL_CALIBRATE", "0"}});
  EXPECT_FALSE(WantsCalibration(off));
  ApplyCalibration(measured, off);
  EXPECT_EQ(Source(off, "HALTPOOL_BLOCK_EXIT_LATENCY_NS"), "profile");
  Config set = ResolveOk({{"HALTPOOL_BLOCK_EXIT_LATENCY_NS", "5us"},
                          {"HALTPOOL_BLOCK_TARGET_RESIDENCY_NS", "10us"},
                          {"HALTPOOL_WAKE_MARGIN_NS", "20us"}});
  EXPECT_FALSE(WantsCalibration(set));
  ApplyCalibration(measured, set);
  EXPECT_EQ(set.pool.idle.block_exit_latency_ns, 5000);
  EXPECT_EQ(set.pool.idle.block_target_residency_ns, 10000);
  Config unmeasured = ResolveOk({});
  ApplyCalibration(idle::Calibration{}, unmeasured);
  EXPECT_EQ(Source(unmeasured, "HALTPOOL_BLOCK_EXIT_LATENCY_NS"), "profile");
}

TEST(ConfigChange, CodeOptionsOverAResolvedConfigAreSourcedAsCode) {
  Config c = ResolveOk({{"HALTPOOL_GOVERNOR", "poll"}}, {},
                       Detected(arch::HostEnvironment::kKvmShared));
  PoolOptions change;
  change.idle.governor = "haltpoll";
  change.workers = 3;
  ASSERT_TRUE(ApplyCodeOptions(change, c).ok());
  EXPECT_EQ(c.pool.idle.governor, "haltpoll");
  EXPECT_EQ(Source(c, "HALTPOOL_GOVERNOR"), "code");
  EXPECT_EQ(Var(c, "HALTPOOL_GOVERNOR").value, "haltpoll");
  EXPECT_EQ(c.pool.workers, 3);
  EXPECT_EQ(Source(c, "HALTPOOL_WORKERS"), "code");
  EXPECT_EQ(Source(c, "HALTPOOL_POLL_NS"), "profile") << "left as it was";
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigChange, ABadChangeIsRefusedAndChangesNothing) {
  Config c = ResolveOk({{"HALTPOOL_MAX_POLLERS", "4"}});
  const Config before = c;
  PoolOptions change;
  change.workers = 2;  // Fewer than HALTPOOL_MAX_POLLERS.
  const absl::Status s = ApplyCodeOptions(change, c);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(
      std::string(s.message()),
      AllOf(HasSubstr("HALTPOOL_MAX_POLLERS=4"), HasSubstr("from environment"),
            HasSubstr("workers, from code")));
  EXPECT_EQ(c.pool.workers, before.pool.workers);
  EXPECT_EQ(Source(c, "HALTPOOL_WORKERS"), "default");
  change = {};
  change.idle.haltpoll.grow = 0;
  EXPECT_THAT(std::string(ApplyCodeOptions(change, c).message()),
              HasSubstr("idle.haltpoll.grow (HALTPOOL_POLL_GROW) = 0"));
}

TEST(ConfigChange, ValidateRefusesValuesChangedOutOfRange) {
  Config c = ResolveOk({});
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.pool.workers = -1;
  EXPECT_THAT(std::string(ValidateConfig(c).message()),
              AllOf(HasSubstr("HALTPOOL_WORKERS=-1"), HasSubstr("out of range"),
                    HasSubstr("accepted: 0 to 4096")));
  c = ResolveOk({});
  c.pool.pin = static_cast<PinMode>(7);
  EXPECT_THAT(std::string(ValidateConfig(c).message()),
              AllOf(HasSubstr("HALTPOOL_PIN"), HasSubstr("none|core|pu")));
  EXPECT_THAT(std::string(ValidateConfig(Config{}).message()),
              HasSubstr("not resolved"));
}

TEST(ConfigChange, ABlockCostSetAfterResolvingIsNotCalibratedAway) {
  Config c = ResolveOk({});
  PoolOptions change;
  change.idle.block_exit_latency_ns = 8000;
  change.idle.block_target_residency_ns = 16000;
  ASSERT_TRUE(ApplyCodeOptions(change, c).ok());
  EXPECT_TRUE(WantsCalibration(c)) << "the wake margin is left";
  change.idle.wake_margin_ns = 50000;
  ASSERT_TRUE(ApplyCodeOptions(change, c).ok());
  EXPECT_FALSE(WantsCalibration(c));
  const idle::Calibration measured = Measured(30000, 40000);
  ApplyCalibration(measured, c);
  EXPECT_EQ(c.pool.idle.block_exit_latency_ns, 8000);
  EXPECT_EQ(c.pool.idle.block_target_residency_ns, 16000);
  EXPECT_EQ(c.pool.idle.wake_margin_ns, 50000);
}

// Every field set in code to its built-in default, on a host whose profile
// says otherwise: each keeps the code's value, and says so.
TEST(ConfigProfile, CodeValuesEqualToTheDefaultsStick) {
  const PoolConfig d;
  PoolOptions code;
  code.workers = d.workers;
  code.max_pollers = d.max_pollers;
  code.pin = d.pin;
  code.cpus = d.cpus;
  code.io = d.io;
  code.io_entries = d.io_entries;
  code.io_task_run = d.io_task_run;
  code.calibrate = d.calibrate;
  code.backoff = d.backoff;
  code.print_stats = d.print_stats;
  code.idle.governor = d.idle.governor;
  code.idle.haltpoll.poll_ns = d.idle.haltpoll.poll_ns;
  code.idle.haltpoll.grow = d.idle.haltpoll.grow;
  code.idle.haltpoll.grow_start = d.idle.haltpoll.grow_start;
  code.idle.haltpoll.shrink = d.idle.haltpoll.shrink;
  code.idle.haltpoll.allow_shrink = d.idle.haltpoll.allow_shrink;
  code.idle.fixed_poll_ns = d.idle.fixed_poll_ns;
  code.idle.block_exit_latency_ns = d.idle.block_exit_latency_ns;
  code.idle.block_target_residency_ns = d.idle.block_target_residency_ns;
  code.idle.wake_margin_ns = d.idle.wake_margin_ns;
  code.idle.dense_poll_ns = d.idle.dense_poll_ns;
  code.idle.wait = arch::WaitMechanism::kSpin;  // Unset is its default.
  for (arch::HostEnvironment e :
       {arch::HostEnvironment::kKvmShared, arch::HostEnvironment::kBareMetal,
        arch::HostEnvironment::kZvm}) {
    Config c = ResolveOk({}, code, Detected(e));
    EXPECT_EQ(c.pool.idle.governor, "haltpoll") << "not the profile's";
    EXPECT_EQ(c.pool.idle.haltpoll.poll_ns, d.idle.haltpoll.poll_ns);
    EXPECT_EQ(c.pool.idle.block_exit_latency_ns, d.idle.block_exit_latency_ns);
    EXPECT_EQ(c.pool.idle.block_target_residency_ns,
              d.idle.block_target_residency_ns);
    for (const Tunable& t : Tunables()) {
      if (t.field.empty()) continue;
      EXPECT_EQ(Source(c, std::string(t.variable)), "code") << t.variable;
    }
    EXPECT_FALSE(WantsCalibration(c))
        << "code set both block costs and the margin";
    EXPECT_THAT(DisplayEnv(c),
                HasSubstr("  HALTPOOL_GOVERNOR = 'haltpoll'  [code]\n"));
  }
  // The environment still has the last word.
  const Config env = ResolveOk({{"HALTPOOL_GOVERNOR", "block"}}, code,
                               Detected(arch::HostEnvironment::kKvmShared));
  EXPECT_EQ(env.pool.idle.governor, "block");
  EXPECT_EQ(Source(env, "HALTPOOL_GOVERNOR"), "environment");
}

TEST(ConfigProfile, BadHypervisorValuesAreRejected) {
  for (const char* bad : {"", "KVM", "kvm", " kvm-shared", "kvm_shared",
                          "bare metal", "auto ", "vmware1"}) {
    absl::StatusOr<Config> c = Resolve({{"HALTPOOL_HYPERVISOR", bad}});
    ASSERT_FALSE(c.ok()) << "'" << bad << "'";
    EXPECT_THAT(
        std::string(c.status().message()),
        AllOf(HasSubstr(absl::StrCat("HALTPOOL_HYPERVISOR='", bad, "'")),
              HasSubstr("accepted: auto|bare-metal|kvm-dedicated|"
                        "kvm-shared|hyperv|vmware|xen|zvm|lpar|"
                        "kvm-s390|unknown-vm")));
  }
}

TEST(ConfigProfile, BadCalibrateValuesAreRejected) {
  for (const char* bad : {"", "2", "on", "maybe", "-1"}) {
    absl::StatusOr<Config> c = Resolve({{"HALTPOOL_CALIBRATE", bad}});
    ASSERT_FALSE(c.ok()) << "'" << bad << "'";
    EXPECT_THAT(std::string(c.status().message()),
                HasSubstr(absl::StrCat("HALTPOOL_CALIBRATE='", bad, "'")));
  }
}

// --- Environments
// ---------------------------------------------------------------

TEST(ConfigEnvironment, MapEnvironment) {
  const MapEnvironment env({{"A_X", "1"}, {"A_Y", ""}, {"B", "2"}});
  EXPECT_EQ(env.Get("A_X"), "1");
  EXPECT_EQ(env.Get("A_Y"), "") << "set but empty is not unset";
  EXPECT_EQ(env.Get("C"), std::nullopt);
  EXPECT_THAT(env.NamesWithPrefix("A_"), ElementsAre("A_X", "A_Y"));
  EXPECT_TRUE(env.NamesWithPrefix("Z").empty());
  EXPECT_TRUE(MapEnvironment().NamesWithPrefix("").empty());
}

TEST(ConfigEnvironment, ProcessEnvironmentReadsEnviron) {
  // A prefix of its own, so no HALTPOOL_* variable leaks into anything.
  ASSERT_EQ(setenv("HPTEST_ENV_ONE", "1", 1), 0);
  ASSERT_EQ(setenv("HPTEST_ENV_EMPTY", "", 1), 0);
  const Environment& env = ProcessEnvironment();
  EXPECT_EQ(env.Get("HPTEST_ENV_ONE"), "1");
  EXPECT_EQ(env.Get("HPTEST_ENV_EMPTY"), "");
  EXPECT_EQ(env.Get("HPTEST_ENV_UNSET"), std::nullopt);
  std::vector<std::string> names = env.NamesWithPrefix("HPTEST_ENV_");
  std::sort(names.begin(), names.end());
  EXPECT_THAT(names, ElementsAre("HPTEST_ENV_EMPTY", "HPTEST_ENV_ONE"));
  unsetenv("HPTEST_ENV_ONE");
  unsetenv("HPTEST_ENV_EMPTY");
  EXPECT_EQ(env.Get("HPTEST_ENV_ONE"), std::nullopt);
}

}  // namespace
}  // namespace haltpool
