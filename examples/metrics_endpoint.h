// A scrape endpoint for the pool's statistics: a tiny HTTP/1.1 server that
// answers GET /metrics with FormatPoolStatsOpenMetrics(pool->Stats()), on
// the pool's own I/O (ThreadPool::Io()), so serving a scrape is a few
// callbacks on one worker and never blocks it. One request per connection
// (Connection: close); a request head larger than kMaxMetricsRequestBytes
// is answered 431, a method other than GET 405, another path 404.
// echo_server serves it with --metrics_port.

#ifndef HALTPOOL_EXAMPLES_METRICS_ENDPOINT_H_
#define HALTPOOL_EXAMPLES_METRICS_ENDPOINT_H_

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_set>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "runtime/thread_pool.h"

namespace haltpool::examples {

// The longest request head (request line and headers) read: a scrape's is
// about 200 bytes (Prometheus 2.x sends five headers); 8 KiB is what
// nginx's default large_client_header_buffers allows one header line.
inline constexpr size_t kMaxMetricsRequestBytes = 8192;

// The whole HTTP response to `received`, the bytes of one request read so
// far, or "" while its head is incomplete (no empty line yet) and shorter
// than kMaxMetricsRequestBytes. `metrics` makes the body of a 200; it is
// called only for GET /metrics (any query string ignored). 400 for a request
// line that is not "METHOD TARGET HTTP/1.x", 405 (with Allow: GET) for
// another method, 404 for another path, 431 for a head too large. Pure.
std::string AnswerMetricsRequest(absl::string_view received,
                                 const std::function<std::string()>& metrics);

class MetricsEndpoint {
 public:
  // Serves `listen_fd` (a listening TCP socket, owned by the caller, open
  // until after Stop) with `pool`'s statistics.
  MetricsEndpoint(ThreadPool* pool, int listen_fd)
      : pool_(pool), listen_fd_(listen_fd) {}
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // Starts one acceptor on one worker; its connections are served on that
  // worker. Returns once it accepts, or the worker's I/O setup error. Not
  // from a worker; once.
  absl::Status Start();

  // Stops accepting, shuts down the open connections, and waits up to
  // `timeout` until none and no acceptor is left (then nothing of the
  // endpoint is in flight on the pool). True if that happened in time. Not
  // from a worker; once, after Start, before the pool shuts down.
  bool Stop(absl::Duration timeout);

 private:
  struct Acceptor;
  struct Connection;

  // Serves accepted `fd` on `io`'s worker, or closes it when stopping.
  void Serve(PoolIo io, int fd);
  // Forgets and closes `fd`: a connection's last call.
  void CloseConnection(int fd);
  void AcceptorEnded();
  bool stopping() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  }

  ThreadPool* const pool_;
  const int listen_fd_;

  // std::mutex, not absl::Mutex: the system's absl is not built for
  // ThreadSanitizer, which would not see its synchronization.
  mutable std::mutex mu_;
  std::condition_variable changed_;  // Any field below changed.
  bool stopping_ = false;            // Guarded by mu_.
  bool started_ = false;             // The start-up task ran; mu_.
  absl::Status start_error_;         // Guarded by mu_.
  bool accepting_ = false;           // The acceptor lives; mu_.
  std::unordered_set<int> open_;     // Guarded by mu_.
};

}  // namespace haltpool::examples

#endif  // HALTPOOL_EXAMPLES_METRICS_ENDPOINT_H_
