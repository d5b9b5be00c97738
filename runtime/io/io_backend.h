// Choosing the I/O backend: the names operators type (HALTPOOL_IO, or
// PoolOptions::io), and the factory that builds a reactor, falling back from
// io_uring to epoll where io_uring is missing or forbidden.

#ifndef HALTPOOL_RUNTIME_IO_IO_BACKEND_H_
#define HALTPOOL_RUNTIME_IO_IO_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arch/named_enum.h"
#include "runtime/io/io_reactor.h"

namespace haltpool {

enum class IoBackend {
  kAuto,   // io_uring where the kernel allows it, else epoll.
  kUring,  // io_uring or an error.
  kEpoll,  // epoll, even where io_uring works.
};

inline constexpr arch::NamedEnum<IoBackend, 3> kIoBackends({{
    {IoBackend::kAuto, "auto"},
    {IoBackend::kUring, "uring"},
    {IoBackend::kEpoll, "epoll"},
}});

// The lower-case name of `backend`: "auto", "uring" or "epoll".
absl::string_view IoBackendName(IoBackend backend);

// "auto|uring|epoll", for error messages.
absl::string_view IoBackendNames();

// Parses a name as printed by IoBackendName (exact, lower case). Returns
// InvalidArgument naming the value and the accepted names otherwise; callers
// prefix the variable name.
absl::StatusOr<IoBackend> ParseIoBackend(absl::string_view name);

// Builds a reactor for one worker. kAuto tries io_uring and falls back to
// epoll when io_uring is missing (ENOSYS: old kernel, qemu-user; or a kernel
// without an opcode the reactor needs) or forbidden (EPERM, EACCES:
// seccomp in containers, kernel.io_uring_disabled); other failures are
// errors. kUring fails with a Status naming io_uring and the errno text when
// io_uring is unavailable. If `chosen_reason` is not null it receives the
// chosen backend's name and why: "io_uring: available", "io_uring:
// requested", "epoll: requested", or "epoll: io_uring_setup failed: Function
// not implemented". Setup: any thread, a few system calls; the reactor then
// belongs to the worker that uses it.
absl::StatusOr<std::unique_ptr<IoReactor>> MakeIoReactor(
    IoBackend requested, std::string* chosen_reason,
    const IoReactorOptions& options = IoReactorOptions());

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_IO_IO_BACKEND_H_
