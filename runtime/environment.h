// The process environment behind an interface, so configuration tests feed
// their own variables instead of mutating the real ones.

#ifndef HALTPOOL_RUNTIME_ENVIRONMENT_H_
#define HALTPOOL_RUNTIME_ENVIRONMENT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace haltpool {

class Environment {
 public:
  virtual ~Environment() = default;
  // The value of `name`, or nullopt if unset (set-but-empty is "").
  virtual std::optional<std::string> Get(absl::string_view name) const = 0;
  // Every variable name that starts with `prefix`.
  virtual std::vector<std::string> NamesWithPrefix(
      absl::string_view prefix) const = 0;
};

// The real environment (environ). Read at call time; not thread-safe against
// setenv() elsewhere, as getenv itself.
const Environment& ProcessEnvironment();

// A fixed set of variables, for tests and for embedding.
class MapEnvironment final : public Environment {
 public:
  MapEnvironment() = default;
  explicit MapEnvironment(std::map<std::string, std::string> vars)
      : vars_(std::move(vars)) {}
  std::optional<std::string> Get(absl::string_view name) const override;
  std::vector<std::string> NamesWithPrefix(
      absl::string_view prefix) const override;

 private:
  std::map<std::string, std::string> vars_;
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_ENVIRONMENT_H_
