// haltpool's resolved configuration: every tunable with its final value and
// where that value came from.
//
// Weakest first: the built-in default, the profile of the environment
// haltpool runs in (idle/profile.h), calibration (the block state's costs,
// measured when the first pool starts), code (PoolOptions fields that are
// set), and a HALTPOOL_* variable, which has the last word so an operator
// can retune a running service without a rebuild. Unset is its own state: a
// field code sets sticks even when it equals the default, and the profile
// and calibration fill only what neither code nor the environment set.
// Parsing is strict: a bad value is an error naming the variable (or the
// PoolOptions field), the value and what is accepted. The tunables
// themselves are declared once, in runtime/tunables.cc.

#ifndef HALTPOOL_RUNTIME_CONFIG_H_
#define HALTPOOL_RUNTIME_CONFIG_H_

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arch/hypervisor.h"
#include "idle/calibration.h"
#include "idle/idle_options.h"
#include "idle/poll_backoff.h"
#include "runtime/environment.h"
#include "runtime/io/io_backend.h"
#include "runtime/pool_options.h"
#include "runtime/topology.h"

namespace haltpool {

// Where a value came from, weakest first.
enum class ValueSource {
  kDefault,
  kProfile,
  kCalibration,
  kCode,
  kEnvironment
};

// "default", "profile", "calibration", "code", "environment".
absl::string_view ValueSourceName(ValueSource source);

// One tunable as resolved: its final value, spelled as in the environment.
struct ResolvedVariable {
  std::string name;   // "HALTPOOL_POLL_NS"
  std::string value;  // "200us"
  ValueSource source = ValueSource::kDefault;
};

// A pool's options with every value resolved: what the runtime runs with.
// The defaults here are the built-in ones (the idle layer's own, which cite
// the kernel's).
struct PoolConfig {
  int workers = 0;      // 0: one per CPU the process may use.
  int max_pollers = 0;  // 0: half the workers, at least one.
  PinMode pin = PinMode::kNone;
  std::vector<int> cpus;  // Empty: every CPU the creating thread may use.
  IoBackend io = IoBackend::kAuto;
  unsigned io_entries = IoReactorOptions().entries;
  IoTaskRun io_task_run = IoReactorOptions().task_run;
  idle::IdleOptions idle;
  bool calibrate = true;
  bool backoff = true;
  bool print_stats = false;
  // Carried over from PoolOptions unchanged (not tunables).
  std::function<idle::ContentionSample()> contention_probe;
  std::function<void(std::exception_ptr)> on_exception;
};

struct Config {
  PoolConfig pool;
  bool display_env = false;  // HALTPOOL_DISPLAY_ENV.
  // HALTPOOL_HYPERVISOR; unset ("auto"): detection decides.
  std::optional<arch::HostEnvironment> hypervisor_override;
  arch::HypervisorInfo detected;  // What detection found.
  // The environment whose profile gave the defaults: the override if set,
  // else detected.kind.
  arch::HostEnvironment environment = arch::HostEnvironment::kBareMetal;
  // Every tunable, in runtime/tunables.cc's order.
  std::vector<ResolvedVariable> variables;

  // The resolved entry for `name` (a HALTPOOL_* variable), or nullptr.
  const ResolvedVariable* Find(absl::string_view name) const;
};

// Resolves `code` under `env`, on a machine where hypervisor detection found
// `detected`. The profile of the environment (HALTPOOL_HYPERVISOR, else
// detected.kind) fills the governor, the poll cap and the block state's
// costs wherever neither code nor the environment set them. Fails with
// InvalidArgument on the first bad variable ("HALTPOOL_POLL_NS='5x':
// unknown unit 'x'; accepted: ..."), on a HALTPOOL_* variable that is not a
// tunable, on a bad code value ("idle.haltpoll.poll_ns (HALTPOOL_POLL_NS) =
// 2s: out of range; accepted: ..."), or on settings that contradict each
// other (a fixed window above the poll cap); with FailedPrecondition, naming
// the variable, when the chosen wait mechanism cannot run on this CPU.
absl::StatusOr<Config> ResolveConfig(const PoolOptions& code,
                                     const Environment& env,
                                     const arch::HypervisorInfo& detected);

// ResolveConfig where the process runs: detected = arch::HostHypervisor().
absl::StatusOr<Config> ResolveConfig(const PoolOptions& code,
                                     const Environment& env);

// Sets the fields `code` sets over an already resolved `config`, each with
// source kCode: how a program changes a resolved configuration (say, a
// benchmark running each governor in turn) and keeps the display true.
// Unlike ResolveConfig, the environment does not override them. Fails as
// ResolveConfig does on a bad code value or contradicting settings, and
// leaves `config` as it was.
absl::Status ApplyCodeOptions(const PoolOptions& code, Config& config);

// OK if `config` came from ResolveConfig and every value in it is still one
// its tunable accepts, consistent with the others and runnable here (the
// wait mechanism); ThreadPool::Create(Config) checks this, since a program
// may change a resolved configuration. Errors name the variable, the field,
// the value's source and what is accepted.
absl::Status ValidateConfig(const Config& config);

// True if calibration is on and one of the block state's costs or the wake
// margin still has only its profile's or default value.
bool WantsCalibration(const Config& config);

// Puts a measured calibration into `config`: the block state's exit latency
// becomes the median block wake, its target residency twice that, and the
// wake margin the measured lateness of a timed block, each only where
// neither code nor the environment set it; their source becomes
// kCalibration. Does nothing if `calibration` was not measured.
void ApplyCalibration(const idle::Calibration& calibration, Config& config);

// The resolved values and their sources, framed as OMP_DISPLAY_ENV frames
// its output.
std::string DisplayEnv(const Config& config);

// For programs: resolves from the process environment; on error prints
// "haltpool: <message>" to stderr and exits with status 2 before any work;
// with HALTPOOL_DISPLAY_ENV set, prints DisplayEnv() to stderr. It does not
// calibrate: a program that starts a pool passes the result (changed, if at
// all, through ApplyCodeOptions) to ThreadPool::Create(Config), which
// calibrates what is left to calibrate and, with HALTPOOL_DISPLAY_ENV,
// prints the configuration that pool runs with.
Config ConfigFromEnvironmentOrExit(const PoolOptions& code = {});

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_CONFIG_H_
