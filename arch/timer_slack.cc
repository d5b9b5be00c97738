#include "arch/timer_slack.h"

#include <errno.h>
#include <sys/prctl.h>

#include "absl/strings/str_cat.h"

namespace haltpool::arch {

absl::Status SetThreadTimerSlackNs(int64_t ns) {
  if (ns < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("timer slack ", ns, " ns; accepted: 1 ns or more"));
  }
  if (prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(ns), 0, 0, 0) != 0) {
    return absl::ErrnoToStatus(errno, "prctl(PR_SET_TIMERSLACK)");
  }
  return absl::OkStatus();
}

int64_t ThreadTimerSlackNs() { return prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0); }

}  // namespace haltpool::arch
