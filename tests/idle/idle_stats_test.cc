// IdleCounters (the cpuidle usage/time/above/below accounting) and the two
// printed forms: the layout of `cpupower idle-info`, and JSON, checked with a
// small strict JSON parser.

#include "idle/idle_stats.h"

#include <atomic>
#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "idle/governor.h"
#include "idle/idle_state.h"

namespace haltpool::idle {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// --- IdleCounters -----------------------------------------------------------

IdleStats Snap(const IdleCounters& c) {
  IdleStats st;
  c.Snapshot(st);
  return st;
}

TEST(IdleCountersAccount, CountsUsageAndTimePerState) {
  const StateTable t = DefaultStateTable();
  IdleCounters c;
  c.Account(kPollState, 100, IdleExit::kWoken, t);
  c.Account(kPollState, 250, IdleExit::kDeadline, t);
  c.Account(kBlockState, 20000, IdleExit::kWoken, t);
  const IdleStats st = Snap(c);
  EXPECT_EQ(st.per_state[kPollState].usage, 2u);
  EXPECT_EQ(st.per_state[kPollState].time_ns, 350u);
  EXPECT_EQ(st.per_state[kBlockState].usage, 1u);
  EXPECT_EQ(st.per_state[kBlockState].time_ns, 20000u);
  EXPECT_EQ(st.poll_timeouts, 0u);
}

TEST(IdleCountersAccount, NegativeResidencyCountsAsZero) {
  const StateTable t = DefaultStateTable();
  IdleCounters c;
  c.Account(kBlockState, -5, IdleExit::kWoken, t);
  const IdleStats st = Snap(c);
  EXPECT_EQ(st.per_state[kBlockState].usage, 1u);
  EXPECT_EQ(st.per_state[kBlockState].time_ns, 0u);
  EXPECT_EQ(st.per_state[kBlockState].above, 1u);  // 0 < target residency.
}

TEST(IdleCountersAccount, OnlyPollsThatRanOutTheirWindowArePollTimeouts) {
  const StateTable t = DefaultStateTable();
  IdleCounters c;
  c.Account(kPollState, 10, IdleExit::kTimeout, t);
  c.Account(kPollState, 10, IdleExit::kWoken, t);
  c.Account(kPollState, 10, IdleExit::kDeadline, t);
  c.Account(kBlockState, 10, IdleExit::kTimeout, t);
  EXPECT_EQ(Snap(c).poll_timeouts, 1u);
}

TEST(IdleCountersAccount, BlockShorterThanItsTargetResidencyIsAbove) {
  const StateTable t = DefaultStateTable();
  IdleCounters c;
  c.Account(kBlockState, kDefaultBlockTargetResidencyNs - 1, IdleExit::kWoken,
            t);
  c.Account(kBlockState, kDefaultBlockTargetResidencyNs, IdleExit::kWoken, t);
  c.Account(kBlockState, 10 * kDefaultBlockTargetResidencyNs,
            IdleExit::kDeadline, t);
  const IdleStats st = Snap(c);
  EXPECT_EQ(st.per_state[kBlockState].above, 1u);
  EXPECT_EQ(st.per_state[kBlockState].below, 0u) << "nothing is deeper";
}

TEST(IdleCountersAccount, PollLongEnoughToBlockIsBelow) {
  const StateTable t = DefaultStateTable();
  IdleCounters c;
  c.Account(kPollState, kDefaultBlockTargetResidencyNs - 1, IdleExit::kWoken,
            t);
  c.Account(kPollState, kDefaultBlockTargetResidencyNs, IdleExit::kWoken, t);
  c.Account(kPollState, 1000000, IdleExit::kTimeout, t);
  const IdleStats st = Snap(c);
  EXPECT_EQ(st.per_state[kPollState].below, 2u);
  EXPECT_EQ(st.per_state[kPollState].above, 0u) << "nothing is shallower";
}

TEST(IdleCountersAccount, BelowSubtractsTheExitLatency) {
  // cpuidle_enter_state(): diff > delay && diff - delay >= deeper target.
  StateTable t = DefaultStateTable();
  t[kPollState].exit_latency_ns = 500;
  IdleCounters c;
  c.Account(kPollState, 12499, IdleExit::kWoken, t);  // 11999 < 12000
  EXPECT_EQ(Snap(c).per_state[kPollState].below, 0u);
  c.Account(kPollState, 12500, IdleExit::kWoken, t);  // 12000 >= 12000
  EXPECT_EQ(Snap(c).per_state[kPollState].below, 1u);
  c.Account(kPollState, 500, IdleExit::kWoken, t);  // diff == delay: no.
  EXPECT_EQ(Snap(c).per_state[kPollState].below, 1u);
}

TEST(IdleCountersAccount,
     ShallowestStateShorterThanItsTargetIsNeitherAboveNorBelow) {
  // The contract: classified "exactly as the kernel's cpuidle_enter_state()".
  // There, a stay shorter than the entered state's target residency takes
  // the `if (diff < target_residency_ns)` branch, which for state 0 finds no
  // shallower state and counts nothing; the `else if` (below) is not
  // evaluated. Here POLL has a (non-kernel) target residency of 5 us and a
  // 3 us poll would have been long enough for a BLOCK that pays off after
  // 1 us: the kernel counts neither above nor below.
  StateTable t = DefaultStateTable();
  t[kPollState].target_residency_ns = 5000;
  t[kBlockState].target_residency_ns = 1000;
  IdleCounters c;
  c.Account(kPollState, 3000, IdleExit::kWoken, t);
  const IdleStats st = Snap(c);
  EXPECT_EQ(st.per_state[kPollState].above, 0u);
  EXPECT_EQ(st.per_state[kPollState].below, 0u)
      << "counted below although the stay was shorter than POLL's own target "
         "residency; cpuidle_enter_state() does not";
}

TEST(IdleCountersAccount, WindowIsPublished) {
  IdleCounters c;
  EXPECT_EQ(Snap(c).window_ns, 0);
  c.SetWindow(50000);
  EXPECT_EQ(Snap(c).window_ns, 50000);
  c.SetWindow(kUnlimitedPollNs);
  EXPECT_EQ(Snap(c).window_ns, kUnlimitedPollNs);
}

TEST(IdleCountersAccount, SnapshotLeavesDescriptiveFieldsAlone) {
  IdleCounters c;
  IdleStats st;
  st.label = "worker 1";
  st.wakes.polling = 7;
  c.Snapshot(st);
  EXPECT_EQ(st.label, "worker 1");
  EXPECT_EQ(st.wakes.polling, 7u);
}

TEST(IdleCountersAccount, SnapshotFromAnotherThreadSeesMonotonicCounters) {
  const StateTable t = DefaultStateTable();
  IdleCounters c;
  constexpr int kPeriods = 20000;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    uint64_t last_usage = 0, last_time = 0;
    while (!done.load(std::memory_order_acquire)) {
      const IdleStats st = Snap(c);
      const uint64_t usage = st.per_state[kBlockState].usage;
      const uint64_t time = st.per_state[kBlockState].time_ns;
      EXPECT_GE(usage, last_usage);
      EXPECT_GE(time, last_time);
      EXPECT_LE(usage, static_cast<uint64_t>(kPeriods));
      last_usage = usage;
      last_time = time;
    }
  });
  for (int i = 0; i < kPeriods; ++i) {
    c.Account(kBlockState, 3, IdleExit::kWoken, t);
  }
  done.store(true, std::memory_order_release);
  reader.join();
  EXPECT_EQ(Snap(c).per_state[kBlockState].usage, uint64_t{kPeriods});
  EXPECT_EQ(Snap(c).per_state[kBlockState].time_ns, uint64_t{3 * kPeriods});
}

TEST(WakeStatsSums, TotalAndWithoutSyscall) {
  WakeStats w;
  w.polling = 3;
  w.not_idle = 1;
  w.syscall = 4;
  EXPECT_EQ(w.total(), 8u);
  EXPECT_EQ(w.without_syscall(), 4u);
}

// --- Printing ---------------------------------------------------------------

IdleStats Sample() {
  IdleStats st;
  st.label = "worker 3";
  st.driver = "parker";
  st.governor = "haltpoll";
  st.wait = "pause";
  st.per_state[kPollState] = {5, 12345, 0, 2};
  st.per_state[kBlockState] = {7, 98765432, 3, 0};
  st.poll_timeouts = 4;
  st.window_ns = 50000;
  st.wakes.polling = 3;
  st.wakes.not_idle = 1;
  st.wakes.syscall = 4;
  return st;
}

std::vector<std::string> Lines(const std::string& s) {
  return absl::StrSplit(s, '\n');
}

TEST(FormatCpupowerLayout, HasTheIdleInfoLines) {
  const std::string out = FormatCpupower(Sample());
  const std::vector<std::string> lines = Lines(out);
  ASSERT_GE(lines.size(), 6u) << out;
  // cpupower idle-info: driver, governor, "analyzing CPU n:", blank line.
  EXPECT_THAT(lines[0], HasSubstr("driver: parker"));
  EXPECT_THAT(lines[0], HasSubstr("pause"));
  EXPECT_THAT(lines[1], HasSubstr("governor: haltpoll"));
  EXPECT_EQ(lines[2], "analyzing worker 3:");
  EXPECT_EQ(lines[3], "");
  EXPECT_EQ(lines[4], "Number of idle states: 2");
  EXPECT_EQ(lines[5], "Available idle states: POLL BLOCK");
  EXPECT_EQ(out.back(), '\n');
}

// The lines of one state's block, from "NAME:" to the line before the next
// state or the trailer.
std::map<std::string, std::string> StateBlock(const std::string& out,
                                              const std::string& name) {
  std::map<std::string, std::string> fields;
  bool in = false;
  for (const std::string& line : Lines(out)) {
    if (line == name + ":") {
      in = true;
      continue;
    }
    if (!in) continue;
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) break;  // Next state's "NAME:" or end.
    const std::string key = line.substr(0, colon);
    if (fields.count(key)) break;  // The next state's block began.
    fields[key] = line.substr(colon + 2);
  }
  return fields;
}

TEST(FormatCpupowerLayout, PerStateLinesInMicroseconds) {
  const std::string out = FormatCpupower(Sample());
  const auto poll = StateBlock(out, "POLL");
  EXPECT_EQ(poll.at("Flags/Description"), "CPUIDLE CORE POLL IDLE") << out;
  EXPECT_EQ(poll.at("Latency"), "0");
  EXPECT_EQ(poll.at("Usage"), "5");
  EXPECT_EQ(poll.at("Duration"), "12");  // 12345 ns.
  EXPECT_EQ(poll.at("Above"), "0");
  EXPECT_EQ(poll.at("Below"), "2");
  const auto block = StateBlock(out, "BLOCK");
  EXPECT_EQ(block.at("Latency"), "6");     // 6000 ns.
  EXPECT_EQ(block.at("Residency"), "12");  // 12000 ns.
  EXPECT_EQ(block.at("Usage"), "7");
  EXPECT_EQ(block.at("Duration"), "98765");  // 98765432 ns.
  EXPECT_EQ(block.at("Above"), "3");
  EXPECT_EQ(block.at("Below"), "0");
}

TEST(FormatCpupowerLayout, StateLinesComeInCpupowersOrder) {
  const std::vector<std::string> lines = Lines(FormatCpupower(Sample()));
  auto index = [&](const std::string& prefix, size_t from) -> size_t {
    for (size_t i = from; i < lines.size(); ++i) {
      if (lines[i].rfind(prefix, 0) == 0) return i;
    }
    ADD_FAILURE() << "no line starting with '" << prefix << "'";
    return lines.size();
  };
  const size_t poll = index("POLL:", 0);
  const size_t flags = index("Flags/Description: ", poll);
  const size_t latency = index("Latency: ", poll);
  const size_t usage = index("Usage: ", poll);
  const size_t duration = index("Duration: ", poll);
  const size_t block = index("BLOCK:", poll);
  EXPECT_EQ(flags, poll + 1);
  EXPECT_LT(flags, latency);
  EXPECT_LT(latency, usage);
  EXPECT_LT(usage, duration);
  EXPECT_LT(duration, block);
}

TEST(FormatCpupowerLayout, TrailerHasTimeoutsWindowAndWakes) {
  const std::string out = FormatCpupower(Sample());
  EXPECT_THAT(out, HasSubstr("Poll timeouts: 4\n"));
  EXPECT_THAT(out, HasSubstr("Poll window: 50000 ns\n"));
  EXPECT_THAT(out, HasSubstr("Wakes: 3 while polling, 1 while running, 4 by "
                             "FUTEX_WAKE (50.00% without a syscall)\n"));
}

TEST(FormatCpupowerLayout, NoWakesIsZeroPercent) {
  IdleStats st;
  const std::string out = FormatCpupower(st);
  EXPECT_THAT(out, HasSubstr("(0.00% without a syscall)"));
  EXPECT_THAT(out, HasSubstr("Usage: 0\n"));
}

// --- A strict little JSON parser -------------------------------------------

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  std::string text;  // Number as written, or the decoded string.
  std::vector<Json> items;
  std::map<std::string, Json> fields;
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}

  // Parses one value that must span the whole input; false on any error.
  bool ParseDocument(Json& out) {
    if (!Value(out)) return false;
    Ws();
    return pos_ == s_.size();
  }
  size_t pos() const { return pos_; }

 private:
  void Ws() {
    while (pos_ < s_.size() &&
           std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
  }
  bool Lit(const char* w) {
    const std::string word(w);
    if (s_.compare(pos_, word.size(), word) != 0) return false;
    pos_ += word.size();
    return true;
  }
  bool Value(Json& out) {
    Ws();
    if (pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    if (c == '{') return Object(out);
    if (c == '[') return Array(out);
    if (c == '"') {
      out.kind = Json::kString;
      return String(out.text);
    }
    if (Lit("true")) {
      out.kind = Json::kBool;
      out.boolean = true;
      return true;
    }
    if (Lit("false")) {
      out.kind = Json::kBool;
      return true;
    }
    if (Lit("null")) {
      out.kind = Json::kNull;
      return true;
    }
    return Number(out);
  }
  bool Number(Json& out) {
    const size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    if (pos_ >= s_.size() ||
        !std::isdigit(static_cast<unsigned char>(s_[pos_])))
      return false;
    if (s_[pos_] == '0' && pos_ + 1 < s_.size() &&
        std::isdigit(static_cast<unsigned char>(s_[pos_ + 1]))) {
      return false;  // No leading zeros.
    }
    while (pos_ < s_.size() &&
           std::isdigit(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
    if (pos_ < s_.size() &&
        (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      while (pos_ < s_.size() &&
             (std::isdigit(static_cast<unsigned char>(s_[pos_])) ||
              s_[pos_] == 'e' || s_[pos_] == 'E' || s_[pos_] == '+' ||
              s_[pos_] == '-')) {
        ++pos_;
      }
    }
    out.kind = Json::kNumber;
    out.text = s_.substr(start, pos_ - start);
    return true;
  }
  bool String(std::string& out) {
    if (s_[pos_] != '"') return false;
    ++pos_;
    out.clear();
    while (pos_ < s_.size()) {
      const unsigned char c = s_[pos_++];
      if (c == '"') return true;
      if (c < 0x20) return false;  // Control characters must be escaped.
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= s_.size()) return false;
      const char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          if (pos_ + 4 > s_.size()) return false;
          unsigned v = 0;
          for (int i = 0; i < 4; ++i) {
            const char h = s_[pos_++];
            if (!std::isxdigit(static_cast<unsigned char>(h))) return false;
            v = v * 16 +
                (std::isdigit(static_cast<unsigned char>(h))
                     ? h - '0'
                     : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
          }
          if (v >= 0x80) return false;  // The tests use ASCII only.
          out += static_cast<char>(v);
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }
  bool Array(Json& out) {
    out.kind = Json::kArray;
    ++pos_;
    Ws();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return true;
    }
    for (;;) {
      Json item;
      if (!Value(item)) return false;
      out.items.push_back(std::move(item));
      Ws();
      if (pos_ >= s_.size()) return false;
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return false;
    }
  }
  bool Object(Json& out) {
    out.kind = Json::kObject;
    ++pos_;
    Ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return true;
    }
    for (;;) {
      Ws();
      std::string key;
      if (pos_ >= s_.size() || !String(key)) return false;
      if (out.fields.count(key)) return false;  // Duplicate key.
      Ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') return false;
      ++pos_;
      Json value;
      if (!Value(value)) return false;
      out.fields.emplace(key, std::move(value));
      Ws();
      if (pos_ >= s_.size()) return false;
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return false;
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

// Parses `text` or fails the test, saying where.
Json ParseOrFail(const std::string& text) {
  Json j;
  JsonParser p(text);
  EXPECT_TRUE(p.ParseDocument(j))
      << "not valid JSON near offset " << p.pos() << ":\n"
      << text;
  return j;
}

std::vector<std::string> Keys(const Json& j) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.fields) keys.push_back(k);
  return keys;
}

// The number in `j` as an unsigned 64-bit value (fails the test otherwise).
uint64_t U64(const Json& j) {
  EXPECT_EQ(j.kind, Json::kNumber);
  uint64_t v = 0;
  EXPECT_TRUE(absl::SimpleAtoi(j.text, &v)) << j.text;
  return v;
}
int64_t I64(const Json& j) {
  EXPECT_EQ(j.kind, Json::kNumber);
  int64_t v = 0;
  EXPECT_TRUE(absl::SimpleAtoi(j.text, &v)) << j.text;
  return v;
}

TEST(JsonParserSelfCheck, RejectsWhatIsNotJson) {
  // The checks below are only as good as the parser: it must fail too.
  for (const char* bad :
       {"", "{", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":\"x\"y\"}", "[1 2]",
        "{\"a\":01}", "{\"a\":1}{}", "{\"a\":\"\n\"}", "{\"a\":1,\"a\":2}",
        "{\"a\":\"\\q\"}", "nul"}) {
    Json j;
    const std::string s(bad);
    JsonParser q(s);
    EXPECT_FALSE(q.ParseDocument(j)) << bad;
  }
  Json j;
  const std::string good = R"({"a":[1,-2,{"b":"c\"\\d\n"}],"t":true,"n":null})";
  JsonParser p(good);
  ASSERT_TRUE(p.ParseDocument(j));
  EXPECT_EQ(j.fields.at("a").items[2].fields.at("b").text, "c\"\\d\n");
}

TEST(FormatJsonDocument, IsValidJsonWithEveryField) {
  const Json j = ParseOrFail(FormatJson(Sample()));
  ASSERT_EQ(j.kind, Json::kObject);
  EXPECT_THAT(Keys(j),
              ElementsAre("driver", "governor", "label", "poll_timeouts",
                          "states", "wait", "wakes", "window_ns"));
  EXPECT_EQ(j.fields.at("label").text, "worker 3");
  EXPECT_EQ(j.fields.at("driver").text, "parker");
  EXPECT_EQ(j.fields.at("governor").text, "haltpoll");
  EXPECT_EQ(j.fields.at("wait").text, "pause");
  EXPECT_EQ(I64(j.fields.at("window_ns")), 50000);
  EXPECT_EQ(U64(j.fields.at("poll_timeouts")), 4u);

  const Json& states = j.fields.at("states");
  ASSERT_EQ(states.kind, Json::kArray);
  ASSERT_EQ(states.items.size(), 2u);
  const Json& poll = states.items[0];
  EXPECT_THAT(Keys(poll), ElementsAre("above", "below", "exit_latency_ns",
                                      "name", "polling", "target_residency_ns",
                                      "time_ns", "usage"));
  EXPECT_EQ(poll.fields.at("name").text, "POLL");
  EXPECT_EQ(poll.fields.at("polling").kind, Json::kBool);
  EXPECT_TRUE(poll.fields.at("polling").boolean);
  EXPECT_EQ(I64(poll.fields.at("exit_latency_ns")), 0);
  EXPECT_EQ(I64(poll.fields.at("target_residency_ns")), 0);
  EXPECT_EQ(U64(poll.fields.at("usage")), 5u);
  EXPECT_EQ(U64(poll.fields.at("time_ns")), 12345u);  // ns, not us.
  EXPECT_EQ(U64(poll.fields.at("above")), 0u);
  EXPECT_EQ(U64(poll.fields.at("below")), 2u);
  const Json& block = states.items[1];
  EXPECT_EQ(block.fields.at("name").text, "BLOCK");
  EXPECT_FALSE(block.fields.at("polling").boolean);
  EXPECT_EQ(I64(block.fields.at("exit_latency_ns")),
            kDefaultBlockExitLatencyNs);
  EXPECT_EQ(I64(block.fields.at("target_residency_ns")),
            kDefaultBlockTargetResidencyNs);
  EXPECT_EQ(U64(block.fields.at("usage")), 7u);
  EXPECT_EQ(U64(block.fields.at("time_ns")), 98765432u);
  EXPECT_EQ(U64(block.fields.at("above")), 3u);

  const Json& wakes = j.fields.at("wakes");
  EXPECT_THAT(Keys(wakes), ElementsAre("not_idle", "polling", "syscall"));
  EXPECT_EQ(U64(wakes.fields.at("polling")), 3u);
  EXPECT_EQ(U64(wakes.fields.at("not_idle")), 1u);
  EXPECT_EQ(U64(wakes.fields.at("syscall")), 4u);
}

TEST(FormatJsonDocument, ExtremeValuesStayExact) {
  IdleStats st;
  st.window_ns = kUnlimitedPollNs;
  st.per_state[kBlockState].time_ns = std::numeric_limits<uint64_t>::max();
  st.wakes.syscall = std::numeric_limits<uint64_t>::max();
  const Json j = ParseOrFail(FormatJson(st));
  EXPECT_EQ(I64(j.fields.at("window_ns")), kUnlimitedPollNs);
  EXPECT_EQ(U64(j.fields.at("states").items[1].fields.at("time_ns")),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(U64(j.fields.at("wakes").fields.at("syscall")),
            std::numeric_limits<uint64_t>::max());
}

TEST(FormatJsonDocument, EmptyStatsAreValidJson) {
  const Json j = ParseOrFail(FormatJson(IdleStats{}));
  EXPECT_EQ(j.fields.at("label").text, "");
}

TEST(FormatJsonDocument, StringsAreEscaped) {
  // Labels are free text chosen by the program ("worker 3", a path, a
  // quoted name). The contract: "One JSON object with every field".
  IdleStats st = Sample();
  st.label = "pipe \"in\" C:\\tmp\\q\tx\ny";
  const std::string out = FormatJson(st);
  const Json j = ParseOrFail(out);
  ASSERT_EQ(j.kind, Json::kObject) << out;
  EXPECT_EQ(j.fields.count("label") ? j.fields.at("label").text : "<missing>",
            st.label);
}

}  // namespace
}  // namespace haltpool::idle
