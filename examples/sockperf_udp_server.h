// The UDP half of echo_server --protocol=sockperf: answers sockperf
// ping-pong datagrams on a ThreadPool.
//
// Design. The pool's I/O (runtime/pool_io.h) has Recv and Send but nothing
// that reports a datagram's sender (recvfrom, recvmsg) or sends to an
// address (sendto), and a UDP server cannot reply without both. So the
// receiving is done by one plain thread, the receiver, which blocks in
// recvfrom() as sockperf's own server does, copies each datagram with its
// sender into a record, and submits a task for it to the pool. The task,
// on a worker, classifies the datagram (sockperf_protocol.h), turns a
// request into its reply and sends it with sendto(MSG_DONTWAIT), so a
// worker never blocks on the socket; anything else is dropped and counted.
// The path from the receiver to the worker is ThreadPool::Submit: it wakes
// an idle worker as the pool's governor left it (polling, or parked), which
// is what a UDP ping-pong through this server measures next to the
// receiver's own wake-up.
//
// Cost: one allocation per datagram (its record, sized to the datagram),
// freed by the task; a datagram arriving after shutdown has begun is
// dropped.
//
// Shutdown: Stop() shuts the socket down, which ends the receiver's
// recvfrom() with 0 (Linux wakes readers of an unconnected UDP socket on
// shutdown even though shutdown() itself reports ENOTCONN), and joins it.
// Tasks already submitted still run and send; the socket is closed by the
// destructor, after the pool has shut down.

#ifndef HALTPOOL_EXAMPLES_SOCKPERF_UDP_SERVER_H_
#define HALTPOOL_EXAMPLES_SOCKPERF_UDP_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "runtime/thread_pool.h"

namespace haltpool::sockperf {

class UdpServer {
 public:
  // A UDP socket bound to 0.0.0.0:`port` (1-65535), served on `pool`'s
  // workers once Start() is called. Fails with the errno of socket() or
  // bind() (EADDRINUSE when another UDP socket holds the port).
  static absl::StatusOr<std::unique_ptr<UdpServer>> Create(ThreadPool* pool,
                                                           int port);

  // Stops (see Stop) and closes the socket. Only after `pool` has shut
  // down: its queued tasks send on the socket.
  ~UdpServer();

  UdpServer(const UdpServer&) = delete;
  UdpServer& operator=(const UdpServer&) = delete;

  // Starts the receiver thread. Once, from the thread that created this.
  void Start();

  // Stops receiving and joins the receiver; returns once it is gone. Tasks
  // already submitted still run. Idempotent; from the thread that started
  // it.
  void Stop();

  // Counts, relaxed: replies sent, well-formed datagrams that asked for
  // none, and datagrams dropped as short or malformed. Any thread.
  uint64_t replies() const { return replies_.load(std::memory_order_relaxed); }
  uint64_t no_reply() const {
    return no_reply_.load(std::memory_order_relaxed);
  }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Datagram;

  UdpServer(ThreadPool* pool, int fd) : pool_(pool), fd_(fd) {}

  // The receiver thread's body: until Stop, recvfrom and Submit.
  void Receive();
  // A task's body: answers or drops `datagram`, on a worker.
  void Answer(Datagram& datagram) noexcept;

  ThreadPool* const pool_;
  const int fd_;
  std::thread receiver_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> replies_{0};
  std::atomic<uint64_t> no_reply_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace haltpool::sockperf

#endif  // HALTPOOL_EXAMPLES_SOCKPERF_UDP_SERVER_H_
