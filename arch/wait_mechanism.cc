#include "arch/wait_mechanism.h"

namespace haltpool::arch {

absl::string_view WaitMechanismName(WaitMechanism m) {
  return kWaitMechanisms.Name(m);
}

}  // namespace haltpool::arch
