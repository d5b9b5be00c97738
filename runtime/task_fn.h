// A unit of work: any move-only callable taking nothing and returning
// nothing. Captures of up to two pointers are stored inline, so submitting
// such a task allocates nothing.

#ifndef HALTPOOL_RUNTIME_TASK_FN_H_
#define HALTPOOL_RUNTIME_TASK_FN_H_

#include "absl/functional/any_invocable.h"

namespace haltpool {

using TaskFn = absl::AnyInvocable<void()>;

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_TASK_FN_H_
