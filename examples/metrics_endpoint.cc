// The scrape endpoint (see the header): an acceptor on one worker and one
// record per connection that reads a request head, sends the answer, and
// closes gracefully.

#include "examples/metrics_endpoint.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "runtime/pool_io.h"
#include "runtime/pool_metrics.h"

namespace haltpool::examples {
namespace {

// Pause before accepting again after a failure that may pass by itself
// (EMFILE, ENFILE, ENOBUFS, ENOMEM), as echo_server's acceptors do.
constexpr int64_t kAcceptRetryNs = 10 * 1000 * 1000;

std::string Response(absl::string_view status, absl::string_view content_type,
                     absl::string_view extra_headers, absl::string_view body) {
  return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", content_type,
                      "\r\nContent-Length: ", body.size(), "\r\n",
                      extra_headers, "Connection: close\r\n\r\n", body);
}

std::string Error(absl::string_view status, absl::string_view extra_headers,
                  absl::string_view message) {
  return Response(status, "text/plain; charset=utf-8", extra_headers,
                  absl::StrCat(message, "\n"));
}

}  // namespace

std::string AnswerMetricsRequest(absl::string_view received,
                                 const std::function<std::string()>& metrics) {
  size_t head_end = received.find("\r\n\r\n");
  if (head_end == absl::string_view::npos) head_end = received.find("\n\n");
  if (head_end == absl::string_view::npos ||
      head_end > kMaxMetricsRequestBytes) {
    if (received.size() < kMaxMetricsRequestBytes) return "";
    return Error(
        "431 Request Header Fields Too Large", "",
        absl::StrCat("request head over ", kMaxMetricsRequestBytes, " bytes"));
  }
  absl::string_view line = received.substr(0, received.find('\n'));
  absl::ConsumeSuffix(&line, "\r");
  const std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 3 || parts[0].empty() || parts[1].empty() ||
      !absl::StartsWith(parts[2], "HTTP/1.")) {
    return Error("400 Bad Request", "",
                 "expected a request line \"GET /metrics HTTP/1.1\"");
  }
  if (parts[0] != "GET") {
    return Error(
        "405 Method Not Allowed", "Allow: GET\r\n",
        absl::StrCat("method ", parts[0], " not allowed; accepted: GET"));
  }
  absl::string_view path = parts[1].substr(0, parts[1].find('?'));
  if (path != "/metrics") {
    return Error(
        "404 Not Found", "",
        absl::StrCat("no ", path, " here; the metrics are at /metrics"));
  }
  return Response("200 OK", kOpenMetricsContentType, "", metrics());
}

// Accepts on one worker until the listening socket fails.
struct MetricsEndpoint::Acceptor {
  MetricsEndpoint* endpoint;
  PoolIo io;

  void Next() {
    io.Accept(endpoint->listen_fd_, [this](int result) { OnAccept(result); });
  }

  void OnAccept(int result) {
    if (result >= 0) endpoint->Serve(io, result);
    if (endpoint->stopping() || result == -EINVAL || result == -EBADF) {
      End();  // Stop shut the listening socket down, or it is gone.
    } else if (result == -EMFILE || result == -ENFILE || result == -ENOBUFS ||
               result == -ENOMEM) {
      io.Timeout(kAcceptRetryNs, [this](int) {
        if (endpoint->stopping()) return End();
        Next();
      });
    } else {
      Next();
    }
  }

  void End() {
    MetricsEndpoint* e = endpoint;
    delete this;
    e->AcceptorEnded();
  }
};

// One request: read its head, send the answer, shut down the sending side
// and read until the client closes (so that what it sent beyond the head
// cannot turn the close into a reset that loses the answer), then close.
struct MetricsEndpoint::Connection {
  Connection(MetricsEndpoint* e, PoolIo i, int f) : endpoint(e), io(i), fd(f) {}

  MetricsEndpoint* const endpoint;
  PoolIo io;
  const int fd;
  size_t len = 0;  // Bytes in buf.
  std::string answer;
  size_t sent = 0;  // Of answer.
  char buf[kMaxMetricsRequestBytes];

  void Recv() {
    io.Recv(fd, buf + len, sizeof(buf) - len, [this](int result) {
      if (result <= 0) return Close();  // Gone before asking, or shut down.
      len += static_cast<size_t>(result);
      answer = AnswerMetricsRequest(absl::string_view(buf, len), [this] {
        return FormatPoolStatsOpenMetrics(endpoint->pool_->Stats());
      });
      if (answer.empty()) return Recv();  // The head is not whole yet.
      SendRest();
    });
  }

  void SendRest() {
    io.Send(fd, answer.data() + sent, answer.size() - sent, [this](int result) {
      if (result <= 0) return Close();
      sent += static_cast<size_t>(result);
      if (sent < answer.size()) return SendRest();
      shutdown(fd, SHUT_WR);
      Drain();
    });
  }

  void Drain() {
    io.Recv(fd, buf, sizeof(buf), [this](int result) {
      if (result <= 0) return Close();
      Drain();
    });
  }

  void Close() {
    endpoint->CloseConnection(fd);
    delete this;
  }
};

absl::Status MetricsEndpoint::Start() {
  absl::Status submitted = pool_->Submit([this] {
    absl::StatusOr<PoolIo> io = pool_->Io();
    Acceptor* acceptor = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (io.ok()) {
        acceptor = new Acceptor{this, *io};
        accepting_ = true;
      } else {
        start_error_ = io.status();
      }
    }
    if (acceptor != nullptr) acceptor->Next();
    std::lock_guard<std::mutex> lock(mu_);
    started_ = true;
    changed_.notify_all();
  });
  if (!submitted.ok()) return submitted;
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return started_; });
  return start_error_;
}

void MetricsEndpoint::Serve(PoolIo io, int fd) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      close(fd);  // Accepted while stopping: Stop shut the others down.
      return;
    }
    open_.insert(fd);
  }
  (new Connection(this, io, fd))->Recv();
}

void MetricsEndpoint::CloseConnection(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.erase(fd);
  close(fd);
  changed_.notify_all();
}

void MetricsEndpoint::AcceptorEnded() {
  std::lock_guard<std::mutex> lock(mu_);
  accepting_ = false;
  changed_.notify_all();
}

bool MetricsEndpoint::Stop(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  // The pending Accept completes with -EINVAL, pending Recvs with 0 and
  // Sends with -EPIPE, so every callback runs and frees its record.
  shutdown(listen_fd_, SHUT_RDWR);
  for (int fd : open_) shutdown(fd, SHUT_RDWR);
  return changed_.wait_for(lock, absl::ToChronoMilliseconds(timeout),
                           [this] { return open_.empty() && !accepting_; });
}

}  // namespace haltpool::examples
