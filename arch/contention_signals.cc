#include "arch/contention_signals.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>

#include "absl/strings/numbers.h"

namespace haltpool::arch {
namespace {

// Reads a small file whole into `buf`; the number of bytes, or -1. Both
// files are under 200 bytes (four "avg" values and a total per line).
ssize_t ReadSmallFile(const char* path, char* buf, size_t size) noexcept {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t length = 0;
  while (length < size) {
    const ssize_t n = read(fd, buf + length, size - length);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      close(fd);
      return -1;
    }
    length += static_cast<size_t>(n);
  }
  close(fd);
  return static_cast<ssize_t>(length);
}

std::optional<int64_t> Count(absl::string_view digits) noexcept {
  int64_t v = 0;
  if (!absl::SimpleAtoi(digits, &v) || v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::optional<int64_t> ParseCpuPressureSomeUs(absl::string_view text) noexcept {
  // some avg10=0.02 avg60=2.26 avg300=4.93 total=5308665093
  // full avg10=0.00 avg60=0.00 avg300=0.00 total=0
  constexpr absl::string_view kSome = "some ";
  constexpr absl::string_view kTotal = " total=";
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    absl::string_view line = text.substr(0, newline);
    text = newline == absl::string_view::npos ? absl::string_view()
                                              : text.substr(newline + 1);
    if (line.substr(0, kSome.size()) != kSome) continue;
    const size_t total = line.find(kTotal);
    if (total == absl::string_view::npos) return std::nullopt;
    line.remove_prefix(total + kTotal.size());
    return Count(line.substr(0, line.find(' ')));
  }
  return std::nullopt;
}

std::optional<int64_t> ReadCpuPressureSomeUs() noexcept {
  char buf[256];
  const ssize_t n = ReadSmallFile(kProcPressureCpu, buf, sizeof buf);
  if (n <= 0) return std::nullopt;
  return ParseCpuPressureSomeUs(absl::string_view(buf, static_cast<size_t>(n)));
}

ProcFile::ProcFile(const char* path) noexcept
    : fd_(open(path, O_RDONLY | O_CLOEXEC)) {}

ProcFile::~ProcFile() {
  if (fd_ >= 0) close(fd_);
}

ssize_t ProcFile::Read(char* buf, size_t size) noexcept {
  if (fd_ < 0) return -1;
  ssize_t n;
  do {
    n = pread(fd_, buf, size, 0);
  } while (n < 0 && errno == EINTR);
  return n;
}

std::optional<int64_t> ReadCpuPressureSomeUs(ProcFile& file) noexcept {
  char buf[256];
  const ssize_t n = file.Read(buf, sizeof buf);
  if (n <= 0) return std::nullopt;
  return ParseCpuPressureSomeUs(absl::string_view(buf, static_cast<size_t>(n)));
}

std::optional<int64_t> ParseLoadavgRunning(absl::string_view text) noexcept {
  // 0.09 0.91 1.60 3/148 21880: the fourth field, before its slash.
  for (int i = 0; i < 3; ++i) {
    const size_t blank = text.find(' ');
    if (blank == absl::string_view::npos) return std::nullopt;
    text.remove_prefix(blank + 1);
  }
  const size_t slash = text.find('/');
  if (slash == absl::string_view::npos) return std::nullopt;
  return Count(text.substr(0, slash));
}

std::optional<int64_t> ReadLoadavgRunning() noexcept {
  char buf[128];
  const ssize_t n = ReadSmallFile(kProcLoadavg, buf, sizeof buf);
  if (n <= 0) return std::nullopt;
  return ParseLoadavgRunning(absl::string_view(buf, static_cast<size_t>(n)));
}

}  // namespace haltpool::arch

namespace haltpool::arch {

std::optional<int64_t> ReadLoadavgRunning(ProcFile& file) noexcept {
  char buf[128];
  const ssize_t n = file.Read(buf, sizeof buf);
  if (n <= 0) return std::nullopt;
  return ParseLoadavgRunning(absl::string_view(buf, static_cast<size_t>(n)));
}

std::optional<int64_t> ParseSchedstatRunDelayNs(
    absl::string_view text) noexcept {
  // 2682310 383262 3: the second field.
  const size_t first = text.find(' ');
  if (first == absl::string_view::npos) return std::nullopt;
  text.remove_prefix(first + 1);
  const size_t second = text.find(' ');
  if (second == absl::string_view::npos) return std::nullopt;
  return Count(text.substr(0, second));
}

std::optional<int64_t> ReadRunDelayNs(ProcFile& file) noexcept {
  char buf[128];
  const ssize_t n = file.Read(buf, sizeof buf);
  if (n <= 0) return std::nullopt;
  return ParseSchedstatRunDelayNs(
      absl::string_view(buf, static_cast<size_t>(n)));
}

}  // namespace haltpool::arch
