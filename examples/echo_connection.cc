// The byte echo loop of one connection (see the header).

#include "examples/echo_connection.h"

#include <cstddef>
#include <cstdint>

namespace haltpool::examples {
namespace {

// Bytes a connection receives at once: as much as one TCP segment train on
// loopback usually delivers, small enough for thousands of connections.
constexpr size_t kBufferBytes = 16 * 1024;

// One client: receives into `buf`, sends it back, again.
struct EchoConnection {
  EchoConnection(PoolIo i, int f, ConnectionOwner* o)
      : io(i), fd(f), owner(o) {}

  PoolIo io;
  const int fd;
  ConnectionOwner* const owner;
  size_t len = 0;   // Bytes in buf.
  size_t sent = 0;  // Of those, sent back so far.
  char buf[kBufferBytes];

  void Recv() {
    io.Recv(fd, buf, sizeof(buf), [this](int result) {
      if (result <= 0) return Close();  // End of stream or an error.
      len = static_cast<size_t>(result);
      sent = 0;
      SendRest();
    });
  }

  void SendRest() {
    io.Send(fd, buf + sent, len - sent, [this](int result) {
      if (result <= 0) return Close();  // -EPIPE, -ECONNRESET, shut down.
      owner->totals().bytes_sent.fetch_add(static_cast<uint64_t>(result),
                                           std::memory_order_relaxed);
      sent += static_cast<size_t>(result);
      if (sent < len) return SendRest();
      Recv();
    });
  }

  void Close() {
    owner->CloseConnection(fd);
    delete this;
  }
};

}  // namespace

void ServeEchoConnection(PoolIo io, int fd, ConnectionOwner* owner) {
  (new EchoConnection(io, fd, owner))->Recv();
}

}  // namespace haltpool::examples
