// The futex(2) wrappers (arch/futex.h): results for a changed word, a
// deadline and a wake, the relative form, EINTR, and a word shared between
// processes.

#include "arch/futex.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <new>
#include <thread>
#include <vector>

#include "arch/cycle_clock.h"
#include "gtest/gtest.h"

namespace haltpool::arch {
namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t kSecond = 1000 * kMs;
constexpr FutexScope kScopes[] = {FutexScope::kPrivate, FutexScope::kShared};

const char* ScopeName(FutexScope s) {
  return s == FutexScope::kPrivate ? "private" : "shared";
}

void SleepMs(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// For readable failure messages.
const char* Name(FutexWaitResult r) {
  switch (r) {
    case FutexWaitResult::kWoken:
      return "kWoken";
    case FutexWaitResult::kValueChanged:
      return "kValueChanged";
    case FutexWaitResult::kTimedOut:
      return "kTimedOut";
  }
  return "?";
}

TEST(FutexWait, ValueChangedWhenTheWordDiffers) {
  for (FutexScope scope : kScopes) {
    SCOPED_TRACE(ScopeName(scope));
    std::atomic<uint32_t> word{1};
    EXPECT_EQ(FutexWaitUntil(word, 0, MonotonicNowNs() + 10 * kSecond, scope),
              FutexWaitResult::kValueChanged);
    EXPECT_EQ(FutexWaitUntil(word, 0, kNoDeadline, scope),
              FutexWaitResult::kValueChanged);
  }
}

TEST(FutexWait, TimesOutAtAnAbsoluteDeadline) {
  for (FutexScope scope : kScopes) {
    SCOPED_TRACE(ScopeName(scope));
    std::atomic<uint32_t> word{0};
    const int64_t deadline = MonotonicNowNs() + 2 * kMs;
    EXPECT_EQ(FutexWaitUntil(word, 0, deadline, scope),
              FutexWaitResult::kTimedOut);
    EXPECT_GE(MonotonicNowNs(), deadline) << "a lower bound, not a speed";
  }
}

TEST(FutexWait, PassedDeadlineTimesOutAtOnce) {
  std::atomic<uint32_t> word{0};
  for (int64_t deadline :
       {int64_t{0}, int64_t{-1}, std::numeric_limits<int64_t>::min(),
        MonotonicNowNs() - kSecond}) {
    EXPECT_EQ(FutexWaitUntil(word, 0, deadline, FutexScope::kPrivate),
              FutexWaitResult::kTimedOut)
        << deadline;
  }
}

TEST(FutexWake, NoWaiterWakesNobody) {
  std::atomic<uint32_t> word{0};
  EXPECT_EQ(FutexWake(word, 1, FutexScope::kPrivate), 0);
  EXPECT_EQ(
      FutexWake(word, std::numeric_limits<int>::max(), FutexScope::kShared), 0);
}

// One thread waits in `wait` (a FutexWaitUntil call on `word` == 0) while
// this one calls FutexWake without changing the word, until a call reports
// it woke a waiter. The waiter retries the spurious
// wake-ups the contract allows until the waker has announced its wake.
template <typename WaitFn>
void ExpectWokenByFutexWake(FutexScope scope, WaitFn wait) {
  std::atomic<uint32_t> word{0};
  std::atomic<bool> wake_sent{false};
  std::atomic<bool> waiting{false}, returned{false};
  FutexWaitResult result = FutexWaitResult::kTimedOut;
  int64_t waited_ns = 0;
  std::thread waiter([&] {
    waiting.store(true, std::memory_order_release);
    const int64_t t0 = MonotonicNowNs();
    for (;;) {
      result = wait(word);
      if (result != FutexWaitResult::kWoken) break;
      if (wake_sent.load(std::memory_order_acquire)) break;
      // A spurious wake-up before the real one: wait again.
    }
    waited_ns = MonotonicNowNs() - t0;
    returned.store(true, std::memory_order_release);
  });
  while (!waiting.load(std::memory_order_acquire)) sched_yield();
  SleepMs(5);
  int woken = 0;
  const int64_t give_up = MonotonicNowNs() + 10 * kSecond;
  while (woken == 0 && !returned.load(std::memory_order_acquire) &&
         MonotonicNowNs() < give_up) {
    wake_sent.store(true, std::memory_order_release);
    woken = FutexWake(word, 1, scope);
    if (woken == 0) SleepMs(1);  // Not in the kernel yet.
  }
  waiter.join();
  EXPECT_EQ(woken, 1) << "the waiter was not asleep to be woken";
  EXPECT_STREQ(Name(result), "kWoken")
      << "after waiting " << waited_ns << " ns";
}

TEST(FutexWake, WakesAWaiterOnAnotherThread) {
  for (FutexScope scope : kScopes) {
    SCOPED_TRACE(ScopeName(scope));
    ExpectWokenByFutexWake(scope, [scope](const std::atomic<uint32_t>& w) {
      return FutexWaitUntil(w, 0, MonotonicNowNs() + 20 * kSecond, scope);
    });
    ExpectWokenByFutexWake(scope, [scope](const std::atomic<uint32_t>& w) {
      return FutexWaitUntil(w, 0, kNoDeadline, scope);
    });
  }
}

TEST(FutexWake, CountLimitsHowManyWake) {
  // Three threads sleep on one word; a wake for 2 wakes two of them, and
  // the counts returned add up to the three that slept.
  constexpr int kWaiters = 3;
  std::atomic<uint32_t> word{0};
  std::atomic<int> announced{0}, returned{0};
  std::vector<FutexWaitResult> results(kWaiters, FutexWaitResult::kTimedOut);
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      announced.fetch_add(1);
      results[i] = FutexWaitUntil(word, 0, MonotonicNowNs() + 20 * kSecond,
                                  FutexScope::kPrivate);
      returned.fetch_add(1);
    });
  }
  while (announced.load() < kWaiters) sched_yield();
  SleepMs(20);  // Into FUTEX_WAIT.
  const int first = FutexWake(word, 2, FutexScope::kPrivate);
  EXPECT_EQ(first, 2);
  int total = first;
  const int64_t give_up = MonotonicNowNs() + 10 * kSecond;
  while (returned.load() < kWaiters && MonotonicNowNs() < give_up) {
    total +=
        FutexWake(word, std::numeric_limits<int>::max(), FutexScope::kPrivate);
    SleepMs(1);
  }
  for (std::thread& t : waiters) t.join();
  EXPECT_EQ(total, kWaiters);
  for (FutexWaitResult r : results) EXPECT_EQ(r, FutexWaitResult::kWoken);
}

TEST(FutexWait, SignalsDoNotEndTheWait) {
  // EINTR is retried against the same absolute deadline: a signal with a
  // handler (no SA_RESTART) neither ends the wait early nor stretches it.
  struct sigaction sa = {};
  sa.sa_handler = [](int) {};
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  struct sigaction old = {};
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  std::atomic<uint32_t> word{0};
  std::atomic<bool> waiting{false}, done{false};
  FutexWaitResult result = FutexWaitResult::kWoken;
  int64_t deadline = 0, returned_at = 0;
  std::thread waiter([&] {
    deadline = MonotonicNowNs() + 100 * kMs;
    waiting.store(true, std::memory_order_release);
    result = FutexWaitUntil(word, 0, deadline, FutexScope::kPrivate);
    returned_at = MonotonicNowNs();
    done.store(true, std::memory_order_release);
  });
  while (!waiting.load(std::memory_order_acquire)) sched_yield();
  int sent = 0;
  while (!done.load(std::memory_order_acquire) && sent < 20) {
    SleepMs(3);
    if (!done.load(std::memory_order_acquire)) {
      pthread_kill(waiter.native_handle(), SIGUSR1);
      ++sent;
    }
  }
  waiter.join();
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_GT(sent, 0);
  EXPECT_EQ(result, FutexWaitResult::kTimedOut);
  EXPECT_GE(returned_at, deadline);
}

// A word in memory shared with a fork()ed child.
struct SharedFutex {
  std::atomic<uint32_t> word{0};
  std::atomic<uint32_t> waiting{0};
  std::atomic<uint32_t> wake_sent{0};
};

TEST(FutexShared, WakesAWaiterInAnotherProcess) {
  void* mem = mmap(nullptr, sizeof(SharedFutex), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  SharedFutex* s = new (mem) SharedFutex;
  fflush(nullptr);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child waits (no gtest here: the exit status is the verdict).
    s->waiting.store(1, std::memory_order_release);
    for (;;) {
      const FutexWaitResult r = FutexWaitUntil(
          s->word, 0, MonotonicNowNs() + 20 * kSecond, FutexScope::kShared);
      if (r == FutexWaitResult::kTimedOut) _exit(1);
      if (r == FutexWaitResult::kValueChanged) _exit(2);
      if (s->wake_sent.load(std::memory_order_acquire)) _exit(0);
    }
  }
  while (s->waiting.load(std::memory_order_acquire) == 0) sched_yield();
  int woken = 0;
  const int64_t give_up = MonotonicNowNs() + 10 * kSecond;
  while (woken == 0 && MonotonicNowNs() < give_up) {
    s->wake_sent.store(1, std::memory_order_release);
    woken = FutexWake(s->word, 1, FutexScope::kShared);
    if (woken == 0) SleepMs(1);
  }
  int status = 0;
  if (woken == 0) kill(pid, SIGKILL);  // Never woken: do not wait 20 s.
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(woken, 1);
  ASSERT_TRUE(WIFEXITED(status))
      << "child killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "child: 1 = timed out, 2 = saw the word change (it never did)";
  s->~SharedFutex();
  munmap(mem, sizeof(SharedFutex));
}

TEST(FutexShared, ChildWakesAWaitingParent) {
  void* mem = mmap(nullptr, sizeof(SharedFutex), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  SharedFutex* s = new (mem) SharedFutex;
  fflush(nullptr);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int64_t give_up = MonotonicNowNs() + 10 * kSecond;
    while (s->waiting.load(std::memory_order_acquire) == 0) {
      if (MonotonicNowNs() > give_up) _exit(1);
      sched_yield();
    }
    SleepMs(20);
    s->word.store(1, std::memory_order_release);
    FutexWake(s->word, 1, FutexScope::kShared);
    _exit(0);
  }
  s->waiting.store(1, std::memory_order_release);
  FutexWaitResult r;
  do {
    r = FutexWaitUntil(s->word, 0, MonotonicNowNs() + 20 * kSecond,
                       FutexScope::kShared);
  } while (r == FutexWaitResult::kWoken && s->word.load() == 0);
  EXPECT_NE(r, FutexWaitResult::kTimedOut);
  EXPECT_EQ(s->word.load(), 1u);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  s->~SharedFutex();
  munmap(mem, sizeof(SharedFutex));
}

}  // namespace
}  // namespace haltpool::arch
