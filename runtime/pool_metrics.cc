// PoolStats as OpenMetrics text (see the header). Each family is written
// whole, metadata first, then one sample per worker (and per state or kind),
// as the format requires every sample of a family to follow its metadata
// without another family between them.

#include "runtime/pool_metrics.h"

#include <cstdint>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "idle/governor.h"
#include "idle/idle_state.h"

namespace haltpool {

std::string EscapeOpenMetricsLabel(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

enum class Type { kCounter, kGauge, kInfo };

// Nanoseconds as seconds, exactly: "12.000345678"; +Inf for the unlimited
// window (idle::kUnlimitedPollNs).
std::string Seconds(int64_t ns) {
  if (ns == idle::kUnlimitedPollNs) return "+Inf";
  const char* sign = ns < 0 ? "-" : "";
  const uint64_t abs =
      ns < 0 ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  return absl::StrFormat("%s%u.%09u", sign, abs / 1000000000u,
                         abs % 1000000000u);
}
std::string Seconds(uint64_t ns) {
  return absl::StrFormat("%u.%09u", ns / 1000000000u, ns % 1000000000u);
}

// Writes metric families into one string.
class Writer {
 public:
  // Starts family `name` (without _total or _info): its TYPE, its UNIT if
  // `unit` is not empty (then `name` ends with it), and its HELP.
  void Family(absl::string_view name, Type type, absl::string_view unit,
              absl::string_view help) {
    name_ = std::string(name);
    suffix_ = type == Type::kCounter ? "_total"
              : type == Type::kInfo  ? "_info"
                                     : "";
    absl::StrAppend(&out_, "# TYPE ", name,
                    type == Type::kCounter ? " counter"
                    : type == Type::kGauge ? " gauge"
                                           : " info",
                    "\n");
    if (!unit.empty()) absl::StrAppend(&out_, "# UNIT ", name, " ", unit, "\n");
    absl::StrAppend(&out_, "# HELP ", name, " ", EscapeHelp(help), "\n");
  }

  // One sample of the current family: `labels` are name, value pairs (the
  // values escaped here), `value` already a valid OpenMetrics number.
  void Sample(
      std::initializer_list<std::pair<absl::string_view, std::string>> labels,
      absl::string_view value) {
    absl::StrAppend(&out_, name_, suffix_);
    if (labels.size() > 0) {
      out_ += '{';
      bool first = true;
      for (const auto& [label, v] : labels) {
        absl::StrAppend(&out_, first ? "" : ",", label, "=\"",
                        EscapeOpenMetricsLabel(v), "\"");
        first = false;
      }
      out_ += '}';
    }
    absl::StrAppend(&out_, " ", value, "\n");
  }

  std::string Finish() && {
    out_ += "# EOF\n";
    return std::move(out_);
  }

 private:
  // HELP text escapes backslash and newline (and, in OpenMetrics, quotes).
  static std::string EscapeHelp(absl::string_view help) {
    return EscapeOpenMetricsLabel(help);
  }

  std::string out_;
  std::string name_;
  absl::string_view suffix_;
};

// The name of idle state `i` as the text format prints it ("POLL").
std::string StateName(const WorkerStats& w, int i) {
  return w.idle.states[i].name;
}

}  // namespace

std::string FormatPoolStatsOpenMetrics(const PoolStats& stats) {
  Writer out;
  const std::vector<WorkerStats>& workers = stats.workers;
  auto id = [](const WorkerStats& w) { return absl::StrCat(w.index); };

  // Per worker and idle state: cpuidle's usage, time, above, below.
  struct StateCounter {
    absl::string_view name, unit, help;
    std::function<std::string(const idle::StateStats&)> value;
  };
  const StateCounter state_counters[] = {
      {"haltpool_idle_entries", "",
       "Times the worker entered the idle state (cpuidle's usage).",
       [](const idle::StateStats& s) { return absl::StrCat(s.usage); }},
      {"haltpool_idle_time_seconds", "seconds",
       "Time the worker spent in the idle state (cpuidle's time).",
       [](const idle::StateStats& s) { return Seconds(s.time_ns); }},
      {"haltpool_idle_above", "",
       "Stays in the state that ended before its target residency: too deep "
       "(cpuidle's above).",
       [](const idle::StateStats& s) { return absl::StrCat(s.above); }},
      {"haltpool_idle_below", "",
       "Stays long enough for the next deeper state: too shallow (cpuidle's "
       "below).",
       [](const idle::StateStats& s) { return absl::StrCat(s.below); }},
  };
  for (const StateCounter& c : state_counters) {
    out.Family(c.name, Type::kCounter, c.unit, c.help);
    for (const WorkerStats& w : workers) {
      for (int i = 0; i < idle::kStateCount; ++i) {
        out.Sample({{"worker", id(w)}, {"state", StateName(w, i)}},
                   c.value(w.idle.per_state[i]));
      }
    }
  }

  out.Family("haltpool_poll_timeouts", Type::kCounter, "",
             "Polls that ran out their window.");
  for (const WorkerStats& w : workers) {
    out.Sample({{"worker", id(w)}}, absl::StrCat(w.idle.poll_timeouts));
  }
  out.Family("haltpool_poll_window_seconds", Type::kGauge, "seconds",
             "The governor's current poll window (+Inf: no limit).");
  for (const WorkerStats& w : workers) {
    out.Sample({{"worker", id(w)}}, Seconds(w.idle.window_ns));
  }

  out.Family("haltpool_wakes", Type::kCounter, "",
             "Wakes sent to the worker, by what the waker found: polling "
             "(a store, no syscall), not_idle (running: a store), syscall "
             "(asleep: FUTEX_WAKE or the reactor's eventfd).");
  for (const WorkerStats& w : workers) {
    out.Sample({{"worker", id(w)}, {"kind", "polling"}},
               absl::StrCat(w.idle.wakes.polling));
    out.Sample({{"worker", id(w)}, {"kind", "not_idle"}},
               absl::StrCat(w.idle.wakes.not_idle));
    out.Sample({{"worker", id(w)}, {"kind", "syscall"}},
               absl::StrCat(w.idle.wakes.syscall));
  }

  // Per worker: tasks and I/O.
  struct WorkerCounter {
    absl::string_view name, help;
    std::function<uint64_t(const WorkerStats&)> value;
  };
  const WorkerCounter worker_counters[] = {
      {"haltpool_tasks_run", "Tasks the worker ran.",
       [](const WorkerStats& w) { return w.tasks_run; }},
      {"haltpool_tasks_stolen",
       "Of the tasks run, those taken from another worker's queue.",
       [](const WorkerStats& w) { return w.tasks_stolen; }},
      {"haltpool_tasks_handed_off",
       "Of the tasks run, those handed to the worker while it polled.",
       [](const WorkerStats& w) { return w.tasks_handed_off; }},
      {"haltpool_idles_beside_waker",
       "Idle periods without polling because the worker's wakes came from "
       "its own CPU.",
       [](const WorkerStats& w) { return w.idles_beside_waker; }},
      {"haltpool_exceptions", "Tasks and I/O callbacks that threw.",
       [](const WorkerStats& w) { return w.exceptions; }},
      {"haltpool_io_callbacks", "I/O completions whose callback ran.",
       [](const WorkerStats& w) { return w.io.callbacks; }},
  };
  for (const WorkerCounter& c : worker_counters) {
    out.Family(c.name, Type::kCounter, "", c.help);
    for (const WorkerStats& w : workers) {
      out.Sample({{"worker", id(w)}}, absl::StrCat(c.value(w)));
    }
  }
  out.Family("haltpool_io_wakes", Type::kCounter, "",
             "How I/O completions reached the worker: polled (its poll saw "
             "them), posted (posted into the ring while it polled), woke "
             "(they ended a block in the reactor).");
  for (const WorkerStats& w : workers) {
    out.Sample({{"worker", id(w)}, {"kind", "polled"}},
               absl::StrCat(w.io.polled));
    out.Sample({{"worker", id(w)}, {"kind", "posted"}},
               absl::StrCat(w.io.posted));
    out.Sample({{"worker", id(w)}, {"kind", "woke"}}, absl::StrCat(w.io.woke));
  }
  const WorkerCounter reactor_counters[] = {
      {"haltpool_io_cq_overflows",
       "System calls that flushed completions the kernel kept while the "
       "completion queue was full (io_uring).",
       [](const WorkerStats& w) { return w.io.reactor.cq_overflows; }},
      {"haltpool_io_cqes_dropped",
       "Completions the kernel dropped (io_uring without "
       "IORING_FEAT_NODROP).",
       [](const WorkerStats& w) { return w.io.reactor.cqes_dropped; }},
      {"haltpool_io_retries",
       "Operations tried again: a full submission queue (io_uring), an fd "
       "not ready (epoll).",
       [](const WorkerStats& w) { return w.io.reactor.retries; }},
  };
  for (const WorkerCounter& c : reactor_counters) {
    out.Family(c.name, Type::kCounter, "", c.help);
    for (const WorkerStats& w : workers) {
      out.Sample({{"worker", id(w)}}, absl::StrCat(c.value(w)));
    }
  }

  out.Family("haltpool_worker", Type::kInfo, "",
             "The worker's placement, idle governor, wait mechanism and I/O "
             "backend (io_backend \"unused\" before its first I/O).");
  for (const WorkerStats& w : workers) {
    out.Sample({{"worker", id(w)},
                {"cpu", absl::StrCat(w.cpu)},
                {"numa_node", absl::StrCat(w.numa_node)},
                {"governor", w.idle.governor},
                {"wait", w.idle.wait},
                {"io_backend", w.io_backend.empty() ? "unused" : w.io_backend},
                {"io_setup", w.io_setup},
                {"io_note", w.io_note}},
               "1");
  }

  // Per pool.
  out.Family("haltpool_timers_cancelled", Type::kCounter, "",
             "Timers not yet due when the pool shut down.");
  out.Sample({}, absl::StrCat(stats.timers_cancelled));
  out.Family("haltpool_max_pollers", Type::kGauge, "",
             "How many workers may poll at once.");
  out.Sample({}, absl::StrCat(stats.max_pollers));
  out.Family("haltpool_outside_parks", Type::kCounter, "",
             "Idle periods of threads outside the pool waiting for a task "
             "group.");
  out.Sample({}, absl::StrCat(stats.outside_waits.parks));
  out.Family("haltpool_outside_wakes", Type::kCounter, "",
             "How a group's last task woke a thread outside the pool that "
             "waited for it.");
  out.Sample({{"kind", "polling"}},
             absl::StrCat(stats.outside_waits.wakes.polling));
  out.Sample({{"kind", "not_idle"}},
             absl::StrCat(stats.outside_waits.wakes.not_idle));
  out.Sample({{"kind", "syscall"}},
             absl::StrCat(stats.outside_waits.wakes.syscall));
  const BackoffStats& b = stats.backoff;
  out.Family("haltpool_backoff_enabled", Type::kGauge, "",
             "1 if the poll back-off under contention is on, else 0.");
  out.Sample({}, b.enabled ? "1" : "0");
  out.Family("haltpool_backoff_level", Type::kGauge, "",
             "The poll back-off's level: 0 polls as the governor says, the "
             "highest not at all.");
  out.Sample({}, absl::StrCat(b.level));
  out.Family("haltpool_backoff_poll_cap_seconds", Type::kGauge, "seconds",
             "The back-off's cap on each poll now (+Inf: none, 0: no "
             "polling).");
  out.Sample({}, Seconds(b.poll_cap_ns));
  out.Family("haltpool_backoff_samples", Type::kCounter, "",
             "Contention samples the back-off took.");
  out.Sample({}, absl::StrCat(b.samples));
  out.Family("haltpool_backoff_backed_off", Type::kCounter, "",
             "Times the back-off raised its level.");
  out.Sample({}, absl::StrCat(b.backed_off));
  out.Family("haltpool_backoff_recovered", Type::kCounter, "",
             "Times the back-off lowered its level.");
  out.Sample({}, absl::StrCat(b.recovered));
  out.Family("haltpool_backoff_contended", Type::kCounter, "",
             "Samples that showed contention, by the rule that said so.");
  out.Sample({{"cause", "steal"}}, absl::StrCat(b.contended_steal));
  out.Sample({{"cause", "preempted"}}, absl::StrCat(b.contended_preempted));
  out.Sample({{"cause", "runnable"}}, absl::StrCat(b.contended_runnable));
  return std::move(out).Finish();
}

}  // namespace haltpool
