#include "idle/idle_stats.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace haltpool::idle {

void IdleCounters::Account(int state, int64_t residency_ns, IdleExit exit,
                           const StateTable& states) noexcept {
  if (residency_ns < 0) residency_ns = 0;
  State& s = states_[state];
  Bump(s.usage);
  Bump(s.time_ns, static_cast<uint64_t>(residency_ns));
  if (state == kPollState && exit == IdleExit::kTimeout) Bump(poll_timeouts_);

  // As cpuidle_enter_state(): a stay shorter than the state's own target
  // residency is "above" when a shallower state exists (and nothing for the
  // shallowest); otherwise "below" when the next deeper state's target
  // residency fits in it, its exit latency taken off.
  const IdleState& entered = states[state];
  if (residency_ns < entered.target_residency_ns) {
    if (state > 0) Bump(s.above);
  } else if (residency_ns > entered.exit_latency_ns &&
             state + 1 < kStateCount &&
             residency_ns - entered.exit_latency_ns >=
                 states[state + 1].target_residency_ns) {
    Bump(s.below);
  }
}

void IdleCounters::Snapshot(IdleStats& out) const noexcept {
  for (int i = 0; i < kStateCount; ++i) {
    out.per_state[i].usage = states_[i].usage.load(std::memory_order_relaxed);
    out.per_state[i].time_ns =
        states_[i].time_ns.load(std::memory_order_relaxed);
    out.per_state[i].above = states_[i].above.load(std::memory_order_relaxed);
    out.per_state[i].below = states_[i].below.load(std::memory_order_relaxed);
  }
  out.poll_timeouts = poll_timeouts_.load(std::memory_order_relaxed);
  out.window_ns = window_ns_.load(std::memory_order_relaxed);
}

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          absl::StrAppend(&out, absl::StrFormat("\\u%04x", c));
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string FormatCpupower(const IdleStats& st) {
  std::string out = absl::StrCat(
      "haltpool idle driver: ", st.driver, " (wait: ", st.wait, ")\n",
      "haltpool idle governor: ", st.governor, "\n", "analyzing ", st.label,
      ":\n\n", "Number of idle states: ", kStateCount, "\n",
      "Available idle states:");
  for (const IdleState& s : st.states) absl::StrAppend(&out, " ", s.name);
  absl::StrAppend(&out, "\n");
  for (int i = 0; i < kStateCount; ++i) {
    const IdleState& s = st.states[i];
    const StateStats& c = st.per_state[i];
    absl::StrAppend(&out, s.name, ":\n", "Flags/Description: ", s.desc, "\n",
                    "Latency: ", s.exit_latency_ns / 1000, "\n",
                    "Residency: ", s.target_residency_ns / 1000, "\n",
                    "Usage: ", c.usage, "\n", "Duration: ", c.time_ns / 1000,
                    "\n", "Above: ", c.above, "\n", "Below: ", c.below, "\n");
  }
  const WakeStats& w = st.wakes;
  const double pct = w.total()
                         ? 100.0 * static_cast<double>(w.without_syscall()) /
                               static_cast<double>(w.total())
                         : 0.0;
  absl::StrAppend(&out, "Poll timeouts: ", st.poll_timeouts, "\n",
                  "Poll window: ", st.window_ns, " ns\n");
  absl::StrAppend(
      &out, absl::StrFormat("Wakes: %u while polling, %u while running, %u by "
                            "FUTEX_WAKE (%.2f%% without a syscall)\n",
                            w.polling, w.not_idle, w.syscall, pct));
  return out;
}

std::string FormatJson(const IdleStats& st) {
  std::string out = absl::StrFormat(
      "{\"label\":%s,\"driver\":%s,\"governor\":%s,\"wait\":%s,"
      "\"window_ns\":%d,\"poll_timeouts\":%u,\"states\":[",
      JsonString(st.label), JsonString(st.driver), JsonString(st.governor),
      JsonString(st.wait), st.window_ns, st.poll_timeouts);
  for (int i = 0; i < kStateCount; ++i) {
    const IdleState& s = st.states[i];
    const StateStats& c = st.per_state[i];
    absl::StrAppend(
        &out, i ? "," : "",
        absl::StrFormat(
            "{\"name\":%s,\"exit_latency_ns\":%d,"
            "\"target_residency_ns\":%d,\"polling\":%s,"
            "\"usage\":%u,\"time_ns\":%u,\"above\":%u,\"below\":%u}",
            JsonString(s.name), s.exit_latency_ns, s.target_residency_ns,
            s.polling ? "true" : "false", c.usage, c.time_ns, c.above,
            c.below));
  }
  absl::StrAppend(
      &out,
      absl::StrFormat("],\"wakes\":{\"polling\":%u,\"not_idle\":%u,"
                      "\"syscall\":%u}}",
                      st.wakes.polling, st.wakes.not_idle, st.wakes.syscall));
  return out;
}

}  // namespace haltpool::idle
