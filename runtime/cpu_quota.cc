#include "runtime/cpu_quota.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "arch/thread_affinity.h"
#include "runtime/value_parse.h"

namespace haltpool {
namespace {

constexpr char kProcSelfCgroup[] = "/proc/self/cgroup";

// Where distributions mount the v1 cpu controller under kCgroupRoot: systemd
// co-mounts it with cpuacct ("cpu,cpuacct", with "cpu" as a symlink); some
// container runtimes and hand-made setups mount it alone ("cpu").
constexpr absl::string_view kV1CpuMounts[] = {"cpu,cpuacct", "cpuacct,cpu",
                                              "cpu"};

// How much of a malformed file an error message quotes.
constexpr size_t kMaxQuotedBytes = 80;

int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// The file's content, trimmed, C-escaped and cut, for error messages.
std::string Quote(absl::string_view content) {
  absl::string_view shown = absl::StripTrailingAsciiWhitespace(content);
  const bool cut = shown.size() > kMaxQuotedBytes;
  if (cut) shown = shown.substr(0, kMaxQuotedBytes);
  return absl::StrCat("\"", absl::CHexEscape(shown), cut ? "...\"" : "\"");
}

absl::Status Malformed(absl::string_view path, absl::string_view content,
                       absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      "malformed ", path, ": ", Quote(content), "; expected ", expected));
}

// Reads `path`; nullopt if it does not exist.
absl::StatusOr<std::optional<std::string>> ReadIfPresent(
    const arch::SystemFiles& files, const std::string& path) {
  absl::StatusOr<std::string> content = files.Read(path);
  if (absl::IsNotFound(content.status())) return std::nullopt;
  if (!content.ok()) return content.status();
  return std::optional<std::string>(*std::move(content));
}

// The file's single line, without the kernel's trailing newline.
absl::string_view OneLine(absl::string_view content) {
  return absl::StripSuffix(content, "\n");
}

// A positive number of microseconds, digits only.
std::optional<int64_t> ParseMicros(absl::string_view text) {
  absl::StatusOr<int64_t> v =
      ParseInteger(text, 1, std::numeric_limits<int64_t>::max());
  if (!v.ok()) return std::nullopt;
  return *v;
}

// Where the process sits in the v2 hierarchy and in the v1 cpu hierarchy,
// from /proc/self/cgroup (see cgroups(7)).
struct CgroupPaths {
  std::optional<std::string> v2;  // From "0::/path".
  std::optional<std::string> v1;  // From "N:cpu,cpuacct:/path".
};

absl::StatusOr<CgroupPaths> ReadCgroupPaths(const arch::SystemFiles& files) {
  CgroupPaths paths;
  absl::StatusOr<std::optional<std::string>> content =
      ReadIfPresent(files, kProcSelfCgroup);
  if (!content.ok()) return content.status();
  if (!content->has_value()) return paths;
  for (absl::string_view line :
       absl::StrSplit(**content, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3 || fields[2].empty() || fields[2][0] != '/') {
      return Malformed(kProcSelfCgroup, line,
                       "ID:CONTROLLERS:/PATH on every line");
    }
    if (fields[0] == "0" && fields[1].empty()) {
      paths.v2 = std::string(fields[2]);
      continue;
    }
    for (absl::string_view controller : absl::StrSplit(fields[1], ',')) {
      if (controller == "cpu") paths.v1 = std::string(fields[2]);
    }
  }
  return paths;
}

// `root` + `path` and each of its ancestors up to `root`, deepest first:
// ("/sys/fs/cgroup", "/a/b") -> "/sys/fs/cgroup/a/b", "/sys/fs/cgroup/a",
// "/sys/fs/cgroup".
std::vector<std::string> SelfAndAncestors(absl::string_view root,
                                          absl::string_view path) {
  std::vector<std::string> dirs;
  path = absl::StripTrailingAsciiWhitespace(path);
  while (!path.empty() && path != "/") {
    dirs.push_back(absl::StrCat(root, absl::StripSuffix(path, "/")));
    const size_t slash = path.find_last_of('/', path.size() - 2);
    path = path.substr(0, slash == absl::string_view::npos ? 0 : slash + 1);
  }
  dirs.push_back(std::string(root));
  return dirs;
}

// True if `a` grants less CPU time per period than `b`: a.q/a.p < b.q/b.p,
// cross-multiplied in 128 bits (the kernel allows quotas near 2^44 us).
bool Tighter(const CgroupCpuLimit& a, const CgroupCpuLimit& b) {
  return static_cast<__int128>(a.quota_us) * b.period_us <
         static_cast<__int128>(b.quota_us) * a.period_us;
}

void KeepTightest(std::optional<CgroupCpuLimit>& best, CgroupCpuLimit limit) {
  if (!best.has_value() || Tighter(limit, *best)) best = std::move(limit);
}

// cpu.max in `dir`: "max PERIOD" (no limit) or "QUOTA PERIOD".
absl::StatusOr<std::optional<CgroupCpuLimit>> ReadCpuMax(
    const arch::SystemFiles& files, const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/cpu.max");
  absl::StatusOr<std::optional<std::string>> content =
      ReadIfPresent(files, path);
  if (!content.ok()) return content.status();
  if (!content->has_value()) return std::nullopt;
  constexpr absl::string_view kExpected =
      "\"max PERIOD\" or \"QUOTA PERIOD\" in microseconds";
  std::vector<absl::string_view> fields =
      absl::StrSplit(OneLine(**content), ' ');
  if (fields.size() != 2) return Malformed(path, **content, kExpected);
  const std::optional<int64_t> period = ParseMicros(fields[1]);
  if (!period.has_value()) return Malformed(path, **content, kExpected);
  if (fields[0] == "max") return std::nullopt;
  const std::optional<int64_t> quota = ParseMicros(fields[0]);
  if (!quota.has_value()) return Malformed(path, **content, kExpected);
  return CgroupCpuLimit{2, dir, *quota, *period};
}

// cpu.cfs_quota_us ("-1": no limit) and cpu.cfs_period_us in `dir`. Sets
// `present` if the quota file exists, so the caller knows the mount is real.
absl::StatusOr<std::optional<CgroupCpuLimit>> ReadCfsQuota(
    const arch::SystemFiles& files, const std::string& dir, bool& present) {
  const std::string quota_path = absl::StrCat(dir, "/cpu.cfs_quota_us");
  absl::StatusOr<std::optional<std::string>> quota_text =
      ReadIfPresent(files, quota_path);
  if (!quota_text.ok()) return quota_text.status();
  if (!quota_text->has_value()) return std::nullopt;
  present = true;
  if (OneLine(**quota_text) == "-1") return std::nullopt;
  const std::optional<int64_t> quota = ParseMicros(OneLine(**quota_text));
  if (!quota.has_value()) {
    return Malformed(quota_path, **quota_text,
                     "-1 or a positive number of microseconds");
  }
  const std::string period_path = absl::StrCat(dir, "/cpu.cfs_period_us");
  absl::StatusOr<std::string> period_text = files.Read(period_path);
  if (!period_text.ok()) return period_text.status();
  const std::optional<int64_t> period = ParseMicros(OneLine(*period_text));
  if (!period.has_value()) {
    return Malformed(period_path, *period_text,
                     "a positive number of microseconds");
  }
  return CgroupCpuLimit{1, dir, *quota, *period};
}

// The tightest limit over the process's cgroup and its ancestors, v2 and v1.
absl::StatusOr<std::optional<CgroupCpuLimit>> ReadTightestLimit(
    const arch::SystemFiles& files) {
  absl::StatusOr<CgroupPaths> paths = ReadCgroupPaths(files);
  if (!paths.ok()) return paths.status();
  std::optional<CgroupCpuLimit> best;
  if (paths->v2.has_value()) {
    for (const std::string& dir : SelfAndAncestors(kCgroupRoot, *paths->v2)) {
      absl::StatusOr<std::optional<CgroupCpuLimit>> limit =
          ReadCpuMax(files, dir);
      if (!limit.ok()) return limit.status();
      if (limit->has_value()) KeepTightest(best, **limit);
    }
  }
  if (paths->v1.has_value()) {
    for (absl::string_view mount : kV1CpuMounts) {
      bool present = false;
      const std::string root = absl::StrCat(kCgroupRoot, "/", mount);
      for (const std::string& dir : SelfAndAncestors(root, *paths->v1)) {
        absl::StatusOr<std::optional<CgroupCpuLimit>> limit =
            ReadCfsQuota(files, dir, present);
        if (!limit.ok()) return limit.status();
        if (limit->has_value()) KeepTightest(best, **limit);
      }
      if (present) break;  // The others are symlinks to it or absent.
    }
  }
  return best;
}

std::string CpusWord(int64_t n) {
  return absl::StrCat(n, n == 1 ? " CPU" : " CPUs");
}

std::string DescribeMask(const std::vector<int>& cpus) {
  if (cpus.empty()) return "affinity mask empty (counted as 1 CPU)";
  return absl::StrCat("affinity mask ", arch::FormatCpuList(cpus));
}

}  // namespace

int64_t CgroupCpuLimit::Cpus() const {
  if (quota_us <= 0 || period_us <= 0) return 1;
  return std::max<int64_t>(1, CeilDiv(quota_us, period_us));
}

std::string CgroupCpuLimit::Describe() const {
  return absl::StrCat(
      cgroup_version == 1 ? "cpu.cfs_quota_us/cpu.cfs_period_us " : "cpu.max ",
      quota_us, "/", period_us, " in ", dir);
}

absl::StatusOr<CpuQuota> LoadCpuQuota(const CpuQuotaInput& input,
                                      const arch::SystemFiles& files) {
  std::vector<int> cpus = input.allowed_cpus;
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());

  absl::StatusOr<std::optional<CgroupCpuLimit>> limit =
      ReadTightestLimit(files);
  if (!limit.ok()) return limit.status();

  CpuQuota quota;
  quota.allowed_cpus = static_cast<int>(cpus.size());
  quota.cgroup_limit = *std::move(limit);
  const int64_t by_mask = std::max<int64_t>(1, quota.allowed_cpus);
  if (!quota.cgroup_limit.has_value()) {
    quota.usable_cpus = static_cast<int>(by_mask);
    quota.explanation = absl::StrCat(CpusWord(quota.usable_cpus), ": ",
                                     DescribeMask(cpus), ", no cgroup quota");
    return quota;
  }
  const CgroupCpuLimit& cg = *quota.cgroup_limit;
  if (cg.Cpus() < by_mask) {
    quota.usable_cpus = static_cast<int>(cg.Cpus());
    quota.explanation = absl::StrCat(
        CpusWord(quota.usable_cpus), ": cgroup ", cg.Describe(), " caps ",
        quota.allowed_cpus, " allowed CPUs (", DescribeMask(cpus), ")");
  } else {
    quota.usable_cpus = static_cast<int>(by_mask);
    quota.explanation =
        absl::StrCat(CpusWord(quota.usable_cpus), ": ", DescribeMask(cpus),
                     "; cgroup ", cg.Describe(), " allows ", cg.Cpus());
  }
  return quota;
}

absl::StatusOr<CpuQuota> ProcessCpuQuota() {
  return LoadCpuQuota(CpuQuotaInput{arch::ThreadCpus()},
                      arch::RealSystemFiles());
}

}  // namespace haltpool
