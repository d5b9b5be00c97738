#include "runtime/config.h"

#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "arch/wait_mechanism.h"
#include "idle/governor_registry.h"
#include "idle/profile.h"
#include "runtime/value_parse.h"

namespace haltpool {
namespace {

// More workers or pollers than this is a typo, not a machine.
constexpr int64_t kMaxWorkers = 4096;

// A variable: how to apply a value to the config, and how to spell the
// config's current value. The table below is the single list of variables.
struct Variable {
  absl::string_view name;
  absl::string_view meaning;
  std::function<absl::Status(absl::string_view, Config&)> apply;
  std::function<std::string(const Config&)> format;
  bool from_profile = false;  // The environment's profile gives the default.
};

absl::Status SetDuration(absl::string_view text, int64_t max, int64_t& field) {
  absl::StatusOr<int64_t> v = ParseDurationNs(text, 0, max);
  if (!v.ok()) return v.status();
  field = *v;
  return absl::OkStatus();
}

absl::Status SetInteger(absl::string_view text, int64_t min, int64_t max,
                        int64_t& field) {
  absl::StatusOr<int64_t> v = ParseInteger(text, min, max);
  if (!v.ok()) return v.status();
  field = *v;
  return absl::OkStatus();
}

const std::vector<Variable>& Variables() {
  static const auto* kVariables = new std::vector<Variable>{
      {"HALTPOOL_HYPERVISOR",
       "the environment whose profile gives the idle defaults: auto "
       "(detected), or one of bare-metal, kvm-dedicated, kvm-shared, hyperv, "
       "vmware, xen, zvm, lpar, kvm-s390, unknown-vm",
       [](absl::string_view v, Config& c) -> absl::Status {
         if (v == "auto") {
           c.hypervisor_override.reset();
           return absl::OkStatus();
         }
         absl::StatusOr<arch::HostEnvironment> e =
             arch::ParseHostEnvironment(v);
         if (!e.ok()) {
           return absl::InvalidArgumentError(
               absl::StrCat(v.empty() ? "empty" : "unknown environment",
                            "; accepted: auto|", arch::HostEnvironmentNames()));
         }
         c.hypervisor_override = *e;
         return absl::OkStatus();
       },
       [](const Config& c) {
         return c.hypervisor_override ? std::string(arch::HostEnvironmentName(
                                            *c.hypervisor_override))
                                      : std::string("auto");
       }},
      {"HALTPOOL_CALIBRATE",
       "1 measures the block state's wake cost when the first pool starts "
       "(a few milliseconds) and uses it in the state table; 0 keeps the "
       "profile's",
       [](absl::string_view v, Config& c) {
         absl::StatusOr<bool> b = ParseBool(v);
         if (!b.ok()) return b.status();
         c.pool.calibrate = *b;
         return absl::OkStatus();
       },
       [](const Config& c) {
         return std::string(c.pool.calibrate ? "1" : "0");
       }},
      {"HALTPOOL_BACKOFF",
       "1 backs off polling while the CPUs are contended (steal time, more "
       "runnable threads than CPUs, pollers preempted); 0 polls regardless",
       [](absl::string_view v, Config& c) {
         absl::StatusOr<bool> b = ParseBool(v);
         if (!b.ok()) return b.status();
         c.pool.backoff = *b;
         return absl::OkStatus();
       },
       [](const Config& c) { return std::string(c.pool.backoff ? "1" : "0"); }},
      {"HALTPOOL_GOVERNOR",
       "the idle governor: haltpoll (adaptive window, the kernel's), "
       "predictive (the next timer and regular wakes), poll (never blocks), "
       "block (never polls), fixed (HALTPOOL_FIXED_POLL_NS)",
       [](absl::string_view v, Config& c) {
         if (!idle::IsGovernorName(v)) {
           return absl::InvalidArgumentError(
               absl::StrCat(v.empty() ? "empty" : "unknown governor",
                            "; accepted: ", idle::GovernorNames()));
         }
         c.pool.idle.governor = std::string(v);
         return absl::OkStatus();
       },
       [](const Config& c) { return c.pool.idle.governor; },
       /*from_profile=*/true},
      {"HALTPOOL_POLL_NS",
       "haltpoll and predictive: the poll window's cap, as "
       "guest_halt_poll_ns",
       [](absl::string_view v, Config& c) {
         return SetDuration(v, idle::kMaxWindowNs,
                            c.pool.idle.haltpoll.poll_ns);
       },
       [](const Config& c) {
         return FormatDurationNs(c.pool.idle.haltpoll.poll_ns);
       },
       /*from_profile=*/true},
      {"HALTPOOL_POLL_GROW",
       "haltpoll: factor the window grows by, as guest_halt_poll_grow",
       [](absl::string_view v, Config& c) {
         return SetInteger(v, idle::kMinGrow, idle::kMaxFactor,
                           c.pool.idle.haltpoll.grow);
       },
       [](const Config& c) { return absl::StrCat(c.pool.idle.haltpoll.grow); }},
      {"HALTPOOL_POLL_GROW_START",
       "haltpoll: the first non-zero window, as guest_halt_poll_grow_start",
       [](absl::string_view v, Config& c) {
         return SetDuration(v, idle::kMaxWindowNs,
                            c.pool.idle.haltpoll.grow_start);
       },
       [](const Config& c) {
         return FormatDurationNs(c.pool.idle.haltpoll.grow_start);
       }},
      {"HALTPOOL_POLL_SHRINK",
       "haltpoll: divisor the window shrinks by (0 resets it), as "
       "guest_halt_poll_shrink",
       [](absl::string_view v, Config& c) {
         return SetInteger(v, 0, idle::kMaxFactor, c.pool.idle.haltpoll.shrink);
       },
       [](const Config& c) {
         return absl::StrCat(c.pool.idle.haltpoll.shrink);
       }},
      {"HALTPOOL_POLL_ALLOW_SHRINK",
       "haltpoll: whether long blocks shrink the window, as "
       "guest_halt_poll_allow_shrink",
       [](absl::string_view v, Config& c) {
         absl::StatusOr<bool> b = ParseBool(v);
         if (!b.ok()) return b.status();
         c.pool.idle.haltpoll.allow_shrink = *b;
         return absl::OkStatus();
       },
       [](const Config& c) {
         return std::string(c.pool.idle.haltpoll.allow_shrink ? "1" : "0");
       }},
      {"HALTPOOL_FIXED_POLL_NS", "fixed: the constant poll window",
       [](absl::string_view v, Config& c) {
         return SetDuration(v, idle::kMaxWindowNs, c.pool.idle.fixed_poll_ns);
       },
       [](const Config& c) {
         return FormatDurationNs(c.pool.idle.fixed_poll_ns);
       }},
      {"HALTPOOL_WAIT",
       "the poll state's wait instruction: auto picks the best the CPU has; "
       "forcing one it lacks is an error at start-up",
       [](absl::string_view v, Config& c) -> absl::Status {
         if (v == "auto") {
           c.pool.idle.wait.reset();
           return absl::OkStatus();
         }
         absl::StatusOr<arch::WaitMechanism> m = arch::ParseWaitMechanism(v);
         if (!m.ok()) {
           return absl::InvalidArgumentError(
               absl::StrCat(v.empty() ? "empty" : "unknown wait mechanism",
                            "; accepted: auto|", arch::WaitMechanismNames()));
         }
         c.pool.idle.wait = *m;
         return absl::OkStatus();
       },
       [](const Config& c) {
         return c.pool.idle.wait
                    ? std::string(arch::WaitMechanismName(*c.pool.idle.wait))
                    : std::string("auto");
       }},
      {"HALTPOOL_WORKERS",
       "workers in a pool; 0: one per CPU the process may use (its affinity "
       "mask, capped by a cgroup cpu.max quota)",
       [](absl::string_view v, Config& c) {
         int64_t n = 0;
         absl::Status s = SetInteger(v, 0, kMaxWorkers, n);
         c.pool.workers = static_cast<int>(n);
         return s;
       },
       [](const Config& c) { return absl::StrCat(c.pool.workers); }},
      {"HALTPOOL_MAX_POLLERS",
       "idle workers that may poll at once; 0: half the workers, at least one",
       [](absl::string_view v, Config& c) {
         int64_t n = 0;
         absl::Status s = SetInteger(v, 0, kMaxWorkers, n);
         c.pool.max_pollers = static_cast<int>(n);
         return s;
       },
       [](const Config& c) { return absl::StrCat(c.pool.max_pollers); }},
      {"HALTPOOL_PIN",
       "worker pinning: none, core (a physical core each, cores before SMT "
       "siblings), pu (a hardware thread each)",
       [](absl::string_view v, Config& c) -> absl::Status {
         absl::StatusOr<PinMode> m = ParsePinMode(v);
         if (!m.ok()) {
           return absl::InvalidArgumentError(
               absl::StrCat(v.empty() ? "empty" : "unknown pin mode",
                            "; accepted: ", PinModeNames()));
         }
         c.pool.pin = *m;
         return absl::OkStatus();
       },
       [](const Config& c) { return std::string(PinModeName(c.pool.pin)); }},
      {"HALTPOOL_IO",
       "the I/O backend: auto (io_uring, else epoll where io_uring is "
       "missing or refused), uring, epoll",
       [](absl::string_view v, Config& c) -> absl::Status {
         absl::StatusOr<IoBackend> b = ParseIoBackend(v);
         if (!b.ok()) {
           return absl::InvalidArgumentError(
               absl::StrCat(v.empty() ? "empty" : "unknown I/O backend",
                            "; accepted: ", IoBackendNames()));
         }
         c.pool.io = *b;
         return absl::OkStatus();
       },
       [](const Config& c) { return std::string(IoBackendName(c.pool.io)); }},
      {"HALTPOOL_STATS",
       "1 prints every worker's statistics to stderr when a pool shuts down",
       [](absl::string_view v, Config& c) {
         absl::StatusOr<bool> b = ParseBool(v);
         if (!b.ok()) return b.status();
         c.pool.print_stats = *b;
         return absl::OkStatus();
       },
       [](const Config& c) {
         return std::string(c.pool.print_stats ? "1" : "0");
       }},
      {"HALTPOOL_DISPLAY_ENV",
       "1 prints the resolved configuration and each value's source to "
       "stderr at start-up, as OMP_DISPLAY_ENV",
       [](absl::string_view v, Config& c) {
         absl::StatusOr<bool> b = ParseBool(v);
         if (!b.ok()) return b.status();
         c.display_env = *b;
         return absl::OkStatus();
       },
       [](const Config& c) { return std::string(c.display_env ? "1" : "0"); }},
  };
  return *kVariables;
}

std::string KnownNames() {
  std::vector<absl::string_view> names;
  for (const Variable& v : Variables()) names.push_back(v.name);
  return absl::StrJoin(names, ", ");
}

// The resolved value of variable `name`, spelled as in the environment.
std::string Formatted(const Config& config, absl::string_view name) {
  for (const Variable& v : Variables()) {
    if (v.name == name) return v.format(config);
  }
  return "";
}

constexpr char kHypervisorVariable[] = "HALTPOOL_HYPERVISOR";

// Sets each field the profile covers that `code` left at its PoolOptions{}
// default. Code that sets the block state's costs keeps them: no
// calibration replaces them.
void ApplyProfile(const idle::Profile& profile, const PoolOptions& code,
                  PoolOptions& out) {
  const idle::IdleOptions plain;
  if (code.idle.governor == plain.governor) {
    out.idle.governor = std::string(profile.governor);
  }
  if (code.idle.haltpoll.poll_ns == plain.haltpoll.poll_ns) {
    out.idle.haltpoll.poll_ns = profile.poll_ns;
  }
  // Costs equal to the profile's are not the code's own: a program passes a
  // resolved configuration back in as code options.
  auto differs = [&](int64_t value, int64_t plain_value, int64_t profiled) {
    return value != plain_value && value != profiled;
  };
  const bool code_costs =
      differs(code.idle.block_exit_latency_ns, plain.block_exit_latency_ns,
              profile.block_exit_latency_ns) ||
      differs(code.idle.block_target_residency_ns,
              plain.block_target_residency_ns,
              profile.block_target_residency_ns);
  if (code_costs) {
    out.calibrate = false;
  } else {
    out.idle.block_exit_latency_ns = profile.block_exit_latency_ns;
    out.idle.block_target_residency_ns = profile.block_target_residency_ns;
  }
}

// Settings each valid alone that contradict each other, whichever of code
// and environment set them. Named by variable, with the PoolOptions field.
absl::Status CheckConsistency(const Config& c) {
  const PoolOptions& o = c.pool;
  const int64_t cap = o.idle.haltpoll.poll_ns;
  if (o.idle.governor == "fixed" && o.idle.fixed_poll_ns > cap) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HALTPOOL_FIXED_POLL_NS=", Formatted(c, "HALTPOOL_FIXED_POLL_NS"),
        " (idle.fixed_poll_ns) is above the poll cap HALTPOOL_POLL_NS=",
        Formatted(c, "HALTPOOL_POLL_NS"),
        " (idle.haltpoll.poll_ns); accepted: a fixed window no longer than "
        "the cap"));
  }
  if (o.workers > 0 && o.max_pollers > o.workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HALTPOOL_MAX_POLLERS=", o.max_pollers,
        " (max_pollers) is more than HALTPOOL_WORKERS=", o.workers,
        " (workers); accepted: 0 (half the workers) up to the worker count"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view ValueSourceName(ValueSource source) {
  switch (source) {
    case ValueSource::kDefault:
      return "default";
    case ValueSource::kProfile:
      return "profile";
    case ValueSource::kCode:
      return "code";
    case ValueSource::kEnvironment:
      return "environment";
  }
  return "unknown";
}

std::vector<VariableDoc> DocumentedVariables() {
  const Config defaults;
  std::vector<VariableDoc> docs;
  for (const Variable& v : Variables()) {
    docs.push_back({v.name,
                    v.from_profile ? kProfileDefault : v.format(defaults),
                    v.meaning});
  }
  return docs;
}

absl::StatusOr<Config> ResolveConfig(const PoolOptions& code,
                                     const Environment& env) {
  return ResolveConfig(code, env, arch::HostHypervisor());
}

absl::StatusOr<Config> ResolveConfig(const PoolOptions& code,
                                     const Environment& env,
                                     const arch::HypervisorInfo& detected) {
  absl::Status s = idle::ValidateIdleOptions(code.idle);
  for (const auto& [field, value] :
       {std::pair<absl::string_view, int>{"workers", code.workers},
        {"max_pollers", code.max_pollers}}) {
    if (s.ok() && (value < 0 || value > kMaxWorkers)) {
      s = absl::InvalidArgumentError(
          absl::StrCat(field, " = ", value, " is out of range; accepted: 0 to ",
                       kMaxWorkers));
    }
  }
  if (!s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid option from code: ", s.message()));
  }
  for (const std::string& name : env.NamesWithPrefix("HALTPOOL_")) {
    const auto& vars = Variables();
    if (std::none_of(vars.begin(), vars.end(),
                     [&](const Variable& v) { return v.name == name; })) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "='", env.Get(name).value_or(""),
                       "': not a haltpool variable; known: ", KnownNames()));
    }
  }
  // The environment first: its profile gives the defaults the other
  // variables and code override.
  Config config;
  config.detected = detected;
  if (std::optional<std::string> value = env.Get(kHypervisorVariable)) {
    if (absl::Status s = Variables()[0].apply(*value, config); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kHypervisorVariable, "='", *value, "': ", s.message()));
    }
  }
  config.environment = config.hypervisor_override.value_or(detected.kind);
  const Config defaults;
  Config profiled = defaults;
  ApplyProfile(idle::ProfileFor(config.environment), PoolOptions{},
               profiled.pool);
  config.pool = code;
  ApplyProfile(idle::ProfileFor(config.environment), code, config.pool);
  for (const Variable& v : Variables()) {
    ValueSource source = ValueSource::kDefault;
    if (v.format(config) != v.format(profiled)) {
      source = ValueSource::kCode;
    } else if (v.format(profiled) != v.format(defaults)) {
      source = ValueSource::kProfile;
    }
    if (std::optional<std::string> value = env.Get(v.name)) {
      if (absl::Status s = v.apply(*value, config); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(v.name, "='", *value, "': ", s.message()));
      }
      source = ValueSource::kEnvironment;
    }
    config.variables.push_back({std::string(v.name), "", source});
  }
  if (absl::Status s = CheckConsistency(config); !s.ok()) return s;
  for (size_t i = 0; i < Variables().size(); ++i) {
    config.variables[i].value = Variables()[i].format(config);
  }
  return config;
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
    fprintf(stderr, "haltpool: %s\n",
            std::string(config.status().message()).c_str());
    exit(2);
  }
  if (config->display_env) fputs(DisplayEnv(*config).c_str(), stderr);
  return *std::move(config);
}

}  // namespace haltpool
