// What the pool's queues hold: a task and the group it counts toward.

#ifndef HALTPOOL_RUNTIME_JOB_H_
#define HALTPOOL_RUNTIME_JOB_H_

#include "runtime/task_fn.h"

namespace haltpool {

class TaskGroup;

// A queued task and the group it counts toward (or none). 40 bytes on
// 64-bit targets: TaskFn is absl::AnyInvocable (16 bytes of inline storage,
// a manager and an invoker pointer). It is not trivially relocatable (the
// inline storage may hold any nothrow-movable callable), so the queues move
// it with its move constructor and never copy its bytes.
struct Job {
  TaskFn task;
  TaskGroup* group = nullptr;
};

}  // namespace haltpool

#endif  // HALTPOOL_RUNTIME_JOB_H_
