// What the pool's queues hold: a task and the group it counts toward.

#ifndef HALTPOOL_RUNTIME_JOB_H_
#define HALTPOOL_RUNTIME_JOB_H_

#include "runtime/task_fn.h"

namespace haltpool {

class TaskGroup;

// A queued task and the group it counts toward (or none). 48 bytes on
// x86-64 and arm64, 40 on s390x: TaskFn is absl::AnyInvocable (16 bytes of
// inline storage aligned as max_align_t, a manager and an invoker
// pointer), then the group. It is not trivially relocatable (the
// inline storage may hold any nothrow-movable callable), so the queues move
// it with its move constructor and never copy its bytes.
struct Job {
  TaskFn task;
  TaskGroup* group = nullptr;
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_JOB_H_
