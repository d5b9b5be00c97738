// sockperf over UDP: one receiver thread, replies from pool tasks (see the
// header for why).

#include "examples/sockperf_udp_server.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "examples/sockperf_protocol.h"

namespace haltpool::sockperf {

// One datagram as received, with where it came from.
struct UdpServer::Datagram {
  sockaddr_storage from;
  socklen_t from_len;
  std::vector<uint8_t> bytes;
};

absl::StatusOr<std::unique_ptr<UdpServer>> UdpServer::Create(ThreadPool* pool,
                                                             int port) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "UDP socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) < 0) {
    const int error = errno;
    close(fd);
    return absl::ErrnoToStatus(error,
                               absl::StrCat("cannot bind UDP 0.0.0.0:", port));
  }
  return std::unique_ptr<UdpServer>(new UdpServer(pool, fd));
}

UdpServer::~UdpServer() {
  Stop();
  close(fd_);
}

void UdpServer::Start() {
  receiver_ = std::thread([this] { Receive(); });
}

void UdpServer::Stop() {
  if (!receiver_.joinable()) return;
  stopping_.store(true);
  // Reports ENOTCONN on an unconnected UDP socket, yet wakes the receiver.
  shutdown(fd_, SHUT_RDWR);
  receiver_.join();
}

void UdpServer::Receive() {
  // The largest datagram sockperf sends; a longer one arrives truncated and
  // is then dropped as malformed by its header's length.
  std::vector<uint8_t> buffer(kMaxMessageBytes);
  for (;;) {
    sockaddr_storage from;
    socklen_t from_len = sizeof(from);
    const ssize_t n = recvfrom(fd_, buffer.data(), buffer.size(), 0,
                               reinterpret_cast<sockaddr*>(&from), &from_len);
    // Stop sets the flag before its shutdown() wakes recvfrom (which then
    // returns 0, as an empty datagram would).
    if (stopping_.load()) return;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      fprintf(stderr, "echo_server: UDP recvfrom: %s\n", strerror(errno));
      return;
    }
    auto datagram = std::make_unique<Datagram>();
    datagram->from = from;
    datagram->from_len = from_len;
    datagram->bytes.assign(buffer.begin(), buffer.begin() + n);
    absl::Status s =
        pool_->Submit([this, d = std::move(datagram)] { Answer(*d); });
    if (!s.ok()) dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

void UdpServer::Answer(Datagram& datagram) noexcept {
  switch (ClassifyDatagram(datagram.bytes)) {
    case DatagramVerdict::kShort:
    case DatagramVerdict::kMalformed:
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    case DatagramVerdict::kNoReply:
      no_reply_.fetch_add(1, std::memory_order_relaxed);
      return;
    case DatagramVerdict::kReply:
      break;
  }
  // The reply is the message (its header's length; trailing bytes are not
  // part of it) with the client flag cleared, made in place: the record is
  // the task's own.
  const Header h = ParseHeader(datagram.bytes);
  std::vector<uint8_t>& bytes = datagram.bytes;
  MakeReply(absl::MakeSpan(bytes.data(), h.length));
  if (sendto(fd_, bytes.data(), h.length, MSG_DONTWAIT | MSG_NOSIGNAL,
             reinterpret_cast<const sockaddr*>(&datagram.from),
             datagram.from_len) == static_cast<ssize_t>(h.length)) {
    replies_.fetch_add(1, std::memory_order_relaxed);
  } else {
    dropped_.fetch_add(1, std::memory_order_relaxed);  // Full buffer, gone.
  }
}

}  // namespace haltpool::sockperf
