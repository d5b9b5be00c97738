// examples/asio_echo: an ordinary asio TCP echo server (an acceptor, one
// coroutine per connection, async_read_some and async_write with
// use_awaitable) that moves onto haltpool by changing only its executor.
//
// ./bazelw run //examples:asio_echo -- --executor=haltpool --port=0
//
// --executor picks where the handlers run, and is the one place the two
// differ ("The one difference" in main):
//   asio      (default) an asio::io_context, run by as many threads as the
//             haltpool pool has workers, the usual asio way;
//   haltpool  haltpool::AsioContext's executor: the acceptor, the sockets
//             and the coroutines are built on it, so every handler runs on
//             the pool's workers. asio's reactor still waits for the
//             sockets (on asio's own thread in the context).
// Both loops exist in either mode: the one not chosen has no work, so its
// io_context::run() or AsioContext::join() returns at once.
//
// Design. Handlers may run on several threads at once (io_context threads
// or pool workers), so the listener, its acceptor and the signal set share
// one strand, and each connection has a strand of its own. Each connection
// is a coroutine owning its socket (shared with the list of open
// connections, so a stop can close it); it echoes what it reads until end
// of stream or an error.
//
// Shutdown. SIGINT or SIGTERM (an asio::signal_set on the listener's
// strand) closes the acceptor and every open connection, each on its own
// strand; the coroutines end, the work runs out, run() and join() return,
// and the server prints how many connections it served. Then the I/O
// objects, the contexts and the pool are destroyed, in that order.
//
// Output: the first line is "asio_echo: listening on 0.0.0.0:PORT
// (executor: NAME)"; the last, after a stop, "asio_echo: stopped after N
// connections". Exit status: 0 after a clean stop, 1 if the server could
// not start, 2 on a bad flag.

#include <signal.h>
#include <stdio.h>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/buffer.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "runtime/asio/asio_executor.h"
#include "runtime/thread_pool.h"

namespace {

using asio::ip::tcp;

// The port when --port is not given, as echo_server's.
constexpr int kDefaultPort = 7777;

// Bytes one read may bring: the coroutine frame holds the buffer.
constexpr size_t kBufferBytes = 16 * 1024;

// Pause before accepting again after an error that may pass by itself
// (EMFILE, ENFILE, ENOBUFS), instead of spinning on it; as echo_server's.
constexpr std::chrono::milliseconds kAcceptRetry{10};

constexpr char kUsage[] =
    "usage: asio_echo [--help] [--executor=asio|haltpool] [--port=N]\n"
    "  --executor=E   where the handlers run: asio (an io_context run by as "
    "many threads as the pool has workers) or haltpool (the pool, through "
    "haltpool::AsioExecutor) (default asio)\n"
    "  --port=N       TCP port to listen on, 0-65535 (default 7777; 0: a "
    "free port, printed)\n";

struct Flags {
  bool help = false;      // --help: print the usage and exit 0.
  bool haltpool = false;  // --executor=haltpool.
  int port = kDefaultPort;
};

// Parses --name=value flags. InvalidArgument naming the flag, the value and
// what is accepted; the caller prints it with the usage.
absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--help") {
      flags.help = true;
      continue;
    }
    const size_t eq = arg.find('=');
    if (!absl::StartsWith(arg, "--") || eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg,
                       "'; flags are --executor and --port, each as "
                       "--name=value"));
    }
    const absl::string_view name = arg.substr(0, eq);
    const absl::string_view value = arg.substr(eq + 1);
    if (name == "--executor") {
      if (value != "asio" && value != "haltpool") {
        return absl::InvalidArgumentError(
            absl::StrCat("--executor='", value,
                         "' is not an executor; accepted: asio, haltpool"));
      }
      flags.haltpool = value == "haltpool";
    } else if (name == "--port") {
      if (!absl::SimpleAtoi(value, &flags.port) || flags.port < 0 ||
          flags.port > 65535) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--port='", value, "' is not a port; accepted: 0 to 65535"));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag '", name, "'; accepted: --executor, --port"));
    }
  }
  return flags;
}

// The open connections, so a stop can close them, and the count served.
// Any thread.
class Connections {
 public:
  void Add(const std::shared_ptr<tcp::socket>& socket) {
    std::lock_guard<std::mutex> lock(mu_);
    open_.insert(socket);
    ++served_;
  }

  void Remove(const std::shared_ptr<tcp::socket>& socket) {
    std::lock_guard<std::mutex> lock(mu_);
    open_.erase(socket);
  }

  // Closes every open connection on its own strand (a socket is not safe
  // to use from two threads at once): its pending read or write ends with
  // operation_aborted.
  void CloseAll() {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::shared_ptr<tcp::socket>& socket : open_) {
      asio::post(socket->get_executor(), [socket] {
        asio::error_code ignored;
        socket->close(ignored);
      });
    }
  }

  int64_t served() {
    std::lock_guard<std::mutex> lock(mu_);
    return served_;
  }

 private:
  std::mutex mu_;
  std::set<std::shared_ptr<tcp::socket>> open_;  // Guarded by mu_.
  int64_t served_ = 0;                           // Guarded by mu_.
};

// One connection: echoes what it reads until end of stream, an error or a
// stop closes the socket.
asio::awaitable<void> Echo(std::shared_ptr<tcp::socket> socket,
                           Connections& connections) {
  char data[kBufferBytes];
  try {
    for (;;) {
      const size_t n = co_await socket->async_read_some(asio::buffer(data),
                                                        asio::use_awaitable);
      co_await asio::async_write(*socket, asio::buffer(data, n),
                                 asio::use_awaitable);
    }
  } catch (const std::system_error&) {
    // End of stream, a reset, or closed by the stop: the connection ends.
  }
  connections.Remove(socket);
}

// Accepts connections until the acceptor is closed, each on a strand of
// `executor`. Runs on the acceptor's strand.
asio::awaitable<void> Listen(tcp::acceptor& acceptor,
                             const asio::any_io_executor& executor,
                             Connections& connections) {
  while (acceptor.is_open()) {
    auto socket = std::make_shared<tcp::socket>(asio::make_strand(executor));
    asio::error_code ec;
    co_await acceptor.async_accept(
        *socket, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (!acceptor.is_open()) break;  // Closed by the stop.
      fprintf(stderr, "asio_echo: accept: %s; retrying\n",
              ec.message().c_str());
      asio::steady_timer pause(acceptor.get_executor(), kAcceptRetry);
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    connections.Add(socket);
    asio::co_spawn(socket->get_executor(), Echo(socket, connections),
                   asio::detached);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const absl::StatusOr<Flags> flags = ParseFlags(argc, argv);
  if (!flags.ok()) {
    fprintf(stderr, "asio_echo: %s\n%s",
            std::string(flags.status().message()).c_str(), kUsage);
    return 2;
  }
  if (flags->help) {
    fputs(kUsage, stdout);
    return 0;
  }
  absl::StatusOr<std::unique_ptr<haltpool::ThreadPool>> pool =
      haltpool::ThreadPool::Create();
  if (!pool.ok()) {
    fprintf(stderr, "asio_echo: %s\n",
            std::string(pool.status().message()).c_str());
    return 1;
  }
  asio::io_context io_context;
  haltpool::AsioContext haltpool_context(**pool);

  // The one difference between the two: the executor the acceptor, the
  // sockets, the signal set and the coroutines are built on.
  const asio::any_io_executor executor =
      flags->haltpool ? asio::any_io_executor(haltpool_context.get_executor())
                      : asio::any_io_executor(io_context.get_executor());

  int64_t served = 0;
  {
    const auto strand = asio::make_strand(executor);
    tcp::acceptor acceptor(strand);
    try {
      const tcp::endpoint endpoint(tcp::v4(),
                                   static_cast<unsigned short>(flags->port));
      acceptor.open(endpoint.protocol());
      acceptor.set_option(tcp::acceptor::reuse_address(true));
      acceptor.bind(endpoint);
      acceptor.listen();
    } catch (const std::system_error& e) {
      fprintf(stderr, "asio_echo: cannot listen on port %d: %s\n", flags->port,
              e.what());
      return 1;
    }
    Connections connections;
    asio::signal_set signals(strand, SIGINT, SIGTERM);
    signals.async_wait([&](const asio::error_code& ec, int) {
      if (ec) return;
      asio::error_code ignored;
      acceptor.close(ignored);
      connections.CloseAll();
    });
    printf("asio_echo: listening on 0.0.0.0:%d (executor: %s)\n",
           static_cast<int>(acceptor.local_endpoint().port()),
           flags->haltpool ? "haltpool" : "asio");
    fflush(stdout);
    asio::co_spawn(strand, Listen(acceptor, executor, connections),
                   asio::detached);

    // asio's loop on as many threads as the pool has workers (no work with
    // --executor=haltpool: returns at once), then haltpool's (no work with
    // --executor=asio: returns at once). Both return when the stop has
    // ended every coroutine.
    std::vector<std::thread> threads;
    for (int i = 1; i < (*pool)->size(); ++i) {
      threads.emplace_back([&io_context] { io_context.run(); });
    }
    io_context.run();
    for (std::thread& t : threads) t.join();
    haltpool_context.join();
    served = connections.served();
  }
  printf("asio_echo: stopped after %lld connections\n",
         static_cast<long long>(served));
  return 0;
}
