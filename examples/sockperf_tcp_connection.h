// echo_server --protocol=sockperf over one TCP connection, as a coroutine:
// the receive / frame / reply loop around a StreamFramer
// (sockperf_protocol.h).

#ifndef HALTPOOL_EXAMPLES_SOCKPERF_TCP_CONNECTION_H_
#define HALTPOOL_EXAMPLES_SOCKPERF_TCP_CONNECTION_H_

#include "examples/connection_owner.h"
#include "runtime/coro/task.h"
#include "runtime/thread_pool.h"

namespace haltpool::sockperf {

// Serves the connected socket `fd` through `pool`'s I/O: receives, frames
// whole messages (any split, several per receive), sends back in one buffer
// the replies they ask for, receives again. Ends on end of stream, an error
// (-ECANCELED at shutdown included) or a malformed header (counted in
// totals().sockperf_malformed; replies framed before it in the same receive
// are not sent), then calls owner->CloseConnection(fd). Its frame holds a
// StreamFramer (a 128 KiB buffer) and the reply buffer. `owner` and `pool`
// must outlive the connection. Start it with ThreadPool::SpawnInline on the
// worker that accepted `fd`.
Task<void> SockperfConnection(ThreadPool& pool, int fd,
                              examples::ConnectionOwner* owner);

}  // namespace haltpool::sockperf

#endif  // HALTPOOL_EXAMPLES_SOCKPERF_TCP_CONNECTION_H_
