// The wire format of sockperf (github.com/Mellanox/sockperf, Debian's
// sockperf 3.7), as much of it as a ping-pong server needs: parsing and
// checking a message header, splitting a TCP byte stream into messages, and
// turning a request into its reply. Pure functions and one small class; no
// I/O, no threads, so every case is tested directly
// (tests/examples/sockperf_protocol_test.cc).
//
// A message is a 14-byte header followed by payload, all of it `length`
// bytes. Header fields, big-endian, packed:
//
//   offset 0   uint64  sequence number (the client's; echoed back)
//   offset 8   uint16  flags: 1 client (set by the client, cleared in the
//                      reply), 2 pong request (reply wanted), 4 warmup
//   offset 10  uint32  length of the whole message, header included
//
// sockperf's server replies to a message only when it has the client and
// pong-request flags and not the warmup flag; the reply is the same bytes
// with the client flag cleared. Everything else (warmup messages, the
// messages under-load mode sends without a pong request, messages from
// another server) is consumed silently. Over TCP messages follow each other
// in the stream, split or joined anywhere; over UDP a datagram is one
// message.
//
// sockperf itself has no magic number or version field, so a bad length is
// the only malformed header: shorter than the header, or longer than
// kMaxMessageBytes (sockperf's server closes a TCP connection that sends
// one; a zero length would make it loop).

#ifndef HALTPOOL_EXAMPLES_SOCKPERF_PROTOCOL_H_
#define HALTPOOL_EXAMPLES_SOCKPERF_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/types/span.h"

namespace haltpool::sockperf {

// Bytes of the header: sockperf's MsgHeader::EFFECTIVE_SIZE (8 + 2 + 4),
// also the smallest message `sockperf -m` accepts ("min: 14").
inline constexpr size_t kHeaderBytes = 14;

// The longest message: sockperf's MAX_PAYLOAD_SIZE, the largest UDP payload
// over IPv4 (65535 - 20 IP - 8 UDP); `sockperf -m 70000` says "max: 65507".
inline constexpr size_t kMaxMessageBytes = 65507;

// Flag bits (sockperf's MsgHeader::MASK_*).
inline constexpr uint16_t kFlagClient = 1;
inline constexpr uint16_t kFlagPongRequest = 2;
inline constexpr uint16_t kFlagWarmup = 4;

// A decoded header, in host byte order.
struct Header {
  uint64_t sequence_number = 0;
  uint16_t flags = 0;
  uint32_t length = 0;  // Of the whole message, header included.
};

// Decodes the header at the start of `bytes`, which must hold at least
// kHeaderBytes (checked by the caller). Does not validate; see
// ValidLength.
Header ParseHeader(absl::Span<const uint8_t> bytes);

// Encodes `header` into the first kHeaderBytes of `out` (at least that
// long). For tests and clients; the server never builds a header.
void WriteHeader(const Header& header, absl::Span<uint8_t> out);

// True if a message of `length` bytes is well formed: kHeaderBytes to
// kMaxMessageBytes.
bool ValidLength(uint32_t length);

// True if sockperf's server would answer this message: the client and
// pong-request flags set, the warmup flag clear.
bool WantsReply(const Header& header);

// Turns the whole message `message` (a request for which WantsReply holds)
// into its reply in place: clears the client flag; every other byte stays.
void MakeReply(absl::Span<uint8_t> message);

// What one UDP datagram is worth.
enum class DatagramVerdict {
  kReply,      // Well formed and WantsReply: MakeReply and send it back.
  kNoReply,    // Well formed, no reply wanted (warmup, under-load, server).
  kShort,      // Fewer bytes than the header, or than its length: dropped.
  kMalformed,  // A bad length (ValidLength false): dropped.
};

// Classifies `datagram`, one message as received. Trailing bytes past the
// header's length are ignored, as sockperf's server ignores them.
DatagramVerdict ClassifyDatagram(absl::Span<const uint8_t> datagram);

// Splits a TCP byte stream into whole messages. The caller receives into
// Space(), reports how much came with Received(), then calls Next() until
// it returns kNeedMore (or kMalformed). Holds one partial message between
// receives, whatever the split (inside the header or the payload); a
// receive may bring several messages. One per connection; not thread-safe.
// Owns a buffer of kBufferBytes, allocated once by the constructor.
class StreamFramer {
 public:
  // Room for a whole largest message and as much again to receive into,
  // as sockperf's server allocates (2 * MAX_PAYLOAD_SIZE per connection).
  static constexpr size_t kBufferBytes = 2 * kMaxMessageBytes;

  enum class Status {
    kMessage,    // `*message` is the next whole message.
    kNeedMore,   // The stream ends inside a message: receive more.
    kMalformed,  // A header with a bad length: the stream is unusable.
  };

  StreamFramer();

  StreamFramer(const StreamFramer&) = delete;
  StreamFramer& operator=(const StreamFramer&) = delete;

  // Where to receive next: never empty. Moves a held partial message to
  // the front of the buffer first (at most kMaxMessageBytes - 1 bytes), so
  // it invalidates the spans Next() returned. Only after Next() returned
  // kNeedMore (or before the first Received).
  absl::Span<uint8_t> Space();

  // Records that `bytes` (at most Space().size()) arrived in Space().
  void Received(size_t bytes);

  // The next whole message, as a span into the buffer valid until the next
  // Space() call. kMalformed is final: every later call returns it too.
  Status Next(absl::Span<uint8_t>* message);

  // Bytes received but not yet returned by Next(): a partial message.
  size_t buffered() const { return end_ - begin_; }

 private:
  std::unique_ptr<uint8_t[]> buffer_;
  size_t begin_ = 0;  // First byte not yet returned by Next().
  size_t end_ = 0;    // One past the last byte received.
  bool malformed_ = false;
};

}  // namespace haltpool::sockperf

#endif  // HALTPOOL_EXAMPLES_SOCKPERF_PROTOCOL_H_
