#include "runtime/pool_stats.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"

namespace haltpool {

std::string FormatCalibration(const idle::Calibration& c) {
  if (!c.measured) return c.note.empty() ? "off" : c.note;
  std::string out = absl::StrFormat(
      "block wake %.1f us, poll wake %.2f us (%d round trips%s), timed "
      "block late %.1f us (p90 of %d), %.1f ms",
      c.block_wake_ns / 1e3, c.poll_wake_ns / 1e3, c.round_trips,
      c.cross_cpu ? " across two CPUs" : "", c.timed_wait_late_ns / 1e3,
      idle::kCalibrationTimedWaits, c.took_ns / 1e6);
  if (!c.note.empty()) absl::StrAppend(&out, "; ", c.note);
  return out;
}

std::string FormatIdleOptionsChanges(const IdleOptionsStats& s) {
  if (s.changes == 0) return "as started";
  return absl::StrCat(s.changes, s.changes == 1 ? " change" : " changes",
                      ", last at ",
                      absl::FormatTime("%Y-%m-%d %H:%M:%E3S UTC",
                                       s.last_change_at, absl::UTCTimeZone()),
                      ": ", s.last_change);
}

namespace {

// Two lines: how completions reached the worker, and what its reactor did
// to lose none.
std::string FormatIoCounts(const WorkerIoCounts& io) {
  return absl::StrFormat(
      "I/O wakes: %u found by polling, %u posted while polling, %u ended "
      "a block\n"
      "I/O queues: %u completion queue overflows, %u completions dropped, "
      "%u retries\n",
      io.polled, io.posted, io.woke, io.reactor.cq_overflows,
      io.reactor.cqes_dropped, io.reactor.retries);
}

}  // namespace

std::string FormatPoolStatsText(const PoolStats& stats) {
  std::string out;
  for (const WorkerStats& w : stats.workers) {
    absl::StrAppend(
        &out, idle::FormatCpupower(w.idle),
        absl::StrFormat("Tasks: %u run, %u stolen, %u handed off, %u threw\n"
                        "Idle beside its waker, no poll: %u periods\n"
                        "I/O: %s, %u completions%s%s%s%s\n",
                        w.tasks_run, w.tasks_stolen, w.tasks_handed_off,
                        w.exceptions, w.idles_beside_waker,
                        w.io_backend.empty() ? "unused" : w.io_backend,
                        w.io.callbacks, w.io_note.empty() ? "" : " ; ",
                        w.io_note,
                        w.io_setup.empty() ? "" : " ; task work: ", w.io_setup),
        w.io_backend.empty() ? "" : FormatIoCounts(w.io),
        absl::StrFormat("Idle options: generation %u\n",
                        w.idle_options_generation),
        absl::StrFormat("Placement: cpu %d, NUMA node %d\n\n", w.cpu,
                        w.numa_node));
  }
  absl::StrAppend(
      &out, "Timers cancelled at shutdown: ", stats.timers_cancelled, "\n",
      "Calibration: ", FormatCalibration(stats.calibration), "\n",
      "Back-off: ", FormatBackoff(stats.backoff), "\n",
      "Idle options: ", FormatIdleOptionsChanges(stats.idle_options), "\n",
      "Outside waits: ", FormatOutsideWaits(stats.outside_waits), "\n");
  return out;
}

std::string FormatOutsideWaits(const OutsideWaitStats& s) {
  return absl::StrFormat(
      "%u parks; woken %u times while polling, %u while running, %u by "
      "FUTEX_WAKE",
      s.parks, s.wakes.polling, s.wakes.not_idle, s.wakes.syscall);
}

std::string FormatPoolStatsJson(const PoolStats& stats) {
  const idle::Calibration& c = stats.calibration;
  std::string out = absl::StrCat(
      "{\"timers_cancelled\":", stats.timers_cancelled,
      ",\"max_pollers\":", stats.max_pollers,
      ",\"calibration\":{\"measured\":", c.measured ? "true" : "false",
      ",\"block_wake_ns\":", c.block_wake_ns,
      ",\"poll_wake_ns\":", c.poll_wake_ns, ",\"round_trips\":", c.round_trips,
      ",\"timed_wait_late_ns\":", c.timed_wait_late_ns,
      ",\"cross_cpu\":", c.cross_cpu ? "true" : "false",
      ",\"took_ns\":", c.took_ns, ",\"note\":", idle::JsonString(c.note),
      "},\"backoff\":{\"enabled\":", stats.backoff.enabled ? "true" : "false",
      ",\"level\":", stats.backoff.level,
      ",\"samples\":", stats.backoff.samples,
      ",\"backed_off\":", stats.backoff.backed_off,
      ",\"recovered\":", stats.backoff.recovered,
      ",\"contended\":{\"steal\":", stats.backoff.contended_steal,
      ",\"preempted\":", stats.backoff.contended_preempted,
      ",\"runnable\":", stats.backoff.contended_runnable, "},\"poll_cap_ns\":",
      stats.backoff.poll_cap_ns == idle::kUnlimitedPollNs
          ? std::string("null")
          : absl::StrCat(stats.backoff.poll_cap_ns),
      "},\"idle_options\":{\"changes\":", stats.idle_options.changes,
      ",\"last_change_at_unix_ns\":",
      stats.idle_options.changes == 0
          ? std::string("null")
          : absl::StrCat(absl::ToUnixNanos(stats.idle_options.last_change_at)),
      ",\"last_change\":", idle::JsonString(stats.idle_options.last_change),
      "},\"outside_waits\":{\"parks\":", stats.outside_waits.parks,
      ",\"wakes\":{\"polling\":", stats.outside_waits.wakes.polling,
      ",\"not_idle\":", stats.outside_waits.wakes.not_idle,
      ",\"syscall\":", stats.outside_waits.wakes.syscall, "}},\"workers\":[");
  for (size_t i = 0; i < stats.workers.size(); ++i) {
    const WorkerStats& w = stats.workers[i];
    absl::StrAppend(
        &out, i ? "," : "",
        absl::StrFormat(
            "{\"index\":%d,\"cpu\":%d,\"numa_node\":%d,"
            "\"tasks_run\":%u,\"tasks_stolen\":%u,\"tasks_handed_off\":%u,"
            "\"exceptions\":%u,\"idles_beside_waker\":%u,"
            "\"idle_options_generation\":%u,"
            "\"io_backend\":%s,\"io_setup\":%s,\"io_callbacks\":%u,"
            "\"io_wakes\":{\"polled\":%u,\"posted\":%u,"
            "\"woke\":%u},\"io_queues\":{\"cq_overflows\":%u,"
            "\"cqes_dropped\":%u,\"retries\":%u},\"idle\":%s}",
            w.index, w.cpu, w.numa_node, w.tasks_run, w.tasks_stolen,
            w.tasks_handed_off, w.exceptions, w.idles_beside_waker,
            w.idle_options_generation, idle::JsonString(w.io_backend),
            idle::JsonString(w.io_setup), w.io.callbacks, w.io.polled,
            w.io.posted, w.io.woke, w.io.reactor.cq_overflows,
            w.io.reactor.cqes_dropped, w.io.reactor.retries,
            idle::FormatJson(w.idle)));
  }
  absl::StrAppend(&out, "]}");
  return out;
}

}  // namespace haltpool
