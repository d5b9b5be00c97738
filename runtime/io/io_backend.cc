#include "runtime/io/io_backend.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/io/epoll_reactor.h"
#include "runtime/io/uring_reactor.h"

namespace haltpool {
namespace {

// UringReactor::Create's codes for "missing" (ENOSYS, no opcode) and
// "forbidden" (EPERM, EACCES): the cases where epoll should stand in.
bool UringUnavailable(const absl::Status& status) {
  return absl::IsUnimplemented(status) || absl::IsPermissionDenied(status);
}

void SetReason(std::string* reason, std::string text) {
  if (reason != nullptr) *reason = std::move(text);
}

absl::StatusOr<std::unique_ptr<IoReactor>> MakeEpoll(std::string* reason,
                                                     std::string why) {
  absl::StatusOr<std::unique_ptr<EpollReactor>> epoll = EpollReactor::Create();
  if (!epoll.ok()) return epoll.status();
  SetReason(reason, absl::StrCat("epoll: ", why));
  return std::unique_ptr<IoReactor>(std::move(*epoll));
}

}  // namespace

absl::string_view IoBackendName(IoBackend backend) {
  return kIoBackends.Name(backend);
}

absl::string_view IoBackendNames() {
  static const std::string* kJoined = new std::string(kIoBackends.Names());
  return *kJoined;
}

absl::StatusOr<IoBackend> ParseIoBackend(absl::string_view name) {
  if (std::optional<IoBackend> b = kIoBackends.Parse(name)) return *b;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown I/O backend '", name, "'; accepted: ", IoBackendNames()));
}

absl::StatusOr<std::unique_ptr<IoReactor>> MakeIoReactor(
    IoBackend requested, std::string* chosen_reason,
    const IoReactorOptions& options) {
  if (requested == IoBackend::kEpoll) {
    return MakeEpoll(chosen_reason, "requested");
  }
  absl::StatusOr<std::unique_ptr<UringReactor>> uring =
      UringReactor::Create(options);
  if (uring.ok()) {
    SetReason(chosen_reason, requested == IoBackend::kUring
                                 ? "io_uring: requested"
                                 : "io_uring: available");
    return std::unique_ptr<IoReactor>(std::move(*uring));
  }
  if (requested == IoBackend::kAuto && UringUnavailable(uring.status())) {
    return MakeEpoll(chosen_reason, std::string(uring.status().message()));
  }
  return absl::Status(
      uring.status().code(),
      absl::StrCat("I/O backend '", IoBackendName(requested),
                   "' (HALTPOOL_IO or PoolOptions::io): io_uring unavailable: ",
                   uring.status().message()));
}

}  // namespace haltpool
