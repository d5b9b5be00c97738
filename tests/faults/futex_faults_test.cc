// Faults of the futex under the parker: a wait the kernel refuses (EFAULT on
// a bad address; ENOSYS from a seccomp filter), and FUTEX_WAKEs that no
// Unpark sent (spurious wake-ups). A refused wait must neither spin nor
// lose a wake; a spurious wake-up must not end a park.

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <new>
#include <thread>

#include "arch/cycle_clock.h"
#include "arch/futex.h"
#include "gtest/gtest.h"
#include "idle/parker.h"

namespace haltpool {
namespace {

TEST(FutexFaults, WaitOnAnUnreadableWordIsAnErrorNotAWake) {
  void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  // The kernel reads the word and faults (EFAULT); user space never touches it.
  const auto& word = *static_cast<const std::atomic<uint32_t>*>(page);
  EXPECT_EQ(arch::FutexWaitUntil(word, 0, arch::MonotonicNowNs() + 1000000000,
                                 arch::FutexScope::kPrivate),
            arch::FutexWaitResult::kError);
  munmap(page, 4096);
}

TEST(FutexFaults, FallbackNapEndsAtTheDeadlineOrAfterOneNap) {
  const int64_t start = arch::MonotonicNowNs();
  arch::FutexFallbackNap(start + 1000);  // 1 us: returns about then.
  arch::FutexFallbackNap(arch::kNoDeadline);
  const int64_t took = arch::MonotonicNowNs() - start;
  EXPECT_GE(took, arch::kFutexFallbackNapNs);
}

// Makes every futex system call of this (single-threaded, forked) process
// fail with ENOSYS, as a container's seccomp policy may.
bool RefuseFutex() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_futex, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{sizeof(filter) / sizeof(filter[0]), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

int64_t CpuNs() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * int64_t{1000000000} +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * int64_t{1000};
}

// The child's verdicts, as its exit status.
enum ChildResult {
  kOk = 0,
  kNoSeccomp = 10,
  kCreateFailed,
  kTimeoutNotReported,
  kSpun,
  kWakeLost,
};

TEST(FutexFaults, WithoutFutexAParkerNapsAndStillTakesEveryWake) {
  void* shared = mmap(nullptr, sizeof(idle::WakeWord), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* word = new (shared) idle::WakeWord(arch::FutexScope::kShared);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    idle::IdleOptions options;
    options.governor = "block";  // Straight to FUTEX_WAIT, which fails.
    absl::StatusOr<idle::Parker> parker = idle::Parker::Create(*word, options);
    if (!parker.ok()) _exit(kCreateFailed);
    if (!RefuseFutex()) _exit(kNoSeccomp);
    // 200 ms with no wake: a timeout, spent napping, not spinning.
    const int64_t cpu = CpuNs();
    if (parker->Park(arch::MonotonicNowNs() + 200000000) !=
        idle::IdleResult::kTimedOut) {
      _exit(kTimeoutNotReported);
    }
    if (CpuNs() - cpu > 100000000) _exit(kSpun);
    // The parent's wake must end a park with no deadline.
    if (parker->Park() != idle::IdleResult::kWoken) _exit(kWakeLost);
    _exit(kOk);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  word->Unpark();
  int status = 0;
  // A lost wake would leave the child parked: give it 10 s, then kill it.
  const int64_t limit = arch::MonotonicNowNs() + 10000000000;
  pid_t r;
  while ((r = waitpid(child, &status, WNOHANG)) == 0 &&
         arch::MonotonicNowNs() < limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (r == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the parker without futex never took the wake";
  }
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == kNoSeccomp) {
    GTEST_SKIP() << "seccomp filters are not allowed here";
  }
  EXPECT_EQ(WEXITSTATUS(status), kOk)
      << "10: no seccomp, 11: Create failed, 12: no timeout, 13: it spun, "
         "14: the wake was lost";
  munmap(shared, sizeof(idle::WakeWord));
}

TEST(FutexFaults, SpuriousFutexWakesDoNotEndAPark) {
  idle::WakeWord word;
  idle::IdleOptions options;
  options.governor = "block";
  absl::StatusOr<idle::Parker> parker = idle::Parker::Create(word, options);
  ASSERT_TRUE(parker.ok());
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    EXPECT_EQ(parker->Park(), idle::IdleResult::kWoken);
    returned = true;
  });
  // WakeWord is standard layout with its state first: the futex word.
  const auto& futex_word = *reinterpret_cast<const std::atomic<uint32_t>*>(&word);
  for (int i = 0; i < 200; ++i) {
    arch::FutexWake(futex_word, 1, arch::FutexScope::kPrivate);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    ASSERT_FALSE(returned.load()) << "a FUTEX_WAKE without Unpark ended the park";
  }
  word.Unpark();
  waiter.join();
  EXPECT_TRUE(returned.load());
}

}  // namespace
}  // namespace haltpool
