// Read-only access to kernel-provided files (/proc, /sys) behind an
// interface, so hypervisor detection, CPU-quota and topology tests feed their
// own file contents (captured from the machines they describe) instead of
// depending on the machine they run on.

#ifndef HALTPOOL_ARCH_SYSTEM_FILES_H_
#define HALTPOOL_ARCH_SYSTEM_FILES_H_

#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace haltpool::arch {

class SystemFiles {
 public:
  virtual ~SystemFiles() = default;

  // The whole content of the file at `path`, read to end of file (sysfs and
  // procfs files report size 0, so no size is trusted). NotFound if the file
  // does not exist; any other failure is an error naming the path and the
  // errno text. Thread-safe; blocks on the read.
  virtual absl::StatusOr<std::string> Read(absl::string_view path) const = 0;
};

// The real file system. Each Read opens, reads and closes the file; nothing
// is cached. Lives for the whole process.
const SystemFiles& RealSystemFiles();

// The content of `path` with leading and trailing blanks and newlines
// removed, as sysfs attributes are read; nullopt if it cannot be read.
std::optional<std::string> ReadTrimmed(const SystemFiles& files,
                                       absl::string_view path);

// A fixed map from path to content, for tests. Paths are matched exactly
// (no normalization); a path not in the map is NotFound.
class FakeSystemFiles final : public SystemFiles {
 public:
  FakeSystemFiles() = default;
  // FakeSystemFiles files({{"/proc/self/cgroup", "0::/app\n"}, ...}).
  FakeSystemFiles(
      std::initializer_list<std::pair<const std::string, std::string>> files)
      : files_(files) {}

  // Adds or replaces the file at `path`. Not thread-safe against Read.
  void Set(absl::string_view path, absl::string_view content);

  absl::StatusOr<std::string> Read(absl::string_view path) const override;

 private:
  std::map<std::string, std::string, std::less<>> files_;
};

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_SYSTEM_FILES_H_
