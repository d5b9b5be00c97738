#include "arch/system_files.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace haltpool::arch {
namespace {

class RealFiles final : public SystemFiles {
 public:
  absl::StatusOr<std::string> Read(absl::string_view path) const override {
    const std::string p(path);
    const int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", p));
    std::string content;
    char buf[4096];
    for (;;) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        close(fd);
        return absl::ErrnoToStatus(err, absl::StrCat("read ", p));
      }
      content.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    return content;
  }
};

}  // namespace

const SystemFiles& RealSystemFiles() {
  static const RealFiles kFiles;
  return kFiles;
}

std::optional<std::string> ReadTrimmed(const SystemFiles& files,
                                       absl::string_view path) {
  absl::StatusOr<std::string> content = files.Read(path);
  if (!content.ok()) return std::nullopt;
  return std::string(absl::StripAsciiWhitespace(*content));
}

void FakeSystemFiles::Set(absl::string_view path, absl::string_view content) {
  files_.insert_or_assign(std::string(path), std::string(content));
}

absl::StatusOr<std::string> FakeSystemFiles::Read(
    absl::string_view path) const {
  auto it = files_.find(path);
  if (it == files_.end()) {
    return absl::NotFoundError(
        absl::StrCat("open ", path, ": No such file or directory (fake)"));
  }
  return it->second;
}

}  // namespace haltpool::arch
