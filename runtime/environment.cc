#include "runtime/environment.h"

#include <stdlib.h>
#include <unistd.h>

#include "absl/strings/match.h"

namespace haltpool {
namespace {

class ProcessEnv final : public Environment {
 public:
  std::optional<std::string> Get(absl::string_view name) const override {
    const char* v = getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  }

  std::vector<std::string> NamesWithPrefix(
      absl::string_view prefix) const override {
    std::vector<std::string> names;
    for (char** e = environ; *e != nullptr; ++e) {
      absl::string_view entry(*e);
      if (!absl::StartsWith(entry, prefix)) continue;
      names.emplace_back(entry.substr(0, entry.find('=')));
    }
    return names;
  }
};

}  // namespace

const Environment& ProcessEnvironment() {
  static const ProcessEnv kEnv;
  return kEnv;
}

std::optional<std::string> MapEnvironment::Get(absl::string_view name) const {
  auto it = vars_.find(std::string(name));
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> MapEnvironment::NamesWithPrefix(
    absl::string_view prefix) const {
  std::vector<std::string> names;
  for (const auto& [name, value] : vars_) {
    if (absl::StartsWith(name, prefix)) names.push_back(name);
  }
  return names;
}

}  // namespace haltpool
