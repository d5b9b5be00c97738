#include "runtime/tunables.h"

#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "arch/cpu_wait.h"
#include "arch/thread_affinity.h"
#include "idle/governor_registry.h"
#include "runtime/value_parse.h"

namespace haltpool {
namespace {

// More workers or pollers than this is a typo, not a machine.
constexpr int64_t kMaxWorkers = 4096;

// The kernel's IORING_MAX_ENTRIES.
constexpr int64_t kMaxRingEntries = 32768;

absl::Status Reject(absl::string_view problem, absl::string_view accepted) {
  return absl::InvalidArgumentError(
      absl::StrCat(problem, "; accepted: ", accepted));
}

// A codec turns a variable's text into a value and back, and checks a value
// set in code. Each has: Value, Parse, Check, Format, Accepted.

struct DurationCodec {
  using Value = int64_t;
  int64_t max_ns;
  absl::StatusOr<Value> Parse(absl::string_view t) const {
    return ParseDurationNs(t, 0, max_ns);
  }
  absl::Status Check(Value v) const {
    return v >= 0 && v <= max_ns ? absl::OkStatus()
                                 : Reject("out of range", Accepted());
  }
  std::string Format(Value v) const { return FormatDurationNs(v); }
  std::string Accepted() const {
    return absl::StrCat("0 to ", FormatDurationNs(max_ns));
  }
};

struct IntegerCodec {
  using Value = int64_t;
  int64_t min, max;
  absl::StatusOr<Value> Parse(absl::string_view t) const {
    return ParseInteger(t, min, max);
  }
  absl::Status Check(Value v) const {
    return v >= min && v <= max ? absl::OkStatus()
                                : Reject("out of range", Accepted());
  }
  std::string Format(Value v) const { return absl::StrCat(v); }
  std::string Accepted() const { return absl::StrCat(min, " to ", max); }
};

struct BoolCodec {
  using Value = bool;
  absl::StatusOr<Value> Parse(absl::string_view t) const {
    return ParseBool(t);
  }
  absl::Status Check(Value) const { return absl::OkStatus(); }
  std::string Format(Value v) const { return v ? "1" : "0"; }
  std::string Accepted() const { return "1, 0, true, false, yes, no, y, n"; }
};

// An enum by its NamedEnum table; with `auto_means_unset`, the value is an
// optional and "auto" spells nullopt.
template <typename Table, bool auto_means_unset>
struct EnumCodec {
  using Enum = std::decay_t<decltype(std::declval<Table>().entries()[0].value)>;
  using Value = std::conditional_t<auto_means_unset, std::optional<Enum>, Enum>;
  const Table* table;
  absl::string_view what;  // "wait mechanism", for "unknown wait mechanism".
  absl::StatusOr<Value> Parse(absl::string_view t) const {
    if constexpr (auto_means_unset) {
      if (t == "auto") return Value(std::nullopt);
    }
    if (std::optional<Enum> e = table->Parse(t)) return Value(*e);
    return Reject(
        t.empty() ? std::string("empty") : absl::StrCat("unknown ", what),
        Accepted());
  }
  absl::Status Check(const Value& v) const {
    if constexpr (auto_means_unset) {
      if (!v) return absl::OkStatus();
      return table->Parse(table->Name(*v)) ? absl::OkStatus()
                                           : Reject("not a value", Accepted());
    } else {
      return table->Parse(table->Name(v)) ? absl::OkStatus()
                                          : Reject("not a value", Accepted());
    }
  }
  std::string Format(const Value& v) const {
    if constexpr (auto_means_unset) {
      return v ? std::string(table->Name(*v)) : std::string("auto");
    } else {
      return std::string(table->Name(v));
    }
  }
  std::string Accepted() const {
    return absl::StrCat(auto_means_unset ? "auto|" : "", table->Names());
  }
};

// A CPU list, or "all" (the empty list): every CPU the affinity mask has.
struct CpuListCodec {
  using Value = std::vector<int>;
  // Far beyond any machine Linux runs on (its NR_CPUS tops out at 8192).
  static constexpr int kMaxCpu = 8191;
  absl::StatusOr<Value> Parse(absl::string_view t) const {
    if (t == "all") return Value{};
    absl::StatusOr<Value> cpus = ParseCpuList(t, kMaxCpu);
    if (cpus.ok()) return cpus;
    // The parser's problem, with this variable's accepted values ("all" too).
    const std::pair<absl::string_view, absl::string_view> problem =
        absl::StrSplit(cpus.status().message(), absl::MaxSplits("; ", 1));
    return Reject(problem.first, Accepted());
  }
  absl::Status Check(const Value& v) const {
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] < 0 || v[i] > kMaxCpu || (i > 0 && v[i] <= v[i - 1])) {
        return Reject("not an ascending list of CPUs", Accepted());
      }
    }
    return absl::OkStatus();
  }
  std::string Format(const Value& v) const {
    return v.empty() ? std::string("all") : arch::FormatCpuList(v);
  }
  std::string Accepted() const {
    return absl::StrCat("all, or CPUs from 0 to ", kMaxCpu,
                        " and ranges, such as 1 or 0-3,6");
  }
};

struct GovernorCodec {
  using Value = std::string;
  absl::StatusOr<Value> Parse(absl::string_view t) const {
    if (idle::IsGovernorName(t)) return std::string(t);
    return Reject(t.empty() ? "empty" : "unknown governor", Accepted());
  }
  absl::Status Check(const Value& v) const {
    return idle::IsGovernorName(v) ? absl::OkStatus()
                                   : Reject("unknown governor", Accepted());
  }
  std::string Format(const Value& v) const { return v; }
  std::string Accepted() const { return std::string(idle::GovernorNames()); }
};

// Builds a row from a codec and accessors:
//   code(const PoolOptions&) -> the field's std::optional (or nullptr: the
//     environment only sets this one);
//   resolved(Config&) -> a reference to the resolved value;
//   profile(const idle::Profile&) -> the profile's value (or nullptr).
template <typename Codec, typename Code, typename Resolved,
          typename Profile = std::nullptr_t>
Tunable Row(absl::string_view variable, absl::string_view field,
            absl::string_view help, Codec codec, Code code, Resolved resolved,
            Profile profile = nullptr) {
  using Value = typename Codec::Value;
  auto assign = [resolved](Config& c, const Value& v) {
    auto& slot = resolved(c);
    slot = static_cast<std::remove_reference_t<decltype(slot)>>(v);
  };
  auto format = [codec, resolved](const Config& c) {
    return codec.Format(static_cast<Value>(resolved(c)));
  };
  Tunable t;
  t.variable = variable;
  t.field = field;
  t.help = help;
  t.accepted = codec.Accepted();
  t.default_value = format(Config{});
  t.parse = [codec, assign](absl::string_view text, Config& c) {
    absl::StatusOr<Value> v = codec.Parse(text);
    if (!v.ok()) return v.status();
    assign(c, *v);
    return absl::OkStatus();
  };
  t.from_code = [codec, code, assign, format](
                    const PoolOptions& o, Config& c) -> absl::StatusOr<bool> {
    if constexpr (std::is_same_v<Code, std::nullptr_t>) {
      return false;
    } else {
      const auto& field_value = code(o);
      if (!field_value.has_value()) return false;
      const Value v = static_cast<Value>(*field_value);
      if (absl::Status s = codec.Check(v); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(codec.Format(v), ": ", s.message()));
      }
      assign(c, v);
      return true;
    }
  };
  if constexpr (!std::is_same_v<Profile, std::nullptr_t>) {
    t.from_profile = true;
    t.from_profile_value = [profile, assign](const idle::Profile& p,
                                             Config& c) {
      assign(c, static_cast<Value>(profile(p)));
    };
  }
  t.check = [codec, resolved](const Config& c) {
    return codec.Check(static_cast<Value>(resolved(c)));
  };
  t.format = format;
  return t;
}

constexpr DurationCodec kWindow{idle::kMaxWindowNs};

std::vector<Tunable> MakeTunables() {
  std::vector<Tunable> rows;
  rows.push_back(Row(
      "HALTPOOL_HYPERVISOR", "",
      "the environment whose profile gives the idle defaults: auto "
      "(detected) or one named",
      EnumCodec<decltype(arch::kHostEnvironments), true>{
          &arch::kHostEnvironments, "environment"},
      nullptr, [](auto& c) -> auto& { return c.hypervisor_override; }));
  rows.push_back(Row(
      "HALTPOOL_CALIBRATE", "calibrate",
      "1 measures the block state's wake cost and how late a timed block "
      "ends when the first pool starts (about 25 ms) and uses them for the "
      "block costs and the wake margin neither code nor environment set; 0 "
      "keeps the profile's",
      BoolCodec{}, [](const PoolOptions& o) { return o.calibrate; },
      [](auto& c) -> auto& { return c.pool.calibrate; }));
  rows.push_back(Row(
      "HALTPOOL_BACKOFF", "backoff",
      "1 backs off polling while polling takes CPUs from other work (steal "
      "time over 10 %, other processes' runnable threads filling every CPU "
      "while threads wait, a poller kept from its CPU, a worker woken twice "
      "in a row from its own CPU); 0 polls regardless",
      BoolCodec{}, [](const PoolOptions& o) { return o.backoff; },
      [](auto& c) -> auto& { return c.pool.backoff; }));
  rows.push_back(Row(
      "HALTPOOL_GOVERNOR", "idle.governor",
      "the idle governor: haltpoll (the kernel's adaptive window), "
      "predictive (the next timer and regular wakes), poll (never blocks), "
      "block (never polls), fixed (HALTPOOL_FIXED_POLL_NS)",
      GovernorCodec{}, [](const PoolOptions& o) { return o.idle.governor; },
      [](auto& c) -> auto& { return c.pool.idle.governor; },
      [](const idle::Profile& p) { return std::string(p.governor); }));
  rows.push_back(Row(
      "HALTPOOL_POLL_NS", "idle.haltpoll.poll_ns",
      "haltpoll: the poll window's cap, as guest_halt_poll_ns; predictive: "
      "the cap of the polls it plans around expected wakes",
      kWindow, [](const PoolOptions& o) { return o.idle.haltpoll.poll_ns; },
      [](auto& c) -> auto& { return c.pool.idle.haltpoll.poll_ns; },
      [](const idle::Profile& p) { return p.poll_ns; }));
  rows.push_back(Row(
      "HALTPOOL_POLL_GROW", "idle.haltpoll.grow",
      "haltpoll: the factor the window grows by, as guest_halt_poll_grow",
      IntegerCodec{idle::kMinGrow, idle::kMaxFactor},
      [](const PoolOptions& o) { return o.idle.haltpoll.grow; },
      [](auto& c) -> auto& { return c.pool.idle.haltpoll.grow; }));
  rows.push_back(Row(
      "HALTPOOL_POLL_GROW_START", "idle.haltpoll.grow_start",
      "haltpoll: the first non-zero window, as guest_halt_poll_grow_start",
      kWindow, [](const PoolOptions& o) { return o.idle.haltpoll.grow_start; },
      [](auto& c) -> auto& { return c.pool.idle.haltpoll.grow_start; }));
  rows.push_back(Row(
      "HALTPOOL_POLL_SHRINK", "idle.haltpoll.shrink",
      "haltpoll: the divisor the window shrinks by (0 resets it), as "
      "guest_halt_poll_shrink",
      IntegerCodec{0, idle::kMaxFactor},
      [](const PoolOptions& o) { return o.idle.haltpoll.shrink; },
      [](auto& c) -> auto& { return c.pool.idle.haltpoll.shrink; }));
  rows.push_back(Row(
      "HALTPOOL_POLL_ALLOW_SHRINK", "idle.haltpoll.allow_shrink",
      "haltpoll: whether blocks longer than the cap shrink the window, as "
      "guest_halt_poll_allow_shrink",
      BoolCodec{},
      [](const PoolOptions& o) { return o.idle.haltpoll.allow_shrink; },
      [](auto& c) -> auto& { return c.pool.idle.haltpoll.allow_shrink; }));
  rows.push_back(Row(
      "HALTPOOL_FIXED_POLL_NS", "idle.fixed_poll_ns",
      "fixed: the constant poll window", kWindow,
      [](const PoolOptions& o) { return o.idle.fixed_poll_ns; },
      [](auto& c) -> auto& { return c.pool.idle.fixed_poll_ns; }));
  rows.push_back(Row(
      "HALTPOOL_BLOCK_EXIT_LATENCY_NS", "idle.block_exit_latency_ns",
      "the block state's exit latency in the state table: what a wake from "
      "FUTEX_WAIT costs",
      kWindow,
      [](const PoolOptions& o) { return o.idle.block_exit_latency_ns; },
      [](auto& c) -> auto& { return c.pool.idle.block_exit_latency_ns; },
      [](const idle::Profile& p) { return p.block_exit_latency_ns; }));
  rows.push_back(Row(
      "HALTPOOL_BLOCK_TARGET_RESIDENCY_NS", "idle.block_target_residency_ns",
      "the block state's target residency: the shortest idle period worth "
      "blocking for",
      kWindow,
      [](const PoolOptions& o) { return o.idle.block_target_residency_ns; },
      [](auto& c) -> auto& { return c.pool.idle.block_target_residency_ns; },
      [](const idle::Profile& p) { return p.block_target_residency_ns; }));
  rows.push_back(Row(
      "HALTPOOL_WAKE_MARGIN_NS", "idle.wake_margin_ns",
      "predictive: how long before an expected wake a block ends, until the "
      "governor has learned how late this host's timed blocks end",
      kWindow, [](const PoolOptions& o) { return o.idle.wake_margin_ns; },
      [](auto& c) -> auto& { return c.pool.idle.wake_margin_ns; },
      [](const idle::Profile& p) { return p.block_exit_latency_ns; }));
  rows.push_back(Row(
      "HALTPOOL_DENSE_POLL_NS", "idle.dense_poll_ns",
      "predictive: the poll through each idle period while idle periods "
      "average a sixth of it or less (dense wakes), beyond HALTPOOL_POLL_NS; "
      "0: never",
      kWindow, [](const PoolOptions& o) { return o.idle.dense_poll_ns; },
      [](auto& c) -> auto& { return c.pool.idle.dense_poll_ns; }));
  rows.push_back(Row(
      "HALTPOOL_WAIT", "idle.wait",
      "the poll state's wait instruction: auto picks the best the CPU has; "
      "one it lacks is an error at start-up",
      EnumCodec<decltype(arch::kWaitMechanisms), true>{&arch::kWaitMechanisms,
                                                       "wait mechanism"},
      [](const PoolOptions& o) { return o.idle.wait; },
      [](auto& c) -> auto& { return c.pool.idle.wait; }));
  rows.push_back(Row(
      "HALTPOOL_WORKERS", "workers",
      "workers in a pool; 0: one per CPU the process may use (its affinity "
      "mask, capped by a cgroup cpu.max quota)",
      IntegerCodec{0, kMaxWorkers},
      [](const PoolOptions& o) { return o.workers; },
      [](auto& c) -> auto& { return c.pool.workers; }));
  rows.push_back(Row(
      "HALTPOOL_MAX_POLLERS", "max_pollers",
      "idle workers that may poll at once; 0: half the workers, at least one",
      IntegerCodec{0, kMaxWorkers},
      [](const PoolOptions& o) { return o.max_pollers; },
      [](auto& c) -> auto& { return c.pool.max_pollers; }));
  rows.push_back(Row(
      "HALTPOOL_PIN", "pin",
      "worker pinning: none, core (a physical core each, every core before "
      "any SMT sibling), pu (a hardware thread each)",
      EnumCodec<decltype(kPinModes), false>{&kPinModes, "pin mode"},
      [](const PoolOptions& o) { return o.pin; },
      [](auto& c) -> auto& { return c.pool.pin; }));
  rows.push_back(Row(
      "HALTPOOL_CPUS", "cpus",
      "the CPUs the workers run on: all (the creating thread's affinity "
      "mask) or a list within it, to keep them off CPUs that belong to "
      "other work",
      CpuListCodec{}, [](const PoolOptions& o) { return o.cpus; },
      [](auto& c) -> auto& { return c.pool.cpus; }));
  rows.push_back(Row(
      "HALTPOOL_IO", "io",
      "the I/O backend: auto (io_uring, else epoll where io_uring is missing "
      "or refused), uring, epoll",
      EnumCodec<decltype(kIoBackends), false>{&kIoBackends, "I/O backend"},
      [](const PoolOptions& o) { return o.io; },
      [](auto& c) -> auto& { return c.pool.io; }));
  rows.push_back(Row(
      "HALTPOOL_IO_ENTRIES", "io_entries",
      "submission queue entries of each worker's io_uring ring, rounded up "
      "to a power of two; the completion queue gets twice as many, and one "
      "that overflows costs a system call, never a completion",
      IntegerCodec{1, kMaxRingEntries},
      [](const PoolOptions& o) { return o.io_entries; },
      [](auto& c) -> auto& { return c.pool.io_entries; }));
  rows.push_back(Row(
      "HALTPOOL_IO_TASKRUN", "io_task_run",
      "how the kernel hands io_uring completions to a worker: interrupt (at "
      "once, an IPI even while it polls), coop (a flag in the ring that a "
      "polling worker sees; COOP_TASKRUN), defer (coop, and completions wait "
      "until the worker asks; DEFER_TASKRUN); a kernel that refuses one "
      "gets the next milder, and the statistics say so",
      EnumCodec<decltype(kIoTaskRuns), false>{&kIoTaskRuns, "task-run mode"},
      [](const PoolOptions& o) { return o.io_task_run; },
      [](auto& c) -> auto& { return c.pool.io_task_run; }));
  rows.push_back(Row(
      "HALTPOOL_STATS", "print_stats",
      "1 prints every worker's statistics to stderr when a pool shuts down",
      BoolCodec{}, [](const PoolOptions& o) { return o.print_stats; },
      [](auto& c) -> auto& { return c.pool.print_stats; }));
  rows.push_back(Row(
      "HALTPOOL_DISPLAY_ENV", "",
      "1 prints the resolved configuration and each value's source to "
      "stderr at start-up, as OMP_DISPLAY_ENV",
      BoolCodec{}, nullptr, [](auto& c) -> auto& { return c.display_env; }));
  return rows;
}

// A Markdown table cell: pipes escaped.
std::string Cell(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"|", "\\|"}});
}

}  // namespace

const std::vector<Tunable>& Tunables() {
  static const auto* kTunables = new std::vector<Tunable>(MakeTunables());
  return *kTunables;
}

const Tunable* FindTunable(absl::string_view variable) {
  for (const Tunable& t : Tunables()) {
    if (t.variable == variable) return &t;
  }
  return nullptr;
}

std::string VariablesMarkdownTable() {
  std::string out =
      "| variable | code option | default | accepted | meaning |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const Tunable& t : Tunables()) {
    absl::StrAppend(
        &out, "| `", t.variable, "` | ",
        t.field.empty() ? std::string("none") : absl::StrCat("`", t.field, "`"),
        " | ",
        t.from_profile ? std::string("the profile's")
                       : absl::StrCat("`", Cell(t.default_value), "`"),
        " | ", Cell(t.accepted), " | ", Cell(t.help), " |\n");
  }
  return out;
}

}  // namespace haltpool
