// Helpers for tests that put a WakeWord in memory shared with a fork()ed
// child: the mapping, the fork, and a bounded wait for the child.
//
// Header-only (the cross build links every test file into one binary). The
// child runs no gtest assertion: it reports through shared memory and its
// exit status, and leaves with _exit() so that no atexit handler, gtest
// listener or static destructor of the parent's copy runs twice.

#ifndef HALTPOOL_TESTS_IDLE_CHILD_PROCESS_H_
#define HALTPOOL_TESTS_IDLE_CHILD_PROCESS_H_

#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <new>
#include <string>
#include <utility>

namespace haltpool::test_support {

// A `T` constructed in an anonymous MAP_SHARED mapping, so a fork()ed child
// and its parent see the same object. T must be safe to share between
// processes (lock-free atomics, no pointers into either heap).
template <typename T>
class SharedMemory {
 public:
  template <typename... Args>
  explicit SharedMemory(Args&&... args) {
    void* p = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      perror("mmap(MAP_SHARED|MAP_ANONYMOUS)");
      abort();
    }
    object_ = new (p) T(std::forward<Args>(args)...);
  }
  ~SharedMemory() {
    object_->~T();
    munmap(object_, sizeof(T));
  }
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  T* get() const { return object_; }
  T* operator->() const { return object_; }
  T& operator*() const { return *object_; }

 private:
  T* object_;
};

// Forks; the child runs `fn` and _exit()s with its result (0-255). Returns
// the child's pid to the parent (-1 if fork failed).
template <typename Fn>
pid_t ForkChild(Fn&& fn) {
  fflush(nullptr);  // Nothing buffered is printed twice.
  const pid_t pid = fork();
  if (pid == 0) _exit(fn());
  return pid;
}

// How a child ended.
struct ChildExit {
  bool timed_out = false;  // Still running after the timeout: killed.
  bool exited = false;     // Left through exit/_exit (else a signal).
  int code = -1;           // Exit status if `exited`, else the signal.

  bool ok() const { return !timed_out && exited && code == 0; }
  std::string Describe() const {
    if (timed_out) return "timed out and was killed";
    if (!exited) return "was killed by signal " + std::to_string(code);
    return "exited with status " + std::to_string(code);
  }
};

// Waits up to `timeout_ms` for child `pid`; a child still running then is
// sent SIGKILL (by its pid, never anyone else) and reaped.
inline ChildExit WaitChild(pid_t pid, int64_t timeout_ms) {
  ChildExit r;
  if (pid <= 0) return r;
  int status = 0;
  for (int64_t waited_ms = 0;; waited_ms += 1) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return r;
    if (waited_ms >= timeout_ms) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      return r;
    }
    const timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
  if (WIFEXITED(status)) {
    r.exited = true;
    r.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.code = WTERMSIG(status);
  }
  return r;
}

}  // namespace haltpool::test_support

#endif  // HALTPOOL_TESTS_IDLE_CHILD_PROCESS_H_
