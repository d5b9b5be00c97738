#include "arch/contention_signals.h"

#include <sys/resource.h>

namespace haltpool::arch {

int64_t ThreadInvoluntarySwitches() noexcept {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  return usage.ru_nivcsw;
}

}  // namespace haltpool::arch
