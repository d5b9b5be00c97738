// haltpool's configuration from code and the environment: the HALTPOOL_*
// variables, for the pool and for the idle policy of its workers.
//
// Defaults come first, code options override them, and the environment has
// the last word, so an operator can retune a running service without a
// rebuild. Parsing is strict: a bad value is an error naming the variable,
// the value and what is accepted. The table of variables lives in
// config.cc and is the only list of them.

#ifndef HALTPOOL_RUNTIME_CONFIG_H_
#define HALTPOOL_RUNTIME_CONFIG_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/hypervisor.h"
#include "runtime/environment.h"
#include "runtime/pool_options.h"

namespace haltpool {

// Where a value came from, weakest first: the built-in default, the profile
// of the environment haltpool runs in (idle/profile.h), code, or a
// HALTPOOL_* variable.
enum class ValueSource { kDefault, kProfile, kCode, kEnvironment };

// "default", "profile", "code", "environment".
absl::string_view ValueSourceName(ValueSource source);

// One variable as resolved: its final value, spelled as in the environment.
struct ResolvedVariable {
  std::string name;   // "HALTPOOL_POLL_NS"
  std::string value;  // "200us"
  ValueSource source;
};

struct Config {
  PoolOptions pool;          // The pool's options, idle policy included.
  bool display_env = false;  // HALTPOOL_DISPLAY_ENV.
  // HALTPOOL_HYPERVISOR; unset ("auto"): detection decides.
  std::optional<arch::HostEnvironment> hypervisor_override;
  arch::HypervisorInfo detected;  // What detection found.
  // The environment whose profile gave the defaults: the override if set,
  // else detected.kind.
  arch::HostEnvironment environment = arch::HostEnvironment::kBareMetal;
  std::vector<ResolvedVariable> variables;  // Every variable, in table order.
};

// The default of a variable the profile sets, as documented.
inline constexpr char kProfileDefault[] = "profile";

// A documented variable: for README tables and help. default_value is
// kProfileDefault for variables whose default the profile gives.
struct VariableDoc {
  absl::string_view name;
  std::string default_value;
  absl::string_view meaning;
};

// Every HALTPOOL_* variable the runtime reads, with default and meaning.
std::vector<VariableDoc> DocumentedVariables();

// Resolves `code` (fields that differ from PoolOptions{} count as set by
// code) under `env`, on a machine where hypervisor detection found
// `detected`. The profile of the environment (HALTPOOL_HYPERVISOR, else
// detected.kind) gives the governor, the poll cap and the block state's
// costs for every such field code leaves at its PoolOptions{} default. Code
// that sets the block state's costs turns calibration off. Fails with
// InvalidArgument on the first bad variable ("HALTPOOL_POLL_NS='5x':
// unknown unit 'x'; accepted: ..."), on a HALTPOOL_* variable that is not in
// the table, on a bad code value, or on settings that contradict each other
// (a fixed window above the poll cap).
absl::StatusOr<Config> ResolveConfig(const PoolOptions& code,
                                     const Environment& env,
                                     const arch::HypervisorInfo& detected);

// ResolveConfig on this machine: detected = arch::HostHypervisor().
absl::StatusOr<Config> ResolveConfig(const PoolOptions& code,
                                     const Environment& env);

// The resolved values and their sources, framed as OMP_DISPLAY_ENV frames
// its output.
std::string DisplayEnv(const Config& config);

// For programs: resolves from the process environment; on error prints
// "haltpool: <message>" to stderr and exits with status 2 before any work;
// with HALTPOOL_DISPLAY_ENV set, prints DisplayEnv() to stderr.
Config ConfigFromEnvironmentOrExit(const PoolOptions& code = {});

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_CONFIG_H_
