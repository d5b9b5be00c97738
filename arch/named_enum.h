// A table of an enum's values and their names, for the enums haltpool
// spells in variables, flags and statistics (host environments, wait
// mechanisms, pin modes, I/O backends). One table per enum gives its name
// function, its parser and the list of accepted names, so the three cannot
// drift apart. It lives in arch/, the lowest layer, so every layer can use it.

#ifndef HALTPOOL_ARCH_NAMED_ENUM_H_
#define HALTPOOL_ARCH_NAMED_ENUM_H_

#include <array>
#include <cstddef>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace haltpool::arch {

template <typename Enum>
struct EnumName {
  Enum value;
  absl::string_view name;  // Lower case, as in variables and output.
};

// `N` values of `Enum` with their names, in the order help lists them.
// constexpr, so a table is a compile-time constant with no start-up cost.
template <typename Enum, size_t N>
class NamedEnum {
 public:
  constexpr explicit NamedEnum(const std::array<EnumName<Enum>, N>& entries)
      : entries_(entries) {}

  // The name of `value`; "unknown" for a value not in the table.
  constexpr absl::string_view Name(Enum value) const {
    for (const EnumName<Enum>& e : entries_) {
      if (e.value == value) return e.name;
    }
    return "unknown";
  }

  // The value named exactly `name` (case sensitive), if any.
  constexpr std::optional<Enum> Parse(absl::string_view name) const {
    for (const EnumName<Enum>& e : entries_) {
      if (e.name == name) return e.value;
    }
    return std::nullopt;
  }

  // Every name joined by `separator`, for help and error messages.
  std::string Names(absl::string_view separator = "|") const {
    std::string out;
    for (const EnumName<Enum>& e : entries_) {
      absl::StrAppend(&out, out.empty() ? "" : separator, e.name);
    }
    return out;
  }

  // Every value, in table order.
  constexpr std::array<Enum, N> values() const {
    std::array<Enum, N> out{};
    for (size_t i = 0; i < N; ++i) out[i] = entries_[i].value;
    return out;
  }

  constexpr const std::array<EnumName<Enum>, N>& entries() const {
    return entries_;
  }

 private:
  std::array<EnumName<Enum>, N> entries_;
};

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_NAMED_ENUM_H_
