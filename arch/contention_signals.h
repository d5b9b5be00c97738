// Cheap readings of whether the CPUs are contended, for the pool's poll
// back-off: runnable threads on the machine (/proc/stat's procs_running),
// steal time (/proc/stat's cpu line, read as arch/hypervisor.h's
// ParseProcStat reads it) and the calling thread's involuntary context
// switches (getrusage).
//
// The back-off samples from a worker about to idle, a path that allocates
// nothing (tests/pool/pool_memory_test.cc), so /proc/stat has a reader
// here that takes both signals from one read into a fixed buffer:
// ReadProcStatSignalsNoAlloc. The parsers it is built on take content, so
// tests feed them captured files.

#ifndef HALTPOOL_ARCH_CONTENTION_SIGNALS_H_
#define HALTPOOL_ARCH_CONTENTION_SIGNALS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arch/system_files.h"

namespace haltpool::arch {

// The "procs_running N" line of a /proc/stat: threads runnable right now on
// the whole machine, the reader included. InvalidArgument naming /proc/stat
// if the line is missing or not a number.
absl::StatusOr<int64_t> ParseProcsRunning(absl::string_view proc_stat);

// What one read of /proc/stat says about contention.
struct ProcStatSignals {
  // From the aggregate "cpu " line, in USER_HZ ticks since boot: steal, and
  // the sum of user, nice, system, idle, iowait, irq, softirq and steal
  // (guest time is already in user and nice), as CpuTimes::Total.
  uint64_t steal_ticks = 0;
  uint64_t total_ticks = 0;
  int64_t procs_running = 0;  // Runnable threads, the reader included.
};

// The share of CPU time stolen between two readings: steal ticks over all
// ticks, in [0, 1]; 0 if no tick passed or the counters went backwards.
// The rule of arch/hypervisor.h's StealFraction.
double StealFraction(const ProcStatSignals& before,
                     const ProcStatSignals& after) noexcept;

// Both signals from /proc/stat content, scanned as below. InvalidArgument
// naming /proc/stat and what is missing or malformed.
absl::StatusOr<ProcStatSignals> ParseProcStatSignals(
    absl::string_view proc_stat);

// ParseProcStatSignals of /proc/stat read through `files` (tests inject
// content). Allocates; the idle path uses ReadProcStatSignalsNoAlloc.
absl::StatusOr<ProcStatSignals> ReadProcStatSignals(const SystemFiles& files);

// Takes /proc/stat in pieces of any size and keeps the two lines the
// back-off needs; every other line is skipped however long it is (intr has
// one number per interrupt: kilobytes on large machines). Reads the cpu
// line as arch/hypervisor.h's ParseProcStat does. Allocates nothing; one
// thread.
class ProcStatScanner {
 public:
  // The next bytes of the file.
  void Feed(absl::string_view chunk) noexcept;

  // After the last chunk: true and `out` set if the cpu line had at least
  // the eight values up to steal and procs_running a count; false (and
  // `out` untouched) otherwise, with problem() saying why.
  bool Finish(ProcStatSignals& out) noexcept;

  // Why Finish returned false ("no procs_running line", ...); empty if it
  // did not. A string literal.
  absl::string_view problem() const noexcept { return problem_; }

 private:
  // Longest line kept: "cpu " and ten 20-digit values with their spaces
  // take 214 characters; procs_running far fewer.
  static constexpr size_t kMaxLine = 256;

  void EndLine() noexcept;

  char line_[kMaxLine];
  size_t length_ = 0;
  bool too_long_ = false;  // The current line outgrew line_: not ours.
  bool have_cpu_ = false;
  bool have_running_ = false;
  absl::string_view problem_;  // The first line found malformed, if any.
  ProcStatSignals signals_;
};

// /proc/stat read into a 4 KiB buffer on the stack and scanned: an open,
// a few reads (about one per 4 KiB) and a close, no allocation: 12-14 us
// for the 1.2 KB file of this project's 2-vCPU KVM guest (20000 reads in a
// loop). false if the file cannot be read or lacks either line (a sandbox
// without /proc). Any thread.
bool ReadProcStatSignalsNoAlloc(ProcStatSignals& out) noexcept;

// Times the calling thread was switched out while it could still run
// (getrusage(RUSAGE_THREAD).ru_nivcsw): another thread took its CPU, or the
// kernel preempted it for one. One system call, 0.33 us on the same guest;
// 0 if it fails.
int64_t ThreadInvoluntarySwitches() noexcept;

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_CONTENTION_SIGNALS_H_
