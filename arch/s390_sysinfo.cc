#include "arch/s390_sysinfo.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace haltpool::arch {
namespace {

using E = HostEnvironment;

// "Key:   value" lines of /proc/sysinfo, values trimmed; the first of each.
std::map<std::string, std::string, std::less<>> SysinfoFields(
    absl::string_view content) {
  std::map<std::string, std::string, std::less<>> fields;
  for (absl::string_view line : absl::StrSplit(content, '\n')) {
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    fields.emplace(
        std::string(absl::StripAsciiWhitespace(line.substr(0, colon))),
        std::string(absl::StripAsciiWhitespace(line.substr(colon + 1))));
  }
  return fields;
}

// "z/VM    7.3.0" -> "z/VM 7.3.0".
std::string CollapseBlanks(absl::string_view s) {
  return absl::StrJoin(absl::StrSplit(s, ' ', absl::SkipEmpty()), " ");
}

}  // namespace

absl::StatusOr<HypervisorInfo> HypervisorFromSysinfo(const SystemFiles& files) {
  absl::StatusOr<std::string> content = files.Read(kProcSysinfo);
  if (!content.ok()) return content.status();
  const auto fields = SysinfoFields(*content);
  HypervisorInfo info;
  info.steal_time = true;  // s390x accounts steal from the CPU timer.
  if (auto cp = fields.find("VM00 Control Program"); cp != fields.end()) {
    info.vendor = CollapseBlanks(cp->second);
    info.source = absl::StrCat(kProcSysinfo, " VM00 Control Program");
    if (absl::StartsWith(cp->second, "z/VM")) {
      info.kind = E::kZvm;
    } else if (absl::StartsWith(cp->second, "KVM")) {
      info.kind = E::kKvmS390;
    } else {
      info.kind = E::kUnknownVm;
    }
    return info;
  }
  if (fields.count("LPAR Number") || fields.count("LPAR Name")) {
    info.kind = E::kLpar;
    info.source = absl::StrCat(kProcSysinfo, " LPAR lines, no VM00");
    auto name = fields.find("LPAR Name");
    info.vendor = absl::StrCat(
        "PR/SM", name == fields.end() ? "" : " LPAR " + name->second);
    auto shared = fields.find("LPAR CPUs Shared");
    auto dedicated = fields.find("LPAR CPUs Dedicated");
    int64_t n_shared = -1, n_dedicated = 0;
    if (shared != fields.end() && dedicated != fields.end() &&
        absl::SimpleAtoi(shared->second, &n_shared) &&
        absl::SimpleAtoi(dedicated->second, &n_dedicated)) {
      info.dedicated_hint = n_shared == 0 && n_dedicated > 0;
    }
    return info;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(kProcSysinfo,
                   ": neither a 'VM00 Control Program' line nor 'LPAR' "
                   "lines; cannot tell LPAR, z/VM or KVM"));
}

}  // namespace haltpool::arch
