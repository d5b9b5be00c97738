#include "arch/thread_affinity.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace haltpool::arch {

std::string FormatCpuList(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    absl::StrAppend(&out, cpus[i]);
    if (j > i) absl::StrAppend(&out, "-", cpus[j]);
    i = j + 1;
  }
  return out;
}

int CurrentCpu() noexcept { return sched_getcpu(); }

std::vector<int> ThreadCpus() {
  std::vector<int> cpus;
  // Start at glibc's fixed cpu_set_t size (1024 CPUs) and double while the
  // kernel says the mask is too small for its nr_cpu_ids (EINVAL).
  for (int ncpus = CPU_SETSIZE; ncpus <= kMaxCpuNumber + 1; ncpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(ncpus);
    if (set == nullptr) return cpus;
    const size_t size = CPU_ALLOC_SIZE(ncpus);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) == 0) {
      for (int cpu = 0; cpu < ncpus; ++cpu) {
        if (CPU_ISSET_S(cpu, size, set)) cpus.push_back(cpu);
      }
      CPU_FREE(set);
      return cpus;
    }
    const int err = errno;
    CPU_FREE(set);
    if (err != EINVAL) return cpus;
  }
  return cpus;
}

absl::Status SetThreadCpus(absl::Span<const int> cpus) {
  // The list is spelled only for an error.
  auto list = [cpus] { return FormatCpuList({cpus.begin(), cpus.end()}); };
  if (cpus.empty()) {
    return absl::InvalidArgumentError(
        "pinning a thread to no CPU: accepted: one CPU number or more");
  }
  const int max_cpu = *std::max_element(cpus.begin(), cpus.end());
  if (*std::min_element(cpus.begin(), cpus.end()) < 0 ||
      max_cpu > kMaxCpuNumber) {
    return absl::InvalidArgumentError(
        absl::StrCat("pinning a thread to CPUs ", list(),
                     ": accepted: CPU numbers from 0 to ", kMaxCpuNumber));
  }
  cpu_set_t* set = CPU_ALLOC(max_cpu + 1);
  if (set == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("allocating a CPU set for CPUs ", list()));
  }
  const size_t size = CPU_ALLOC_SIZE(max_cpu + 1);
  CPU_ZERO_S(size, set);
  for (int cpu : cpus) CPU_SET_S(cpu, size, set);
  // pthread_setaffinity_np returns the error number instead of setting errno.
  const int err = pthread_setaffinity_np(pthread_self(), size, set);
  CPU_FREE(set);
  if (err != 0) {
    return absl::ErrnoToStatus(
        err, absl::StrCat("pinning a thread to CPUs ", list()));
  }
  return absl::OkStatus();
}

ScopedThreadCpu::ScopedThreadCpu(int cpu) {
  if (cpu < 0) return;
  std::vector<int> saved = ThreadCpus();
  if (saved.empty()) {
    status_ = absl::FailedPreconditionError(absl::StrCat(
        "pinning a thread to CPU ", cpu,
        ": its affinity mask cannot be read, so it could not be given back"));
    return;
  }
  status_ = SetThreadCpus({cpu});
  if (status_.ok()) saved_ = std::move(saved);
}

ScopedThreadCpu::~ScopedThreadCpu() {
  if (!saved_.empty()) (void)SetThreadCpus(saved_);
}

}  // namespace haltpool::arch
