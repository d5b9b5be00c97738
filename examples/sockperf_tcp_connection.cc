// The sockperf loop of one TCP connection (see the header).

#include "examples/sockperf_tcp_connection.h"

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "examples/sockperf_protocol.h"
#include "runtime/coro/async_io.h"

namespace haltpool::sockperf {
namespace {

// Puts into `out` the replies of every whole message `framer` holds and
// counts them. False on a malformed header.
bool Frame(StreamFramer& framer, std::vector<uint8_t>& out,
           examples::ConnectionTotals& totals) {
  out.clear();
  absl::Span<uint8_t> message;
  StreamFramer::Status status;
  while ((status = framer.Next(&message)) == StreamFramer::Status::kMessage) {
    if (WantsReply(ParseHeader(message))) {
      MakeReply(message);
      out.insert(out.end(), message.begin(), message.end());
      totals.sockperf_replies.fetch_add(1, std::memory_order_relaxed);
    } else {
      totals.sockperf_no_reply.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return status != StreamFramer::Status::kMalformed;
}

}  // namespace

Task<void> SockperfConnection(ThreadPool& pool, int fd,
                              examples::ConnectionOwner* owner) {
  AsyncIo io(pool);
  examples::ConnectionTotals& totals = owner->totals();
  StreamFramer framer;
  std::vector<uint8_t> out;  // The replies to send; keeps its capacity.
  for (;;) {
    const absl::Span<uint8_t> space = framer.Space();
    const int received = co_await io.Recv(fd, space.data(), space.size());
    if (received <= 0) break;  // End of stream or an error.
    framer.Received(static_cast<size_t>(received));
    if (!Frame(framer, out, totals)) {
      totals.sockperf_malformed.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    if (out.empty()) continue;
    const int sent = co_await io.SendAll(fd, out.data(), out.size());
    if (sent > 0) {
      totals.bytes_sent.fetch_add(static_cast<uint64_t>(sent),
                                  std::memory_order_relaxed);
    }
    if (sent != static_cast<int>(out.size())) break;  // -EPIPE, shut down.
  }
  owner->CloseConnection(fd);
}

}  // namespace haltpool::sockperf
