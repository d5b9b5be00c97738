// echo_server --metrics_port as Prometheus sees it: the real binary is
// started (server_process.h) with --metrics_port=0, echo traffic goes
// through it, and GET /metrics over loopback must answer OpenMetrics that
// the strict parser accepts line by line, with one sample per worker and
// counters that grew with the traffic; other paths get 404, other methods
// 405, an oversized head 431. Both I/O backends; io_uring is skipped, with
// the reason, where the machine has none. AnswerMetricsRequest, the
// endpoint's HTTP part, is tested on its own first.
//
// The server's path comes as the first argument (BUILD: args =
// ["$(location //examples:echo_server)"]).

#include "examples/metrics_endpoint.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/examples/server_process.h"
#include "tests/pool/openmetrics_parser.h"

namespace haltpool {
namespace {

using openmetrics::OpenMetricsExposition;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string g_server;  // Set by main().

constexpr int kWorkers = 2;

std::string Body() { return "# EOF\n"; }

TEST(AnswerMetricsRequestTest, WaitsForTheWholeHead) {
  EXPECT_EQ(examples::AnswerMetricsRequest("", Body), "");
  EXPECT_EQ(examples::AnswerMetricsRequest("GET /metrics HTTP/1.1\r\n", Body),
            "");
  EXPECT_EQ(examples::AnswerMetricsRequest(
                "GET /metrics HTTP/1.1\r\nHost: a\r\n\r", Body),
            "");
}

TEST(AnswerMetricsRequestTest, AnswersEachCase) {
  const std::string ok = examples::AnswerMetricsRequest(
      "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n", Body);
  EXPECT_EQ(ok,
            "HTTP/1.1 200 OK\r\nContent-Type: application/openmetrics-text; "
            "version=1.0.0; charset=utf-8\r\nContent-Length: 6\r\n"
            "Connection: close\r\n\r\n# EOF\n");
  bool called = false;
  auto spy = [&called] {
    called = true;
    return std::string("x");
  };
  EXPECT_THAT(examples::AnswerMetricsRequest("GET / HTTP/1.0\r\n\r\n", spy),
              StartsWith("HTTP/1.1 404 Not Found\r\n"));
  const std::string post = examples::AnswerMetricsRequest(
      "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", spy);
  EXPECT_THAT(post, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
  EXPECT_THAT(post, HasSubstr("\r\nAllow: GET\r\n"));
  EXPECT_THAT(examples::AnswerMetricsRequest("GET /metrics\r\n\r\n", spy),
              StartsWith("HTTP/1.1 400 Bad Request\r\n"));
  EXPECT_THAT(
      examples::AnswerMetricsRequest("GET  /metrics HTTP/1.1\r\n\r\n", spy),
      StartsWith("HTTP/1.1 400 Bad Request\r\n"));
  EXPECT_THAT(examples::AnswerMetricsRequest(
                  std::string(examples::kMaxMetricsRequestBytes, 'a'), spy),
              StartsWith("HTTP/1.1 431 "));
  EXPECT_FALSE(called) << "the metrics were made for a request refused";
}

// Writes all of `data` to `fd` and reads until the server closes; "" on
// a failure or the deadline.
std::string Exchange(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n =
        send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // The server may answer and close before all came.
    sent += static_cast<size_t>(n);
  }
  std::string got;
  const int64_t deadline = NowMs() + kTimeoutMs;
  char buf[65536];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int64_t left = deadline - NowMs();
    if (left <= 0) return "";
    if (poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) return "";
    const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0) return got;
    if (n < 0 && errno != EAGAIN && errno != EINTR) return got;
    if (n > 0) got.append(buf, static_cast<size_t>(n));
  }
}

// One HTTP request on a fresh connection to `port`; the whole response.
std::string Http(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  std::string r = Exchange(fd, request);
  close(fd);
  return r;
}

struct Response {
  std::string status_line;
  std::map<std::string, std::string> headers;
  std::string body;
};

Response Split(const std::string& raw) {
  Response r;
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) return r;
  r.body = raw.substr(head_end + 4);
  size_t at = 0;
  bool first = true;
  while (at < head_end) {
    size_t eol = raw.find("\r\n", at);
    const std::string line = raw.substr(at, eol - at);
    at = eol + 2;
    if (first) {
      r.status_line = line;
      first = false;
      continue;
    }
    const size_t colon = line.find(": ");
    if (colon != std::string::npos) {
      r.headers[line.substr(0, colon)] = line.substr(colon + 2);
    }
  }
  return r;
}

// Parses "echo_server: metrics on 0.0.0.0:PORT (GET /metrics)"; -1 if
// `line` is not that line.
int ParseMetricsLine(const std::string& line) {
  const std::string prefix = "echo_server: metrics on 0.0.0.0:";
  if (line.rfind(prefix, 0) != 0) return -1;
  size_t end = 0;
  const int port = std::stoi(line.substr(prefix.size()), &end);
  if (line.substr(prefix.size() + end) != " (GET /metrics)") return -1;
  return port;
}

double Sum(const OpenMetricsExposition& e, const std::string& name) {
  double sum = 0;
  for (const auto* s : e.All(name)) sum += s->value;
  return sum;
}

class MetricsEndpointTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(
        g_server,
        std::vector<std::string>{"--port=0", "--io=" + GetParam(),
                                 "--workers=" + std::to_string(kWorkers),
                                 "--metrics_port=0"});
    ASSERT_GT(server_->pid(), 0) << "cannot spawn " << g_server;
    const Listening l = AwaitListening(*server_, GetParam());
    if (!l.skip.empty()) GTEST_SKIP() << l.skip;
    ASSERT_TRUE(l.error.empty()) << l.error;
    port_ = l.port;
    backend_ = l.backend;
    const std::string line = server_->ReadLine();
    metrics_port_ = ParseMetricsLine(line);
    ASSERT_GT(metrics_port_, 0) << "unexpected second line: " << line;
  }

  // GET /metrics, checked as an HTTP response and parsed strictly.
  OpenMetricsExposition Scrape() {
    Response r =
        Split(Http(metrics_port_,
                   "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: "
                   "application/openmetrics-text\r\n\r\n"));
    EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
    EXPECT_EQ(r.headers["Content-Type"],
              "application/openmetrics-text; version=1.0.0; charset=utf-8");
    EXPECT_EQ(r.headers["Content-Length"], std::to_string(r.body.size()));
    EXPECT_EQ(r.headers["Connection"], "close");
    absl::StatusOr<OpenMetricsExposition> e =
        openmetrics::ParseOpenMetrics(r.body);
    EXPECT_TRUE(e.ok()) << e.status() << "\n" << r.body;
    return e.ok() ? *std::move(e) : OpenMetricsExposition{};
  }

  void TearDown() override {
    if (server_ == nullptr || port_ <= 0) return;
    const Exit e = server_->Stop(SIGTERM);
    EXPECT_TRUE(e.exited && e.code == 0)
        << "the server " << e.Describe() << "; stderr:\n"
        << server_->err();
  }

  std::unique_ptr<ServerProcess> server_;
  int port_ = -1;
  int metrics_port_ = -1;
  std::string backend_;
};

TEST_P(MetricsEndpointTest, CountersFollowTheEchoTraffic) {
  const OpenMetricsExposition before = Scrape();
  EXPECT_EQ(before.All("haltpool_tasks_run_total").size(), size_t{kWorkers});
  EXPECT_EQ(before.All("haltpool_idle_entries_total").size(),
            size_t{2 * kWorkers});
  EXPECT_EQ(before.All("haltpool_worker_info").size(), size_t{kWorkers});
  EXPECT_EQ(before.All("haltpool_poll_window_seconds").size(),
            size_t{kWorkers});

  // 8 clients, 25 round trips each: every message is a Recv and a Send
  // completion on the server.
  constexpr int kClients = 8, kRoundTrips = 25;
  for (int c = 0; c < kClients; ++c) {
    const int fd = Connect(port_);
    ASSERT_GE(fd, 0);
    for (int i = 0; i < kRoundTrips; ++i) {
      const std::string msg = "message " + std::to_string(i) + "\n";
      ASSERT_EQ(send(fd, msg.data(), msg.size(), MSG_NOSIGNAL),
                static_cast<ssize_t>(msg.size()));
      std::string echo;
      char buf[256];
      while (echo.size() < msg.size()) {
        const ssize_t n = recv(fd, buf, sizeof(buf), 0);
        ASSERT_GT(n, 0) << "the echo stopped";
        echo.append(buf, static_cast<size_t>(n));
      }
      ASSERT_EQ(echo, msg);
    }
    close(fd);
  }

  const OpenMetricsExposition after = Scrape();
  const double messages = kClients * kRoundTrips;
  EXPECT_GE(Sum(after, "haltpool_io_callbacks_total") -
                Sum(before, "haltpool_io_callbacks_total"),
            2 * messages);
  EXPECT_GT(Sum(after, "haltpool_tasks_run_total"), 0);
  EXPECT_GE(Sum(after, "haltpool_tasks_run_total"),
            Sum(before, "haltpool_tasks_run_total"));
  EXPECT_GT(Sum(after, "haltpool_idle_entries_total"),
            Sum(before, "haltpool_idle_entries_total"));
  // Every worker runs an acceptor, so every one has made its reactor.
  for (const auto* info : after.All("haltpool_worker_info")) {
    EXPECT_EQ(info->labels.at("io_backend"), backend_)
        << "worker " << info->labels.at("worker");
  }
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_NE(
        after.Find("haltpool_tasks_run_total", {{"worker", std::to_string(w)}}),
        nullptr)
        << "worker " << w;
  }
}

TEST_P(MetricsEndpointTest, OtherPathsMethodsAndOversizedHeads) {
  Response r = Split(Http(metrics_port_, "GET /nope HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 404 Not Found");
  EXPECT_EQ(r.headers["Content-Length"], std::to_string(r.body.size()));

  r = Split(Http(metrics_port_,
                 "POST /metrics HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 405 Method Not Allowed");
  EXPECT_EQ(r.headers["Allow"], "GET");

  r = Split(Http(metrics_port_,
                 "GET /metrics HTTP/1.1\r\nX-Big: " +
                     std::string(2 * examples::kMaxMetricsRequestBytes, 'a') +
                     "\r\n\r\n"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 431 Request Header Fields Too Large");

  // The endpoint still serves after those.
  EXPECT_FALSE(Scrape().samples.empty());
}

INSTANTIATE_TEST_SUITE_P(Backends, MetricsEndpointTest,
                         ::testing::Values("epoll", "uring"),
                         [](const auto& info) { return info.param; });

TEST(MetricsPortFlagTest, RefusesABadPort) {
  ServerProcess server(g_server, {"--metrics_port=70000"});
  ASSERT_GT(server.pid(), 0);
  const Exit e = server.Wait();
  EXPECT_TRUE(e.exited && e.code == 2) << "the server " << e.Describe();
  EXPECT_THAT(server.err(), HasSubstr("--metrics_port='70000'"));
}

}  // namespace
}  // namespace haltpool

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc > 1) haltpool::g_server = argv[1];
  if (haltpool::g_server.empty()) {
    fprintf(stderr, "usage: metrics_endpoint_test PATH_TO_ECHO_SERVER\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
