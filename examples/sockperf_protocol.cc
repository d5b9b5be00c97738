// sockperf's wire format: header coding and the TCP stream framer (see the
// header for the format).

#include "examples/sockperf_protocol.h"

#include <cstring>

namespace haltpool::sockperf {
namespace {

// Byte offsets of the header fields.
constexpr size_t kSequenceAt = 0;
constexpr size_t kFlagsAt = 8;
constexpr size_t kLengthAt = 10;

uint64_t LoadBigEndian(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

void StoreBigEndian(uint64_t v, int bytes, uint8_t* p) {
  for (int i = bytes - 1; i >= 0; --i) {
    p[i] = static_cast<uint8_t>(v);
    v >>= 8;
  }
}

}  // namespace

Header ParseHeader(absl::Span<const uint8_t> bytes) {
  Header h;
  h.sequence_number = LoadBigEndian(bytes.data() + kSequenceAt, 8);
  h.flags = static_cast<uint16_t>(LoadBigEndian(bytes.data() + kFlagsAt, 2));
  h.length = static_cast<uint32_t>(LoadBigEndian(bytes.data() + kLengthAt, 4));
  return h;
}

void WriteHeader(const Header& header, absl::Span<uint8_t> out) {
  StoreBigEndian(header.sequence_number, 8, out.data() + kSequenceAt);
  StoreBigEndian(header.flags, 2, out.data() + kFlagsAt);
  StoreBigEndian(header.length, 4, out.data() + kLengthAt);
}

bool ValidLength(uint32_t length) {
  return length >= kHeaderBytes && length <= kMaxMessageBytes;
}

bool WantsReply(const Header& header) {
  return (header.flags & (kFlagClient | kFlagPongRequest | kFlagWarmup)) ==
         (kFlagClient | kFlagPongRequest);
}

void MakeReply(absl::Span<uint8_t> message) {
  // The flags' low byte is the second one (big-endian); the client bit is
  // in it.
  message[kFlagsAt + 1] &= static_cast<uint8_t>(~kFlagClient);
}

DatagramVerdict ClassifyDatagram(absl::Span<const uint8_t> datagram) {
  if (datagram.size() < kHeaderBytes) return DatagramVerdict::kShort;
  const Header h = ParseHeader(datagram);
  if (!ValidLength(h.length)) return DatagramVerdict::kMalformed;
  if (datagram.size() < h.length) return DatagramVerdict::kShort;
  return WantsReply(h) ? DatagramVerdict::kReply : DatagramVerdict::kNoReply;
}

StreamFramer::StreamFramer() : buffer_(new uint8_t[kBufferBytes]) {}

absl::Span<uint8_t> StreamFramer::Space() {
  if (begin_ > 0) {
    memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  return absl::Span<uint8_t>(buffer_.get() + end_, kBufferBytes - end_);
}

void StreamFramer::Received(size_t bytes) { end_ += bytes; }

StreamFramer::Status StreamFramer::Next(absl::Span<uint8_t>* message) {
  if (malformed_) return Status::kMalformed;
  const size_t held = end_ - begin_;
  if (held < kHeaderBytes) return Status::kNeedMore;
  const absl::Span<uint8_t> rest(buffer_.get() + begin_, held);
  const Header h = ParseHeader(rest);
  if (!ValidLength(h.length)) {
    malformed_ = true;
    return Status::kMalformed;
  }
  if (held < h.length) return Status::kNeedMore;
  *message = rest.subspan(0, h.length);
  begin_ += h.length;
  return Status::kMessage;
}

}  // namespace haltpool::sockperf
