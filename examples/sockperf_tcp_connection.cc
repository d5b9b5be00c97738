// The sockperf loop of one TCP connection (see the header).

#include "examples/sockperf_tcp_connection.h"

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "examples/sockperf_protocol.h"

namespace haltpool::sockperf {
namespace {

struct TcpConnection {
  TcpConnection(PoolIo i, int f, examples::ConnectionOwner* o)
      : io(i), fd(f), owner(o) {}

  PoolIo io;
  const int fd;
  examples::ConnectionOwner* const owner;
  StreamFramer framer;
  std::vector<uint8_t> out;  // The replies to send; keeps its capacity.
  size_t sent = 0;           // Of `out`, sent so far.

  void Recv() {
    const absl::Span<uint8_t> space = framer.Space();
    io.Recv(fd, space.data(), space.size(), [this](int result) {
      if (result <= 0) return Close();  // End of stream or an error.
      framer.Received(static_cast<size_t>(result));
      if (!Frame()) {
        owner->totals().sockperf_malformed.fetch_add(1,
                                                     std::memory_order_relaxed);
        return Close();
      }
      if (out.empty()) return Recv();
      sent = 0;
      SendRest();
    });
  }

  // Puts the replies of every whole message received into `out`. False on
  // a malformed header.
  bool Frame() {
    examples::ConnectionTotals& totals = owner->totals();
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

  void SendRest() {
    io.Send(fd, out.data() + sent, out.size() - sent, [this](int result) {
      if (result <= 0) return Close();  // -EPIPE, -ECONNRESET, shut down.
      owner->totals().bytes_sent.fetch_add(static_cast<uint64_t>(result),
                                           std::memory_order_relaxed);
      sent += static_cast<size_t>(result);
      if (sent < out.size()) return SendRest();
      Recv();
    });
  }

  void Close() {
    owner->CloseConnection(fd);
    delete this;
  }
};

}  // namespace

void ServeSockperfConnection(PoolIo io, int fd,
                             examples::ConnectionOwner* owner) {
  (new TcpConnection(io, fd, owner))->Recv();
}

}  // namespace haltpool::sockperf
