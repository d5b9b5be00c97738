// echo_server's byte echo over one TCP connection: receive, send back what
// came (looping on partial sends), receive again.

#ifndef HALTPOOL_EXAMPLES_ECHO_CONNECTION_H_
#define HALTPOOL_EXAMPLES_ECHO_CONNECTION_H_

#include "examples/connection_owner.h"
#include "runtime/pool_io.h"

namespace haltpool::examples {

// Serves the connected socket `fd` on `io`'s worker (the calling one) until
// end of stream or an error, then calls owner->CloseConnection(fd) and frees
// what it allocated (one record with a 16 KiB buffer). Returns at once;
// counts the bytes sent back in owner->totals().bytes_sent. `owner` must
// outlive the connection.
void ServeEchoConnection(PoolIo io, int fd, ConnectionOwner* owner);

}  // namespace haltpool::examples

#endif  // HALTPOOL_EXAMPLES_ECHO_CONNECTION_H_
