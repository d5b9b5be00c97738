// echo_server's byte echo over one TCP connection, as a coroutine: receive,
// send back what came (looping on partial sends), receive again.

#ifndef HALTPOOL_EXAMPLES_ECHO_CONNECTION_H_
#define HALTPOOL_EXAMPLES_ECHO_CONNECTION_H_

#include "examples/connection_owner.h"
#include "runtime/coro/task.h"
#include "runtime/thread_pool.h"

namespace haltpool::examples {

// Serves the connected socket `fd` through `pool`'s I/O until end of stream
// or an error (-ECANCELED at shutdown included), then calls
// owner->CloseConnection(fd). Its frame holds a 16 KiB buffer. Counts the
// bytes sent back in owner->totals().bytes_sent. `owner` and `pool` must
// outlive the connection. Start it with ThreadPool::SpawnInline on the
// worker that accepted `fd`.
Task<void> EchoConnection(ThreadPool& pool, int fd, ConnectionOwner* owner);

}  // namespace haltpool::examples

#endif  // HALTPOOL_EXAMPLES_ECHO_CONNECTION_H_
