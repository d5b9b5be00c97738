// The eventfd both reactors are woken through: IoReactor::Wake() writes it
// from any thread; the reactor's owner watches it (an epoll registration, an
// io_uring POLL_ADD) and drains it when it has seen the wake.

#ifndef HALTPOOL_RUNTIME_IO_EVENT_WAKER_H_
#define HALTPOOL_RUNTIME_IO_EVENT_WAKER_H_

#include "absl/status/statusor.h"

namespace haltpool {

class EventWaker {
 public:
  // A non-blocking, close-on-exec eventfd. Errors name eventfd and errno.
  // Setup: one system call.
  static absl::StatusOr<EventWaker> Create();

  // No descriptor yet: a placeholder for a member that Create fills in.
  EventWaker() = default;

  EventWaker(EventWaker&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  EventWaker& operator=(EventWaker&& other) noexcept;
  EventWaker(const EventWaker&) = delete;
  EventWaker& operator=(const EventWaker&) = delete;
  ~EventWaker();

  // The descriptor to watch for POLLIN. Owned by this object.
  int fd() const noexcept { return fd_; }

  // Makes the descriptor readable: one write(2). Any thread; wakes before a
  // Drain coalesce.
  void Wake() noexcept;

  // Makes it unreadable again: one read(2). Only the reactor's owner.
  void Drain() noexcept;

 private:
  explicit EventWaker(int fd) noexcept : fd_(fd) {}

  int fd_ = -1;
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_IO_EVENT_WAKER_H_
