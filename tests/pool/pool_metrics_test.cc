// FormatPoolStatsOpenMetrics: its text passes the strict parser, and every
// worker, state and counter of the PoolStats given comes back with the
// value given; label values with quotes, backslashes and newlines survive.

#include "runtime/pool_metrics.h"

#include <cstdint>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "idle/governor.h"
#include "idle/idle_state.h"
#include "runtime/pool_stats.h"
#include "tests/pool/openmetrics_parser.h"

namespace haltpool {
namespace {

using openmetrics::OpenMetricsExposition;
using openmetrics::ParseOpenMetrics;

constexpr int kWorkers = 3;

// Distinct values everywhere, so a field printed in another's place shows.
PoolStats MakeStats() {
  PoolStats stats;
  for (int i = 0; i < kWorkers; ++i) {
    WorkerStats w;
    w.index = i;
    w.cpu = i == 2 ? -1 : i;
    w.numa_node = 0;
    const uint64_t b = 1000 * (i + 1);
    for (int s = 0; s < idle::kStateCount; ++s) {
      w.idle.per_state[s] = {b + 10 * s + 1, b * 1000000007ull + 10 * s + 2,
                             b + 10 * s + 3, b + 10 * s + 4};
    }
    w.idle.governor = i == 1 ? "fixed" : "haltpoll";
    w.idle.wait = "pause";
    w.idle.poll_timeouts = b + 5;
    w.idle.window_ns = i == 1 ? idle::kUnlimitedPollNs : 1500 * (i + 1);
    w.idle.wakes = {b + 6, b + 7, b + 8};
    w.tasks_run = b + 9;
    w.tasks_stolen = b + 11;
    w.tasks_handed_off = b + 20;
    w.exceptions = b + 12;
    w.io.callbacks = b + 13;
    w.io.polled = b + 14;
    w.io.posted = b + 15;
    w.io.woke = b + 16;
    w.io.reactor = {b + 17, b + 18, b + 19};
    if (i != 0) {
      w.io_backend = "io_uring";
      w.io_setup = "coop";
      w.io_note = "epoll: \"io_uring_setup\" said C:\\no\nsecond line";
    }
    stats.workers.push_back(w);
  }
  stats.timers_cancelled = 21;
  stats.max_pollers = 2;
  stats.outside_waits.parks = 31;
  stats.outside_waits.wakes = {32, 33, 34};
  stats.backoff.enabled = true;
  stats.backoff.level = 3;
  stats.backoff.poll_cap_ns = 12500;
  stats.backoff.samples = 57;
  stats.backoff.backed_off = 4;
  stats.backoff.recovered = 1;
  stats.backoff.contended_steal = 5;
  stats.backoff.contended_preempted = 6;
  stats.backoff.contended_runnable = 7;
  return stats;
}

OpenMetricsExposition Parse(const PoolStats& stats) {
  const std::string text = FormatPoolStatsOpenMetrics(stats);
  absl::StatusOr<OpenMetricsExposition> e = ParseOpenMetrics(text);
  EXPECT_TRUE(e.ok()) << e.status() << "\n" << text;
  return e.ok() ? *std::move(e) : OpenMetricsExposition{};
}

// The value of sample `name` with `labels`; fails the test if absent.
std::string Value(const OpenMetricsExposition& e, const std::string& name,
                  const std::map<std::string, std::string>& labels = {}) {
  const openmetrics::OpenMetricsSample* s = e.Find(name, labels);
  if (s == nullptr) {
    ADD_FAILURE() << "no sample " << name << " with the labels given";
    return "";
  }
  return s->value_text;
}

std::string Str(uint64_t v) { return std::to_string(v); }

TEST(PoolMetricsTest, EveryWorkerAndStateHasItsValues) {
  const PoolStats stats = MakeStats();
  const OpenMetricsExposition e = Parse(stats);
  for (const WorkerStats& w : stats.workers) {
    const std::string id = std::to_string(w.index);
    for (int s = 0; s < idle::kStateCount; ++s) {
      const std::map<std::string, std::string> l = {
          {"worker", id}, {"state", idle::DefaultStateTable()[s].name}};
      const idle::StateStats& c = w.idle.per_state[s];
      EXPECT_EQ(Value(e, "haltpool_idle_entries_total", l), Str(c.usage));
      EXPECT_EQ(Value(e, "haltpool_idle_above_total", l), Str(c.above));
      EXPECT_EQ(Value(e, "haltpool_idle_below_total", l), Str(c.below));
      // Seconds, exactly, with nine decimals.
      EXPECT_EQ(Value(e, "haltpool_idle_time_seconds_total", l),
                Str(c.time_ns / 1000000000) + "." +
                    std::string(9 - Str(c.time_ns % 1000000000).size(), '0') +
                    Str(c.time_ns % 1000000000));
    }
    const std::map<std::string, std::string> l = {{"worker", id}};
    EXPECT_EQ(Value(e, "haltpool_poll_timeouts_total", l),
              Str(w.idle.poll_timeouts));
    EXPECT_EQ(Value(e, "haltpool_tasks_run_total", l), Str(w.tasks_run));
    EXPECT_EQ(Value(e, "haltpool_tasks_stolen_total", l), Str(w.tasks_stolen));
    EXPECT_EQ(Value(e, "haltpool_tasks_handed_off_total", l),
              Str(w.tasks_handed_off));
    EXPECT_EQ(Value(e, "haltpool_idles_beside_waker_total", l),
              Str(w.idles_beside_waker));
    EXPECT_EQ(Value(e, "haltpool_exceptions_total", l), Str(w.exceptions));
    EXPECT_EQ(Value(e, "haltpool_io_callbacks_total", l), Str(w.io.callbacks));
    EXPECT_EQ(Value(e, "haltpool_io_cq_overflows_total", l),
              Str(w.io.reactor.cq_overflows));
    EXPECT_EQ(Value(e, "haltpool_io_cqes_dropped_total", l),
              Str(w.io.reactor.cqes_dropped));
    EXPECT_EQ(Value(e, "haltpool_io_retries_total", l),
              Str(w.io.reactor.retries));
    auto kind = [&](const char* k) {
      return std::map<std::string, std::string>{{"worker", id}, {"kind", k}};
    };
    EXPECT_EQ(Value(e, "haltpool_wakes_total", kind("polling")),
              Str(w.idle.wakes.polling));
    EXPECT_EQ(Value(e, "haltpool_wakes_total", kind("not_idle")),
              Str(w.idle.wakes.not_idle));
    EXPECT_EQ(Value(e, "haltpool_wakes_total", kind("syscall")),
              Str(w.idle.wakes.syscall));
    EXPECT_EQ(Value(e, "haltpool_io_wakes_total", kind("polled")),
              Str(w.io.polled));
    EXPECT_EQ(Value(e, "haltpool_io_wakes_total", kind("posted")),
              Str(w.io.posted));
    EXPECT_EQ(Value(e, "haltpool_io_wakes_total", kind("woke")),
              Str(w.io.woke));
  }
  // Nothing beyond those: one sample per worker (and state, kind).
  EXPECT_EQ(e.All("haltpool_idle_entries_total").size(),
            size_t{kWorkers * idle::kStateCount});
  EXPECT_EQ(e.All("haltpool_tasks_run_total").size(), size_t{kWorkers});
  EXPECT_EQ(e.All("haltpool_wakes_total").size(), size_t{kWorkers * 3});
  EXPECT_EQ(e.All("haltpool_worker_info").size(), size_t{kWorkers});
}

TEST(PoolMetricsTest, GaugesAndUnits) {
  const OpenMetricsExposition e = Parse(MakeStats());
  EXPECT_EQ(Value(e, "haltpool_poll_window_seconds", {{"worker", "0"}}),
            "0.000001500");
  EXPECT_EQ(Value(e, "haltpool_poll_window_seconds", {{"worker", "1"}}),
            "+Inf");
  EXPECT_EQ(Value(e, "haltpool_poll_window_seconds", {{"worker", "2"}}),
            "0.000004500");
  EXPECT_EQ(Value(e, "haltpool_backoff_level"), "3");
  EXPECT_EQ(Value(e, "haltpool_backoff_enabled"), "1");
  EXPECT_EQ(Value(e, "haltpool_backoff_poll_cap_seconds"), "0.000012500");
  EXPECT_EQ(Value(e, "haltpool_backoff_contended_total", {{"cause", "steal"}}),
            "5");
  EXPECT_EQ(
      Value(e, "haltpool_backoff_contended_total", {{"cause", "preempted"}}),
      "6");
  EXPECT_EQ(
      Value(e, "haltpool_backoff_contended_total", {{"cause", "runnable"}}),
      "7");
  EXPECT_EQ(Value(e, "haltpool_backoff_samples_total"), "57");
  EXPECT_EQ(Value(e, "haltpool_backoff_backed_off_total"), "4");
  EXPECT_EQ(Value(e, "haltpool_backoff_recovered_total"), "1");
  EXPECT_EQ(Value(e, "haltpool_timers_cancelled_total"), "21");
  EXPECT_EQ(Value(e, "haltpool_max_pollers"), "2");
  EXPECT_EQ(Value(e, "haltpool_outside_parks_total"), "31");
  EXPECT_EQ(Value(e, "haltpool_outside_wakes_total", {{"kind", "polling"}}),
            "32");
  EXPECT_EQ(Value(e, "haltpool_outside_wakes_total", {{"kind", "not_idle"}}),
            "33");
  EXPECT_EQ(Value(e, "haltpool_outside_wakes_total", {{"kind", "syscall"}}),
            "34");
  ASSERT_NE(e.Family("haltpool_idle_time_seconds"), nullptr);
  EXPECT_EQ(e.Family("haltpool_idle_time_seconds")->unit, "seconds");
  EXPECT_EQ(e.Family("haltpool_poll_window_seconds")->type, "gauge");
  EXPECT_EQ(e.Family("haltpool_worker")->type, "info");
  for (const openmetrics::OpenMetricsFamily& f : e.families) {
    EXPECT_EQ(f.name.rfind("haltpool_", 0), 0u) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
  }
}

TEST(PoolMetricsTest, InfoLabelsAreEscapedAndComeBackWhole) {
  PoolStats stats = MakeStats();
  stats.workers[0].idle.governor = "odd\\\"name";
  const OpenMetricsExposition e = Parse(stats);
  const openmetrics::OpenMetricsSample* w1 = e.Find(
      "haltpool_worker_info",
      {{"worker", "1"},
       {"cpu", "1"},
       {"numa_node", "0"},
       {"governor", "fixed"},
       {"wait", "pause"},
       {"io_backend", "io_uring"},
       {"io_setup", "coop"},
       {"io_note", "epoll: \"io_uring_setup\" said C:\\no\nsecond line"}});
  ASSERT_NE(w1, nullptr);
  const auto w0 = e.All("haltpool_worker_info");
  ASSERT_EQ(w0.size(), size_t{kWorkers});
  EXPECT_EQ(w0[0]->labels.at("governor"), "odd\\\"name");
  EXPECT_EQ(w0[0]->labels.at("io_backend"), "unused");
  EXPECT_EQ(w0[2]->labels.at("cpu"), "-1");
  EXPECT_THAT(
      FormatPoolStatsOpenMetrics(stats),
      ::testing::HasSubstr("io_note=\"epoll: \\\"io_uring_setup\\\" said "
                           "C:\\\\no\\nsecond line\""));
}

TEST(PoolMetricsTest, AnEmptyPoolIsStillAWholeExposition) {
  const std::string text = FormatPoolStatsOpenMetrics(PoolStats{});
  EXPECT_TRUE(ParseOpenMetrics(text).ok()) << text;
  EXPECT_THAT(text, ::testing::EndsWith("# EOF\n"));
}

TEST(PoolMetricsTest, EscapeOpenMetricsLabel) {
  EXPECT_EQ(EscapeOpenMetricsLabel("plain"), "plain");
  EXPECT_EQ(EscapeOpenMetricsLabel("a\\b\"c\nd\te"), "a\\\\b\\\"c\\nd\te");
}

}  // namespace
}  // namespace haltpool
