#include "runtime/io/event_waker.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include "absl/status/status.h"

namespace haltpool {

absl::StatusOr<EventWaker> EventWaker::Create() {
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, "eventfd failed");
  return EventWaker(fd);
}

EventWaker& EventWaker::operator=(EventWaker&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

EventWaker::~EventWaker() {
  if (fd_ >= 0) close(fd_);
}

void EventWaker::Wake() noexcept {
  const uint64_t one = 1;
  while (write(fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
}

void EventWaker::Drain() noexcept {
  uint64_t count;
  while (read(fd_, &count, sizeof(count)) < 0 && errno == EINTR) {
  }
}

}  // namespace haltpool
