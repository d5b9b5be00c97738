// The calling thread's CPUs: the one it runs on now, which it may run on,
// and keeping it on some of them. The library's and the benchmarks' one
// caller of sched_getcpu, sched_getaffinity and pthread_setaffinity_np: the
// pool's worker placement and wakes, the calibration and the benchmarks go
// through it.

#ifndef HALTPOOL_ARCH_THREAD_AFFINITY_H_
#define HALTPOOL_ARCH_THREAD_AFFINITY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace haltpool::arch {

// The CPU the calling thread runs on now (sched_getcpu), or -1 if the
// kernel does not say. Tens of nanoseconds where glibc reads it from rseq
// (2.35 and later, as Debian 12's 2.36) or the vDSO has getcpu (x86-64);
// a system call otherwise. A snapshot: the thread may move right after.
// Any thread; fit for hot paths.
int CurrentCpu() noexcept;

// The calling thread's affinity mask (sched_getaffinity), as ascending CPU
// numbers. Works with any number of CPUs: the mask grows until the kernel
// accepts it. Empty only if the kernel refuses, which Linux does not for
// the calling thread. A system call; not for hot paths.
std::vector<int> ThreadCpus();

// The kernel's cpulist spelling of a set of CPUs (as in
// /sys/devices/system/cpu/online): ascending, ranges joined, "0-3,8,10-11".
// Duplicates and order in `cpus` do not matter; empty gives "".
std::string FormatCpuList(std::vector<int> cpus);

// The highest CPU number SetThreadCpus accepts (as ThreadCpus reads at
// most): Linux's NR_CPUS is at most 8192, so this leaves room to spare.
inline constexpr int kMaxCpuNumber = (1 << 22) - 1;

// Lets the calling thread run only on `cpus` (pthread_setaffinity_np), in
// any order. Fails, changing nothing, with InvalidArgument for an empty
// list or a CPU outside 0..kMaxCpuNumber, with ResourceExhausted if the
// mask cannot be allocated, and with the errno's status when the kernel
// refuses (e.g. no CPU of the list is in the cgroup's cpuset). As
// sched_setaffinity, the kernel keeps only the listed CPUs it has and
// allows, so OK means at least one of them. Any thread, for itself; a
// system call and an allocation, not for hot paths.
absl::Status SetThreadCpus(absl::Span<const int> cpus);

// Keeps the calling thread on one CPU for the object's lifetime, then gives
// it back the mask it had (a failure to give it back is ignored: the
// kernel refuses only a mask it had accepted before if the cgroup changed
// meanwhile). A negative `cpu` leaves the thread alone, so a caller can
// hold one whether or not it was asked to pin; if the mask to give back
// cannot be read, it does not pin. Construct and destroy it on the same
// thread. Two or three system calls; not for hot paths.
class ScopedThreadCpu {
 public:
  explicit ScopedThreadCpu(int cpu);
  ~ScopedThreadCpu();
  ScopedThreadCpu(const ScopedThreadCpu&) = delete;
  ScopedThreadCpu& operator=(const ScopedThreadCpu&) = delete;

  // OK if the thread's affinity was set to the CPU asked for, or none was
  // asked for; else why not (the thread then runs where it did).
  const absl::Status& status() const { return status_; }

 private:
  std::vector<int> saved_;  // The mask to give back; empty: nothing to undo.
  absl::Status status_;
};

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_THREAD_AFFINITY_H_
