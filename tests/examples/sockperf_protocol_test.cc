// examples/sockperf_protocol: header coding against bytes captured from
// Debian's sockperf 3.7 client (strace of `sockperf ping-pong`), which
// messages get replies, UDP datagram verdicts, and the TCP framer on every
// split: one message per receive, several, byte by byte, across the
// header, largest messages, and malformed lengths.

#include "examples/sockperf_protocol.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace haltpool::sockperf {
namespace {

using Bytes = std::vector<uint8_t>;

// The first ping of `sockperf ping-pong -m 20`, as sent: sequence 1, flags
// client | pong request, length 20, then 6 bytes of payload.
const Bytes kCapturedPing = {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x01, 0x00, 0x03, 0x00, 0x00, 0x00, 0x14,
                             0xb7, 0x31, 0x58, 0xa3, 0x5a, 0x25};
// sockperf sr's reply to it: the same with the client flag cleared.
const Bytes kCapturedPong = {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x14,
                             0xb7, 0x31, 0x58, 0xa3, 0x5a, 0x25};

// A message of `length` bytes (at least the header) with `flags`,
// sequence `seq` and a payload of bytes derived from `seq`.
Bytes Message(uint64_t seq, uint16_t flags, uint32_t length) {
  Bytes m(std::max<size_t>(length, kHeaderBytes));
  WriteHeader(Header{seq, flags, length}, absl::MakeSpan(m));
  for (size_t i = kHeaderBytes; i < m.size(); ++i) {
    m[i] = static_cast<uint8_t>(seq * 31 + i);
  }
  return m;
}

constexpr uint16_t kPing = kFlagClient | kFlagPongRequest;

TEST(SockperfHeader, ParsesTheCapturedPing) {
  const Header h = ParseHeader(kCapturedPing);
  EXPECT_EQ(h.sequence_number, 1u);
  EXPECT_EQ(h.flags, kPing);
  EXPECT_EQ(h.length, 20u);
  EXPECT_TRUE(ValidLength(h.length));
  EXPECT_TRUE(WantsReply(h));
}

TEST(SockperfHeader, WriteThenParseRoundTripsBigEndian) {
  const Header in{0x0102030405060708u, 0x0a0b, 0x0c0d0e0f};
  Bytes b(kHeaderBytes);
  WriteHeader(in, absl::MakeSpan(b));
  EXPECT_EQ(
      b, (Bytes{1, 2, 3, 4, 5, 6, 7, 8, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f}));
  const Header out = ParseHeader(b);
  EXPECT_EQ(out.sequence_number, in.sequence_number);
  EXPECT_EQ(out.flags, in.flags);
  EXPECT_EQ(out.length, in.length);
}

TEST(SockperfHeader, ValidLengthIsHeaderToLargestUdpPayload) {
  EXPECT_FALSE(ValidLength(0));
  EXPECT_FALSE(ValidLength(kHeaderBytes - 1));
  EXPECT_TRUE(ValidLength(kHeaderBytes));
  EXPECT_TRUE(ValidLength(kMaxMessageBytes));
  EXPECT_FALSE(ValidLength(kMaxMessageBytes + 1));
  EXPECT_FALSE(ValidLength(0xffffffffu));
}

TEST(SockperfHeader, OnlyClientPongRequestsWithoutWarmupWantReplies) {
  EXPECT_TRUE(WantsReply(Header{7, kPing, 14}));
  EXPECT_FALSE(WantsReply(Header{7, kFlagClient, 14}));       // Under load.
  EXPECT_FALSE(WantsReply(Header{7, kFlagPongRequest, 14}));  // A server's.
  EXPECT_FALSE(WantsReply(Header{7, kPing | kFlagWarmup, 14}));
  EXPECT_FALSE(WantsReply(Header{7, 0, 14}));
  // Unknown high bits do not matter.
  EXPECT_TRUE(WantsReply(Header{7, 0x8000 | kPing, 14}));
}

TEST(SockperfReply, IsTheCapturedPong) {
  Bytes m = kCapturedPing;
  MakeReply(absl::MakeSpan(m));
  EXPECT_EQ(m, kCapturedPong);
}

TEST(SockperfDatagram, Verdicts) {
  EXPECT_EQ(ClassifyDatagram(kCapturedPing), DatagramVerdict::kReply);
  EXPECT_EQ(ClassifyDatagram(Message(1, kFlagClient, 30)),
            DatagramVerdict::kNoReply);
  EXPECT_EQ(ClassifyDatagram(Message(1, kPing | kFlagWarmup, 30)),
            DatagramVerdict::kNoReply);
  // Shorter than the header, or than its length.
  EXPECT_EQ(ClassifyDatagram({}), DatagramVerdict::kShort);
  EXPECT_EQ(ClassifyDatagram(
                Bytes(kCapturedPing.begin(), kCapturedPing.begin() + 13)),
            DatagramVerdict::kShort);
  EXPECT_EQ(
      ClassifyDatagram(Bytes(kCapturedPing.begin(), kCapturedPing.end() - 1)),
      DatagramVerdict::kShort);
  // Bad lengths.
  EXPECT_EQ(ClassifyDatagram(Message(1, kPing, 13)),
            DatagramVerdict::kMalformed);
  EXPECT_EQ(ClassifyDatagram(Message(1, kPing, 0)),
            DatagramVerdict::kMalformed);
  Bytes huge = Message(1, kPing, kMaxMessageBytes + 1);
  EXPECT_EQ(ClassifyDatagram(huge), DatagramVerdict::kMalformed);
  // Trailing bytes past the length are ignored.
  Bytes longer = kCapturedPing;
  longer.push_back(0);
  EXPECT_EQ(ClassifyDatagram(longer), DatagramVerdict::kReply);
}

// Feeds `stream` to `framer` in receives of the sizes in `splits` (cycled),
// collecting every message Next() returns; stops at kMalformed.
struct FeedResult {
  std::vector<Bytes> messages;
  bool malformed = false;
};

FeedResult Feed(StreamFramer& framer, const Bytes& stream,
                const std::vector<size_t>& splits) {
  FeedResult r;
  size_t at = 0;
  for (size_t i = 0; at < stream.size(); ++i) {
    const absl::Span<uint8_t> space = framer.Space();
    EXPECT_FALSE(space.empty());
    const size_t n =
        std::min({splits[i % splits.size()], stream.size() - at, space.size()});
    memcpy(space.data(), stream.data() + at, n);
    at += n;
    framer.Received(n);
    absl::Span<uint8_t> m;
    StreamFramer::Status s;
    while ((s = framer.Next(&m)) == StreamFramer::Status::kMessage) {
      r.messages.emplace_back(m.begin(), m.end());
    }
    if (s == StreamFramer::Status::kMalformed) {
      r.malformed = true;
      return r;
    }
  }
  return r;
}

Bytes Concat(const std::vector<Bytes>& parts) {
  Bytes all;
  for (const Bytes& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

TEST(SockperfFramer, OneMessagePerReceive) {
  StreamFramer framer;
  const FeedResult r = Feed(framer, kCapturedPing, {kCapturedPing.size()});
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0], kCapturedPing);
  EXPECT_FALSE(r.malformed);
  EXPECT_EQ(framer.buffered(), 0u);
}

TEST(SockperfFramer, ShortMessageWaitsForMore) {
  // Inside the header, then inside the payload: nothing yet.
  for (size_t cut : {1, 13, 14, 19}) {
    SCOPED_TRACE(cut);
    StreamFramer f;
    const Bytes part(kCapturedPing.begin(), kCapturedPing.begin() + cut);
    const FeedResult r = Feed(f, part, {cut});
    EXPECT_TRUE(r.messages.empty());
    EXPECT_FALSE(r.malformed);
    EXPECT_EQ(f.buffered(), cut);
    // The rest completes it.
    const Bytes rest(kCapturedPing.begin() + cut, kCapturedPing.end());
    const FeedResult r2 = Feed(f, rest, {rest.size()});
    ASSERT_EQ(r2.messages.size(), 1u);
    EXPECT_EQ(r2.messages[0], kCapturedPing);
  }
}

TEST(SockperfFramer, SeveralMessagesInOneReceive) {
  std::vector<Bytes> parts;
  for (uint64_t seq = 1; seq <= 50; ++seq) {
    parts.push_back(Message(seq, seq % 3 == 0 ? kFlagClient : kPing,
                            static_cast<uint32_t>(14 + seq * 7)));
  }
  const Bytes stream = Concat(parts);
  StreamFramer framer;
  const FeedResult r = Feed(framer, stream, {stream.size()});
  EXPECT_EQ(r.messages, parts);
  EXPECT_EQ(framer.buffered(), 0u);
}

TEST(SockperfFramer, EverySplitGivesTheSameMessages) {
  std::vector<Bytes> parts;
  for (uint64_t seq = 1; seq <= 20; ++seq) {
    parts.push_back(Message(seq, kPing, static_cast<uint32_t>(14 + seq)));
  }
  const Bytes stream = Concat(parts);
  for (size_t split : {1, 2, 3, 7, 13, 14, 15, 29, 64, 1000}) {
    SCOPED_TRACE(split);
    StreamFramer framer;
    const FeedResult r = Feed(framer, stream, {split});
    EXPECT_EQ(r.messages, parts);
    EXPECT_FALSE(r.malformed);
  }
  // Irregular splits too.
  StreamFramer framer;
  EXPECT_EQ(Feed(framer, stream, {5, 17, 1, 40, 9}).messages, parts);
}

TEST(SockperfFramer, LargestMessagesBackToBack) {
  const std::vector<Bytes> parts = {
      Message(1, kPing, kMaxMessageBytes), Message(2, kPing, kMaxMessageBytes),
      Message(3, kPing, 14), Message(4, kPing, kMaxMessageBytes)};
  const Bytes stream = Concat(parts);
  for (size_t split : {size_t{65536}, size_t{1000}, size_t{200000}}) {
    SCOPED_TRACE(split);
    StreamFramer framer;
    const FeedResult r = Feed(framer, stream, {split});
    EXPECT_EQ(r.messages, parts);
  }
}

TEST(SockperfFramer, MalformedLengthIsFinal) {
  for (uint32_t bad :
       {uint32_t{0}, uint32_t{13}, static_cast<uint32_t>(kMaxMessageBytes + 1),
        uint32_t{0xffffffff}}) {
    SCOPED_TRACE(bad);
    // A good message, then a bad header: the good one comes out first.
    Bytes bad_header(kHeaderBytes);
    WriteHeader(Header{2, kPing, bad}, absl::MakeSpan(bad_header));
    const Bytes stream = Concat({kCapturedPing, bad_header});
    StreamFramer framer;
    const FeedResult r = Feed(framer, stream, {stream.size()});
    ASSERT_EQ(r.messages.size(), 1u);
    EXPECT_TRUE(r.malformed);
    absl::Span<uint8_t> m;
    EXPECT_EQ(framer.Next(&m), StreamFramer::Status::kMalformed);
  }
}

TEST(SockperfFramer, MalformedHeaderSplitIsFoundOnceWhole) {
  Bytes bad_header(kHeaderBytes);
  WriteHeader(Header{1, kPing, 5}, absl::MakeSpan(bad_header));
  StreamFramer framer;
  const FeedResult r = Feed(framer, bad_header, {1});
  EXPECT_TRUE(r.messages.empty());
  EXPECT_TRUE(r.malformed);
}

}  // namespace
}  // namespace haltpool::sockperf
