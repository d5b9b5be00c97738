// A server example run as its users run it, for the tests of examples/: the
// real binary spawned as a child process (posix_spawn) with its stdout and
// stderr on pipes, its first line read, its exit waited for with a
// deadline; and the client-side helpers those tests share. Header-only;
// test code only.

#ifndef HALTPOOL_TESTS_EXAMPLES_SERVER_PROCESS_H_
#define HALTPOOL_TESTS_EXAMPLES_SERVER_PROCESS_H_

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace haltpool {

// How long the test waits for the server to start, answer or exit. Far
// above what any of it takes (milliseconds), so only a hang trips it.
inline constexpr int64_t kTimeoutMs = 20000;

inline int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

// How a child ended.
struct Exit {
  bool timed_out = false;  // Still running at the deadline: killed.
  bool exited = false;     // Left through exit (else a signal).
  int code = -1;           // Exit status if `exited`, else the signal.

  std::string Describe() const {
    if (timed_out) return "timed out and was killed";
    if (!exited) return "was killed by signal " + std::to_string(code);
    return "exited with status " + std::to_string(code);
  }
};

// One run of the server: spawned with its stdout and stderr on pipes.
class ServerProcess {
 public:
  // Starts `program` with `args`, in the test's environment plus `env`
  // ("NAME=value" entries, each replacing a variable of the same name);
  // pid() is -1 if that failed.
  ServerProcess(const std::string& program,
                const std::vector<std::string>& args,
                const std::vector<std::string>& env = {}) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0) return;
    if (pipe2(err, O_CLOEXEC) != 0) {
      close(out[0]);
      close(out[1]);
      return;
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(program.c_str()));
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    auto name_of = [](const std::string& entry) {
      return entry.substr(0, entry.find('='));
    };
    std::vector<char*> envp;
    for (char** e = environ; *e != nullptr; ++e) {
      bool replaced = false;
      for (const std::string& v : env) replaced |= name_of(v) == name_of(*e);
      if (!replaced) envp.push_back(*e);
    }
    for (const std::string& v : env)
      envp.push_back(const_cast<char*>(v.c_str()));
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    // Whatever gtest's thread had blocked, the server starts with the
    // default dispositions and an empty mask.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, stops;
    sigemptyset(&none);
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGPIPE);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &stops);
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    if (posix_spawn(&pid, program.c_str(), &actions, &attr, argv.data(),
                    envp.data()) == 0) {
      pid_ = pid;
    }
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
  }

  ~ServerProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
  }

  pid_t pid() const { return pid_; }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

  // Reads stdout until it holds a whole line, returning it (without the
  // newline), or "" if the server closed stdout or the deadline passed.
  std::string ReadLine() {
    const int64_t deadline = NowMs() + kTimeoutMs;
    for (;;) {
      const size_t nl = out_.find('\n', line_start_);
      if (nl != std::string::npos) {
        std::string line = out_.substr(line_start_, nl - line_start_);
        line_start_ = nl + 1;
        return line;
      }
      if (!Pump(deadline - NowMs())) return "";
    }
  }

  // Sends `sig`, reads stdout and stderr to their end, and reaps the
  // server; kills it if it is not gone within kTimeoutMs.
  Exit Stop(int sig) {
    kill(pid_, sig);
    return Wait();
  }

  // As Stop, without a signal: for a server expected to exit by itself.
  Exit Wait() {
    const int64_t deadline = NowMs() + kTimeoutMs;
    while (!(out_eof_ && err_eof_) && NowMs() < deadline) {
      Pump(deadline - NowMs());
    }
    Exit r;
    int status = 0;
    for (;;) {
      const pid_t w = waitpid(pid_, &status, WNOHANG);
      if (w == pid_) break;
      if (NowMs() >= deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        reaped_ = true;
        r.timed_out = true;
        return r;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    reaped_ = true;
    if (WIFEXITED(status)) {
      r.exited = true;
      r.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      r.code = WTERMSIG(status);
    }
    return r;
  }

 private:
  // Waits up to `timeout_ms` for output and appends what came. False if
  // nothing more can come (both pipes at their end) or time ran out.
  bool Pump(int64_t timeout_ms) {
    if (timeout_ms <= 0 || (out_eof_ && err_eof_)) return false;
    pollfd fds[2] = {{out_eof_ ? -1 : out_fd_, POLLIN, 0},
                     {err_eof_ ? -1 : err_fd_, POLLIN, 0}};
    const int n = poll(fds, 2, static_cast<int>(timeout_ms));
    if (n < 0) return errno == EINTR;
    if (n == 0) return false;
    char buf[4096];
    struct Stream {
      pollfd& p;
      std::string& text;
      bool& eof;
    };
    for (Stream s :
         {Stream{fds[0], out_, out_eof_}, Stream{fds[1], err_, err_eof_}}) {
      if (s.p.fd < 0 || s.p.revents == 0) continue;
      const ssize_t got = read(s.p.fd, buf, sizeof(buf));
      if (got > 0) {
        s.text.append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        s.eof = true;
      }
    }
    return true;
  }

  pid_t pid_ = -1;
  bool reaped_ = false;
  int out_fd_ = -1;
  int err_fd_ = -1;
  bool out_eof_ = false;
  bool err_eof_ = false;
  std::string out_, err_;
  size_t line_start_ = 0;
};

// Parses "echo_server: listening on 0.0.0.0:PORT (io: BACKEND)". Returns
// the port, -1 if `line` is not that line; `backend` gets BACKEND.
inline int ParseListeningLine(const std::string& line, std::string* backend) {
  const std::string prefix = "echo_server: listening on 0.0.0.0:";
  if (line.rfind(prefix, 0) != 0) return -1;
  size_t end = 0;
  const int port = std::stoi(line.substr(prefix.size()), &end);
  const std::string rest = line.substr(prefix.size() + end);
  if (rest.rfind(" (io: ", 0) != 0 || rest.back() != ')') return -1;
  *backend = rest.substr(6, rest.size() - 7);
  return port;
}

// What waiting for the server's "listening" line came to: the port (> 0)
// and backend, or why the test should skip (no io_uring here, with
// --io=uring), or what went wrong.
struct Listening {
  int port = -1;
  std::string backend;
  std::string skip;
  std::string error;
};

// Reads `server`'s first line, started with --io=`io`.
inline Listening AwaitListening(ServerProcess& server, const std::string& io) {
  Listening l;
  const std::string line = server.ReadLine();
  if (line.empty()) {
    const Exit e = server.Wait();
    if (io == "uring" && e.exited && e.code == 1 &&
        server.err().find("io_uring") != std::string::npos) {
      l.skip = "no io_uring here: " + server.err();
    } else {
      l.error = "the server " + e.Describe() + " before listening; stderr:\n" +
                server.err();
    }
    return l;
  }
  l.port = ParseListeningLine(line, &l.backend);
  if (l.port <= 0) l.error = "unexpected first line: " + line;
  return l;
}

// A socket of `type` (SOCK_STREAM, SOCK_DGRAM) connected to
// 127.0.0.1:`port`, or -1.
inline int ConnectLoopback(int port, int type) {
  const int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) !=
      0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A connected TCP socket to 127.0.0.1:`port` with TCP_NODELAY, or -1.
inline int Connect(int port) {
  const int fd = ConnectLoopback(port, SOCK_STREAM);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// Sends `message` on `fd` and reads the echo back at the same time (so a
// message larger than the socket buffers cannot deadlock). Returns "" if
// exactly `message` came back within the deadline, else what went wrong.
inline std::string EchoOnce(int fd, const std::string& message) {
  const int64_t deadline = NowMs() + kTimeoutMs;
  std::string echo;
  size_t sent = 0;
  char buf[65536];
  while (echo.size() < message.size()) {
    pollfd p{fd,
             static_cast<short>(POLLIN | (sent < message.size() ? POLLOUT : 0)),
             0};
    const int64_t left = deadline - NowMs();
    if (left <= 0) {
      return "timed out with " + std::to_string(sent) + " bytes sent, " +
             std::to_string(echo.size()) + " received of " +
             std::to_string(message.size());
    }
    if (poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) {
      return std::string("poll: ") + strerror(errno);
    }
    if ((p.revents & POLLOUT) != 0 && sent < message.size()) {
      const ssize_t n = send(fd, message.data() + sent, message.size() - sent,
                             MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return std::string("send: ") + strerror(errno);
      }
      if (n > 0) sent += static_cast<size_t>(n);
    }
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n == 0) return "the server closed the connection";
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return std::string("recv: ") + strerror(errno);
      }
      if (n > 0) echo.append(buf, static_cast<size_t>(n));
    }
  }
  if (echo.size() != message.size()) {
    return "received " + std::to_string(echo.size()) + " bytes for " +
           std::to_string(message.size());
  }
  if (echo != message) {
    size_t i = 0;
    while (echo[i] == message[i]) ++i;
    return "the echo differs at byte " + std::to_string(i) + " of " +
           std::to_string(message.size());
  }
  return "";
}

}  // namespace haltpool

#endif  // HALTPOOL_TESTS_EXAMPLES_SERVER_PROCESS_H_
