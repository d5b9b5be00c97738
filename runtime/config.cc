#include "runtime/config.h"

#include <stdlib.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/cpu_wait.h"
#include "idle/profile.h"
#include "runtime/tunables.h"

namespace haltpool {
namespace {

constexpr char kHypervisorVariable[] = "HALTPOOL_HYPERVISOR";
constexpr char kWaitVariable[] = "HALTPOOL_WAIT";
constexpr char kExitLatencyVariable[] = "HALTPOOL_BLOCK_EXIT_LATENCY_NS";
constexpr char kResidencyVariable[] = "HALTPOOL_BLOCK_TARGET_RESIDENCY_NS";
constexpr char kWakeMarginVariable[] = "HALTPOOL_WAKE_MARGIN_NS";

std::string KnownNames() {
  std::vector<absl::string_view> names;
  for (const Tunable& t : Tunables()) names.push_back(t.variable);
  return absl::StrJoin(names, ", ");
}

// "HALTPOOL_POLL_NS=5s (idle.haltpoll.poll_ns, from code)": how an error
// about a resolved value names it.
std::string Named(const Config& c, absl::string_view variable) {
  const ResolvedVariable* v = c.Find(variable);
  const Tunable* t = FindTunable(variable);
  return absl::StrCat(variable, "=", t->format(c), " (",
                      t->field.empty() ? "" : absl::StrCat(t->field, ", "),
                      "from ", ValueSourceName(v->source), ")");
}

// Settings each valid alone that contradict each other, whichever of code
// and environment set them.
absl::Status CheckConsistency(const Config& c) {
  const PoolConfig& o = c.pool;
  if (o.idle.governor == "fixed" &&
      o.idle.fixed_poll_ns > o.idle.haltpoll.poll_ns) {
    return absl::InvalidArgumentError(
        absl::StrCat(Named(c, "HALTPOOL_FIXED_POLL_NS"),
                     " is above the poll cap ", Named(c, "HALTPOOL_POLL_NS"),
                     "; accepted: a fixed window no longer than the cap"));
  }
  if (o.workers > 0 && o.max_pollers > o.workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        Named(c, "HALTPOOL_MAX_POLLERS"), " is more than ",
        Named(c, "HALTPOOL_WORKERS"),
        "; accepted: 0 (half the workers) up to the worker count"));
  }
  return absl::OkStatus();
}

// A wait mechanism this CPU cannot run is an error at start-up, naming
// where the choice came from.
absl::Status CheckWait(const Config& c) {
  if (!c.pool.idle.wait) return absl::OkStatus();
  absl::Status s = arch::CheckWaitMechanism(*c.pool.idle.wait);
  if (s.ok()) return s;
  return absl::FailedPreconditionError(
      absl::StrCat(Named(c, kWaitVariable), ": ", s.message(),
                   "; accepted: auto or a mechanism this CPU has"));
}

ResolvedVariable* Entry(Config& c, absl::string_view variable) {
  for (ResolvedVariable& v : c.variables) {
    if (v.name == variable) return &v;
  }
  return nullptr;
}

void Reformat(Config& config) {
  for (ResolvedVariable& v : config.variables) {
    v.value = FindTunable(v.name)->format(config);
  }
}

absl::Status CodeError(const Tunable& t, const absl::Status& s) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid option from code: ", t.field, " (", t.variable,
                   ") = ", s.message()));
}

}  // namespace

absl::string_view ValueSourceName(ValueSource source) {
  switch (source) {
    case ValueSource::kDefault:
      return "default";
    case ValueSource::kProfile:
      return "profile";
    case ValueSource::kCalibration:
      return "calibration";
    case ValueSource::kCode:
      return "code";
    case ValueSource::kEnvironment:
      return "environment";
  }
  return "unknown";
}

const ResolvedVariable* Config::Find(absl::string_view name) const {
  for (const ResolvedVariable& v : variables) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

absl::StatusOr<Config> ResolveConfig(const PoolOptions& code,
                                     const Environment& env) {
  return ResolveConfig(code, env, arch::HostHypervisor());
}

absl::StatusOr<Config> ResolveConfig(const PoolOptions& code,
                                     const Environment& env,
                                     const arch::HypervisorInfo& detected) {
  for (const std::string& name : env.NamesWithPrefix("HALTPOOL_")) {
    if (FindTunable(name) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "='", env.Get(name).value_or(""),
                       "': not a haltpool variable; known: ", KnownNames()));
    }
  }
  Config config;
  config.detected = detected;
  config.pool.contention_probe = code.contention_probe;
  config.pool.on_exception = code.on_exception;
  // The environment's own variable first: its profile fills the others.
  const Tunable& hypervisor = *FindTunable(kHypervisorVariable);
  std::optional<std::string> chosen = env.Get(kHypervisorVariable);
  if (chosen) {
    if (absl::Status s = hypervisor.parse(*chosen, config); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kHypervisorVariable, "='", *chosen, "': ", s.message()));
    }
  }
  config.environment = config.hypervisor_override.value_or(detected.kind);
  const idle::Profile& profile = idle::ProfileFor(config.environment);
  for (const Tunable& t : Tunables()) {
    ValueSource source = ValueSource::kDefault;
    if (t.from_profile_value) {
      t.from_profile_value(profile, config);
      source = ValueSource::kProfile;
    }
    absl::StatusOr<bool> set = t.from_code(code, config);
    if (!set.ok()) return CodeError(t, set.status());
    if (*set) source = ValueSource::kCode;
    if (std::optional<std::string> value = env.Get(t.variable)) {
      if (absl::Status s = t.parse(*value, config); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(t.variable, "='", *value, "': ", s.message()));
      }
      source = ValueSource::kEnvironment;
    }
    config.variables.push_back({std::string(t.variable), "", source});
  }
  Reformat(config);
  if (absl::Status s = CheckConsistency(config); !s.ok()) return s;
  if (absl::Status s = CheckWait(config); !s.ok()) return s;
  return config;
}

absl::Status ApplyCodeOptions(const PoolOptions& code, Config& config) {
  Config changed = config;
  if (code.contention_probe)
    changed.pool.contention_probe = code.contention_probe;
  if (code.on_exception) changed.pool.on_exception = code.on_exception;
  for (const Tunable& t : Tunables()) {
    absl::StatusOr<bool> set = t.from_code(code, changed);
    if (!set.ok()) return CodeError(t, set.status());
    if (!*set) continue;
    if (ResolvedVariable* v = Entry(changed, t.variable)) {
      v->source = ValueSource::kCode;
    }
  }
  Reformat(changed);
  if (absl::Status s = ValidateConfig(changed); !s.ok()) return s;
  config = std::move(changed);
  return absl::OkStatus();
}

absl::Status ValidateConfig(const Config& config) {
  if (config.variables.size() != Tunables().size()) {
    return absl::InvalidArgumentError(
        "the configuration was not resolved (no value sources); accepted: "
        "one from ResolveConfig or ConfigFromEnvironmentOrExit");
  }
  for (const Tunable& t : Tunables()) {
    if (absl::Status s = t.check(config); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Named(config, t.variable), ": ", s.message()));
    }
  }
  if (absl::Status s = CheckConsistency(config); !s.ok()) return s;
  return CheckWait(config);
}

bool WantsCalibration(const Config& config) {
  if (!config.pool.calibrate) return false;
  for (const char* name :
       {kExitLatencyVariable, kResidencyVariable, kWakeMarginVariable}) {
    const ResolvedVariable* v = config.Find(name);
    if (v != nullptr && v->source < ValueSource::kCalibration) return true;
  }
  return false;
}

void ApplyCalibration(const idle::Calibration& calibration, Config& config) {
  if (!calibration.measured || !config.pool.calibrate) return;
  auto fill = [&](const char* name, int64_t& field, int64_t value) {
    ResolvedVariable* v = Entry(config, name);
    if (v == nullptr || v->source >= ValueSource::kCalibration) return;
    field = value;
    v->source = ValueSource::kCalibration;
  };
  fill(kExitLatencyVariable, config.pool.idle.block_exit_latency_ns,
       calibration.block_wake_ns);
  fill(kResidencyVariable, config.pool.idle.block_target_residency_ns,
       2 * calibration.block_wake_ns);
  if (calibration.timed_wait_late_ns > 0) {
    fill(kWakeMarginVariable, config.pool.idle.wake_margin_ns,
         calibration.timed_wait_late_ns);
  }
  Reformat(config);
}

std::string DisplayEnv(const Config& config) {
  std::string out = "HALTPOOL DISPLAY ENVIRONMENT BEGIN\n";
  for (const ResolvedVariable& v : config.variables) {
    absl::StrAppend(&out, "  ", v.name, " = '", v.value, "'  [",
                    ValueSourceName(v.source), "]\n");
  }
  absl::StrAppend(&out, "HALTPOOL DISPLAY ENVIRONMENT END\n");
  return out;
}

Config ConfigFromEnvironmentOrExit(const PoolOptions& code) {
  absl::StatusOr<Config> config = ResolveConfig(code, ProcessEnvironment());
  if (!config.ok()) {
    absl::FPrintF(stderr, "haltpool: %s\n", config.status().message());
    exit(2);
  }
  if (config->display_env) absl::FPrintF(stderr, "%s", DisplayEnv(*config));
  return *std::move(config);
}

}  // namespace haltpool
