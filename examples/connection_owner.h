// What echo_server's TCP connections (echo_connection.h,
// sockperf_tcp_connection.h) need from the server that accepted them: a way
// to close their socket when they end, and the totals they add to.

#ifndef HALTPOOL_EXAMPLES_CONNECTION_OWNER_H_
#define HALTPOOL_EXAMPLES_CONNECTION_OWNER_H_

#include <atomic>
#include <cstdint>

namespace haltpool::examples {

// Totals over every connection; connections add to them with relaxed
// atomics from any worker, main() reads them after the pool has stopped.
struct ConnectionTotals {
  std::atomic<uint64_t> bytes_sent{0};          // Echoed bytes, or reply bytes.
  std::atomic<uint64_t> sockperf_replies{0};    // Messages answered.
  std::atomic<uint64_t> sockperf_no_reply{0};   // Messages asking for none.
  std::atomic<uint64_t> sockperf_malformed{0};  // Connections closed.
};

class ConnectionOwner {
 public:
  virtual ~ConnectionOwner() = default;

  // Forgets and closes `fd`: a connection's last call, made from the worker
  // that serves it, after which it frees itself.
  virtual void CloseConnection(int fd) = 0;

  // Where the connections count; valid for the owner's life.
  virtual ConnectionTotals& totals() = 0;
};

}  // namespace haltpool::examples

#endif  // HALTPOOL_EXAMPLES_CONNECTION_OWNER_H_
