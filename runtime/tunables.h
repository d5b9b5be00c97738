// The one table of haltpool's tunables. Each row declares a tunable once:
// its HALTPOOL_* variable, the PoolOptions field code sets it with, its
// type and accepted range, its default, whether the profile gives it, and
// its help text. The parser, the range check, the display (DisplayEnv,
// haltpool_info) and the documentation's table of variables all come from
// these rows; tests/docs checks the documented table against them.

#ifndef HALTPOOL_RUNTIME_TUNABLES_H_
#define HALTPOOL_RUNTIME_TUNABLES_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "idle/profile.h"
#include "runtime/config.h"
#include "runtime/pool_options.h"

namespace haltpool {

struct Tunable {
  absl::string_view variable;  // "HALTPOOL_POLL_NS".
  // The PoolOptions field ("idle.haltpoll.poll_ns"); empty for a tunable
  // only the environment sets.
  absl::string_view field;
  absl::string_view help;     // What it does, one sentence.
  std::string accepted;       // "0 to 1s", "pause|umwait|...".
  std::string default_value;  // Spelled as in the environment.
  bool from_profile = false;  // The environment's profile gives the default.

  // Parses `text` (the variable's value) into `config`; InvalidArgument
  // saying what is wrong and what is accepted, without the variable's name.
  std::function<absl::Status(absl::string_view text, Config& config)> parse;
  // If code set the field, checks it and copies it into `config`: true if
  // set, InvalidArgument (without the field's name) if out of range.
  std::function<absl::StatusOr<bool>(const PoolOptions& code, Config& config)>
      from_code;
  // OK if the resolved value is one the tunable accepts; InvalidArgument
  // (without the variable's name) otherwise, for a configuration changed
  // after it was resolved.
  std::function<absl::Status(const Config& config)> check;
  // Puts the profile's value into `config`; null unless from_profile.
  std::function<void(const idle::Profile& profile, Config& config)>
      from_profile_value;
  // The resolved value, spelled as the variable takes it.
  std::function<std::string(const Config& config)> format;
};

// Every tunable, HALTPOOL_HYPERVISOR first (its profile gives the others'
// defaults).
const std::vector<Tunable>& Tunables();

// The tunable named `variable`, or nullptr.
const Tunable* FindTunable(absl::string_view variable);

// The Markdown table of the variables (variable, default, accepted,
// meaning), as the documentation holds it between its
// `<!-- haltpool-variables:begin -->` and `:end -->` markers.
std::string VariablesMarkdownTable();

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_TUNABLES_H_
