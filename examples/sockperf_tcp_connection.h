// echo_server --protocol=sockperf over one TCP connection: the receive /
// frame / reply loop around a StreamFramer (sockperf_protocol.h).

#ifndef HALTPOOL_EXAMPLES_SOCKPERF_TCP_CONNECTION_H_
#define HALTPOOL_EXAMPLES_SOCKPERF_TCP_CONNECTION_H_

#include "examples/connection_owner.h"
#include "runtime/pool_io.h"

namespace haltpool::sockperf {

// Serves the connected socket `fd` on `io`'s worker (the calling one):
// receives, frames whole messages (any split, several per receive), sends
// back in one buffer the replies they ask for, receives again. Ends on end
// of stream, an error or a malformed header (counted in
// totals().sockperf_malformed; replies framed before it in the same receive
// are not sent), then calls owner->CloseConnection(fd) and frees its record
// (a StreamFramer's 128 KiB buffer and the reply buffer). Returns at once.
// `owner` must outlive the connection.
void ServeSockperfConnection(PoolIo io, int fd,
                             examples::ConnectionOwner* owner);

}  // namespace haltpool::sockperf

#endif  // HALTPOOL_EXAMPLES_SOCKPERF_TCP_CONNECTION_H_
