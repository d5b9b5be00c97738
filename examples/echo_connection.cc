// The byte echo loop of one connection (see the header).

#include "examples/echo_connection.h"

#include <cstddef>
#include <cstdint>

#include "runtime/coro/async_io.h"

namespace haltpool::examples {
namespace {

// Bytes a connection receives at once: as much as one TCP segment train on
// loopback usually delivers, small enough for thousands of connections.
constexpr size_t kBufferBytes = 16 * 1024;

}  // namespace

Task<void> EchoConnection(ThreadPool& pool, int fd, ConnectionOwner* owner) {
  AsyncIo io(pool);
  char buf[kBufferBytes];
  for (;;) {
    const int received = co_await io.Recv(fd, buf, sizeof(buf));
    if (received <= 0) break;  // End of stream or an error.
    const int sent =
        co_await io.SendAll(fd, buf, static_cast<size_t>(received));
    if (sent > 0) {
      owner->totals().bytes_sent.fetch_add(static_cast<uint64_t>(sent),
                                           std::memory_order_relaxed);
    }
    if (sent != received) break;  // -EPIPE, -ECONNRESET, shut down.
  }
  owner->CloseConnection(fd);
}

}  // namespace haltpool::examples
