// haltpool_info: what haltpool sees where it runs and what it will do
// here: the hypervisor and its hints, steal time, the kernel's own cpuidle,
// the CPU's wait mechanisms, the environment's profile, the calibration, and
// the configuration resolved from the environment with each value's source.
//
// Usage: haltpool_info [--json]
//   bazel run //tools:haltpool_info -- --json
// Exits 2 with the message on a bad HALTPOOL_* variable, as every haltpool
// program does.

#include <stdio.h>
#include <time.h>

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/cpu_features.h"
#include "arch/cpu_wait.h"
#include "arch/hypervisor.h"
#include "arch/system_files.h"
#include "arch/wait_mechanism.h"
#include "bench/command_line.h"
#include "idle/calibration.h"
#include "idle/idle_stats.h"
#include "idle/profile.h"
#include "runtime/config.h"
#include "runtime/environment.h"
#include "runtime/pool_stats.h"
#include "runtime/value_parse.h"

ABSL_FLAG(bool, json, false, "print the report as one JSON object");

namespace haltpool {
namespace {

// Steal over a short interval: long enough for a few USER_HZ ticks on each
// CPU, short enough to keep the command instant.
constexpr int64_t kStealSampleMs = 200;

struct Steal {
  bool known = false;
  double since_boot = 0;  // Share of all CPU time since boot.
  double now = 0;         // Share over the last kStealSampleMs.
  std::string error;
};

Steal SampleSteal() {
  Steal s;
  const arch::SystemFiles& files = arch::RealSystemFiles();
  absl::StatusOr<arch::CpuTimes> before = arch::ReadCpuTimes(files);
  if (!before.ok()) {
    s.error = std::string(before.status().message());
    return s;
  }
  const timespec pause{0, kStealSampleMs * 1000000};
  nanosleep(&pause, nullptr);
  absl::StatusOr<arch::CpuTimes> after = arch::ReadCpuTimes(files);
  if (!after.ok()) {
    s.error = std::string(after.status().message());
    return s;
  }
  s.known = true;
  s.since_boot = arch::StealFraction(arch::CpuTimes{}, *before);
  s.now = arch::StealFraction(*before, *after);
  return s;
}

struct Mechanism {
  std::string name;
  bool usable;
  std::string why_not;
};

std::vector<Mechanism> Mechanisms() {
  std::vector<Mechanism> out;
  for (arch::WaitMechanism m : arch::kAllWaitMechanisms) {
    const absl::Status s = arch::CheckWaitMechanism(m);
    out.push_back({std::string(arch::WaitMechanismName(m)), s.ok(),
                   std::string(s.message())});
  }
  return out;
}

void PrintText(const Config& c, const Steal& steal,
               const arch::KernelCpuidle& kernel,
               const idle::Calibration& cal) {
  const arch::HypervisorInfo& h = c.detected;
  const idle::Profile& p = idle::ProfileFor(c.environment);
  absl::PrintF("Hypervisor: %s\n", arch::DescribeHypervisor(h));
  if (h.kvm_features != 0) {
    absl::PrintF("  KVM features: %s\n",
                 absl::StrJoin(arch::KvmFeatureNames(h.kvm_features), " "));
  }
  absl::PrintF(
      "Steal time: %s\n",
      steal.known ? absl::StrFormat(
                        "%.2f%% since boot, %.2f%% over the last %d ms",
                        100 * steal.since_boot, 100 * steal.now, kStealSampleMs)
                  : steal.error);
  absl::PrintF(
      "Kernel cpuidle: driver %s, governor %s%s\n",
      kernel.driver.empty() ? "none" : kernel.driver,
      kernel.governor.empty() ? "none" : kernel.governor,
      kernel.guest_halt_poll_ns
          ? absl::StrCat(", guest_halt_poll_ns ", *kernel.guest_halt_poll_ns)
          : "");
  absl::PrintF("CPU: %s\n", arch::DescribeCpuFeatures(arch::HostCpuFeatures()));
  absl::PrintF("Wait mechanisms (best: %s):\n",
               arch::WaitMechanismName(arch::BestWaitMechanism()));
  for (const Mechanism& m : Mechanisms()) {
    absl::PrintF("  %-7s %s\n", m.name,
                 m.usable ? "usable" : absl::StrCat("no: ", m.why_not));
  }
  absl::PrintF(
      "Profile: %s%s\n", arch::HostEnvironmentName(c.environment),
      c.hypervisor_override ? " (from HALTPOOL_HYPERVISOR)" : " (detected)");
  absl::PrintF("  governor %s, poll cap %s, block exit latency %s, target %s\n",
               p.governor, FormatDurationNs(p.poll_ns),
               FormatDurationNs(p.block_exit_latency_ns),
               FormatDurationNs(p.block_target_residency_ns));
  absl::PrintF("  why: %s\n", p.reason);
  absl::PrintF("Calibration: %s\n", FormatCalibration(cal));
  absl::PrintF(
      "  block state in use: exit latency %s, target residency %s; first wake "
      "margin %s\n",
      FormatDurationNs(c.pool.idle.block_exit_latency_ns),
      FormatDurationNs(c.pool.idle.block_target_residency_ns),
      FormatDurationNs(c.pool.idle.wake_margin_ns));
  printf("Configuration:\n");
  for (const ResolvedVariable& v : c.variables) {
    absl::PrintF("  %s = '%s'  [%s]\n", v.name, v.value,
                 ValueSourceName(v.source));
  }
}

void PrintJson(const Config& c, const Steal& steal,
               const arch::KernelCpuidle& kernel,
               const idle::Calibration& cal) {
  using idle::JsonString;
  const arch::HypervisorInfo& h = c.detected;
  const idle::Profile& p = idle::ProfileFor(c.environment);
  std::string out = absl::StrCat(
      "{\"hypervisor\":{\"kind\":",
      JsonString(arch::HostEnvironmentName(h.kind)),
      ",\"vendor\":", JsonString(h.vendor),
      ",\"dedicated_hint\":", h.dedicated_hint ? "true" : "false",
      ",\"steal_time\":", h.steal_time ? "true" : "false",
      ",\"poll_control\":", h.poll_control ? "true" : "false",
      ",\"kvm_features\":", h.kvm_features, ",\"kvm_hints\":", h.kvm_hints,
      ",\"source\":", JsonString(h.source), "}");
  absl::StrAppend(&out, ",\"steal\":");
  if (steal.known) {
    absl::StrAppend(
        &out, absl::StrFormat("{\"since_boot\":%.6f,\"now\":%.6f,"
                              "\"sample_ms\":%d}",
                              steal.since_boot, steal.now, kStealSampleMs));
  } else {
    absl::StrAppend(&out, "{\"error\":", JsonString(steal.error), "}");
  }
  absl::StrAppend(
      &out, ",\"kernel_cpuidle\":{\"driver\":", JsonString(kernel.driver),
      ",\"governor\":", JsonString(kernel.governor), ",\"guest_halt_poll_ns\":",
      kernel.guest_halt_poll_ns ? absl::StrCat(*kernel.guest_halt_poll_ns)
                                : "null",
      "},\"wait_mechanisms\":[");
  const std::vector<Mechanism> mechanisms = Mechanisms();
  for (size_t i = 0; i < mechanisms.size(); ++i) {
    const Mechanism& m = mechanisms[i];
    absl::StrAppend(&out, i ? "," : "", "{\"name\":", JsonString(m.name),
                    ",\"usable\":", m.usable ? "true" : "false",
                    ",\"why_not\":", JsonString(m.why_not), "}");
  }
  absl::StrAppend(
      &out, "],\"profile\":{\"environment\":",
      JsonString(arch::HostEnvironmentName(c.environment)),
      ",\"overridden\":", c.hypervisor_override ? "true" : "false",
      ",\"governor\":", JsonString(p.governor), ",\"poll_ns\":", p.poll_ns,
      ",\"block_exit_latency_ns\":", p.block_exit_latency_ns,
      ",\"block_target_residency_ns\":", p.block_target_residency_ns,
      ",\"reason\":", JsonString(p.reason), "}");
  absl::StrAppend(
      &out, ",\"calibration\":{\"measured\":", cal.measured ? "true" : "false",
      ",\"block_wake_ns\":", cal.block_wake_ns,
      ",\"poll_wake_ns\":", cal.poll_wake_ns,
      ",\"timed_wait_late_ns\":", cal.timed_wait_late_ns,
      ",\"round_trips\":", cal.round_trips,
      ",\"cross_cpu\":", cal.cross_cpu ? "true" : "false",
      ",\"took_ns\":", cal.took_ns, ",\"note\":", JsonString(cal.note),
      "},\"configuration\":[");
  for (size_t i = 0; i < c.variables.size(); ++i) {
    const ResolvedVariable& v = c.variables[i];
    absl::StrAppend(&out, i ? "," : "", "{\"name\":", JsonString(v.name),
                    ",\"value\":", JsonString(v.value),
                    ",\"source\":", JsonString(ValueSourceName(v.source)), "}");
  }
  absl::StrAppend(&out, "]}\n");
  fputs(out.c_str(), stdout);
}

int Main(int argc, char** argv) {
  bench::ParseCommandLineOrExit(argc, argv, "usage: haltpool_info [--json]");
  const bool json = absl::GetFlag(FLAGS_json);
  Config config = ConfigFromEnvironmentOrExit();
  const Steal steal = SampleSteal();
  const arch::KernelCpuidle kernel =
      arch::ReadKernelCpuidle(arch::RealSystemFiles());
  // What a pool started now would run with: calibration fills the block
  // costs that neither code nor the environment set.
  idle::Calibration cal;
  if (WantsCalibration(config)) {
    cal = idle::ProcessCalibration();
    ApplyCalibration(cal, config);
  } else {
    cal.note = config.pool.calibrate
                   ? "not needed (the environment sets both block costs)"
                   : "off (HALTPOOL_CALIBRATE=0)";
  }
  if (json) {
    PrintJson(config, steal, kernel, cal);
  } else {
    PrintText(config, steal, kernel, cal);
  }
  return 0;
}

}  // namespace
}  // namespace haltpool

int main(int argc, char** argv) { return haltpool::Main(argc, argv); }
