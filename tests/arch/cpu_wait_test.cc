// The per-CPU wait backends (arch/cpu_wait.h): one suite that every wait
// mechanism passes, skipped with CheckWaitMechanism's reason where this CPU
// lacks it; then which mechanisms a given set of CPU features allows, and
// which one `auto` picks.

#include "arch/cpu_wait.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "arch/cpu_features.h"
#include "arch/cycle_clock.h"
#include "arch/wait_mechanism.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace haltpool::arch {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMs = 1000000;
constexpr int64_t kSecond = 1000 * kMs;

// --- Every mechanism --------------------------------------------------------

class CpuWaitMechanism : public ::testing::TestWithParam<WaitMechanism> {
 protected:
  void SetUp() override {
    const absl::Status s = CheckWaitMechanism(GetParam());
    if (!s.ok()) GTEST_SKIP() << s.message();
  }
  WaitMechanism m() const { return GetParam(); }
};

TEST_P(CpuWaitMechanism, ReturnsAtOnceWhenTheWordAlreadyDiffers) {
  std::atomic<uint32_t> word{5};
  const int64_t t0 = MonotonicNowNs();
  const int64_t deadline = t0 + 5 * kSecond;
  EXPECT_EQ(WaitWhileEqual(word, 4, deadline, m()), 5u);
  EXPECT_LT(MonotonicNowNs(), deadline) << "waited for the deadline";
  EXPECT_EQ(WaitWhileEqual(word, 0, kNoDeadline, m()), 5u);
}

TEST_P(CpuWaitMechanism, ReturnsTheOldValueOnceTheDeadlinePassed) {
  std::atomic<uint32_t> word{3};
  for (int64_t timeout : {2 * kMs, int64_t{20000}, int64_t{1}}) {
    SCOPED_TRACE(absl::StrCat("timeout ", timeout, " ns"));
    const int64_t deadline = MonotonicNowNs() + timeout;
    EXPECT_EQ(WaitWhileEqual(word, 3, deadline, m()), 3u);
    // A lower bound, not a speed: it never reports the deadline early.
    EXPECT_GE(MonotonicNowNs(), deadline);
  }
}

TEST_P(CpuWaitMechanism, PassedDeadlineReturnsTheOldValue) {
  std::atomic<uint32_t> word{3};
  EXPECT_EQ(WaitWhileEqual(word, 3, 0, m()), 3u);
  EXPECT_EQ(WaitWhileEqual(word, 3, MonotonicNowNs() - kSecond, m()), 3u);
}

TEST_P(CpuWaitMechanism, ReturnsTheNewValueWhenAnotherThreadStores) {
  for (int64_t deadline_after : {10 * kSecond, int64_t{-1}}) {
    SCOPED_TRACE(deadline_after < 0 ? "no deadline" : "10 s deadline");
    std::atomic<uint32_t> word{0};
    std::atomic<bool> started{false};
    std::thread storer([&] {
      while (!started.load(std::memory_order_acquire)) sched_yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      word.store(7, std::memory_order_release);
    });
    started.store(true, std::memory_order_release);
    const int64_t deadline =
        deadline_after < 0 ? kNoDeadline : MonotonicNowNs() + deadline_after;
    EXPECT_EQ(WaitWhileEqual(word, 0, deadline, m()), 7u);
    storer.join();
  }
}

TEST_P(CpuWaitMechanism, AcquiresWhatTheStorerWroteBefore) {
  // The returned value is read with acquire ordering: data written before
  // the store is visible after the wait.
  for (int round = 0; round < 200; ++round) {
    std::atomic<uint32_t> word{0};
    int data = 0;  // Plain.
    std::thread storer([&] {
      data = round + 1;
      word.store(1, std::memory_order_release);
    });
    ASSERT_EQ(WaitWhileEqual(word, 0, MonotonicNowNs() + 10 * kSecond, m()),
              1u);
    EXPECT_EQ(data, round + 1);
    storer.join();
  }
}

TEST_P(CpuWaitMechanism, NeverReturnsTheOldValueBeforeTheDeadline) {
  // Many short waits with random deadlines; each is checked against the
  // clock read right after it returned.
  std::atomic<uint32_t> word{0};
  std::minstd_rand rng(1);
  int waits = 0, early = 0;
  int64_t worst_ns = 0;
  const int64_t stop = MonotonicNowNs() + 30 * kMs;
  while (MonotonicNowNs() < stop) {
    const int64_t deadline =
        MonotonicNowNs() + 100 + static_cast<int64_t>(rng() % 3000);
    const uint32_t v = WaitWhileEqual(word, 0, deadline, m());
    const int64_t now = MonotonicNowNs();
    ++waits;
    ASSERT_EQ(v, 0u);
    if (now < deadline) {
      ++early;
      worst_ns = std::max(worst_ns, deadline - now);
    }
  }
  EXPECT_EQ(early, 0) << early << " of " << waits
                      << " waits returned before their deadline, the worst by "
                      << worst_ns << " ns";
}

INSTANTIATE_TEST_SUITE_P(
    AllMechanisms, CpuWaitMechanism, ::testing::ValuesIn(kAllWaitMechanisms),
    [](const ::testing::TestParamInfo<WaitMechanism>& info) {
      return std::string(WaitMechanismName(info.param));
    });

// --- Which mechanisms a CPU allows
// --------------------------------------------

TEST(CpuWaitSelection, BestPassesTheCheck) {
  const WaitMechanism best = BestWaitMechanism();
  EXPECT_TRUE(CheckWaitMechanism(best).ok())
      << WaitMechanismName(best) << ": " << CheckWaitMechanism(best);
  EXPECT_EQ(BestWaitMechanism(HostCpuFeatures()), best);
}

TEST(CpuWaitSelection, SpinWorksEverywhere) {
  EXPECT_TRUE(CheckWaitMechanism(WaitMechanism::kSpin).ok());
  EXPECT_TRUE(CheckWaitMechanism(WaitMechanism::kSpin, CpuFeatures{}).ok());
}

TEST(CpuWaitSelection, CheckNamesTheMechanismAndTheArchitecture) {
  int rejected = 0;
  for (WaitMechanism m : kAllWaitMechanisms) {
    const absl::Status s = CheckWaitMechanism(m);
    if (s.ok()) continue;
    ++rejected;
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(absl::StrCat("'", WaitMechanismName(m), "'")));
    EXPECT_THAT(std::string(s.message()), HasSubstr(HostCpuFeatures().arch));
  }
  EXPECT_GT(rejected, 0) << "no backend has every architecture's instructions";
}

TEST(CpuWaitSelection, HostFeaturesNameThisArchitecture) {
  const CpuFeatures& f = HostCpuFeatures();
  EXPECT_EQ(&f, &HostCpuFeatures()) << "computed once";
#if defined(HALTPOOL_ARCH_GENERIC)
  EXPECT_STREQ(f.arch, "generic");
#elif defined(__x86_64__)
  EXPECT_STREQ(f.arch, "x86_64");
  EXPECT_FALSE(f.evtstrm || f.wfxt) << "arm64 bits on x86";
#elif defined(__aarch64__)
  EXPECT_STREQ(f.arch, "aarch64");
  EXPECT_FALSE(f.waitpkg || f.mwaitx || f.hypervisor) << "x86 bits on arm64";
#elif defined(__s390x__)
  EXPECT_STREQ(f.arch, "s390x");
#else
  EXPECT_STREQ(f.arch, "generic");
#endif
}

TEST(CpuWaitSelection, DescribeCpuFeaturesListsEveryFlag) {
  CpuFeatures f;
  f.arch = "x86_64";
  f.waitpkg = true;
  f.hypervisor = true;
  EXPECT_EQ(DescribeCpuFeatures(f),
            "x86_64: waitpkg=yes mwaitx=no evtstrm=no wfxt=no hypervisor=yes");
}

// What a CheckWaitMechanism status on hand-built features says.
std::string Why(WaitMechanism m, const CpuFeatures& f) {
  const absl::Status s = CheckWaitMechanism(m, f);
  return s.ok() ? "OK" : std::string(s.message());
}

#if defined(HALTPOOL_ARCH_GENERIC) || \
    !(defined(__x86_64__) || defined(__aarch64__) || defined(__s390x__))

TEST(CpuWaitFeatures, GenericHasOnlySpin) {
  CpuFeatures f;
  f.waitpkg = f.mwaitx = f.evtstrm = f.wfxt = true;
  for (WaitMechanism m : kAllWaitMechanisms) {
    EXPECT_EQ(CheckWaitMechanism(m, f).ok(), m == WaitMechanism::kSpin)
        << WaitMechanismName(m);
  }
  EXPECT_THAT(Why(WaitMechanism::kPause, f), HasSubstr("only has spin"));
  EXPECT_EQ(BestWaitMechanism(f), WaitMechanism::kSpin);
}

#elif defined(__x86_64__)

TEST(CpuWaitFeatures, X86WithoutWaitpkgRejectsUmwaitAndTpause) {
  CpuFeatures f;
  f.arch = "x86_64";
  for (WaitMechanism m : {WaitMechanism::kUmwait, WaitMechanism::kTpause}) {
    const absl::Status s = CheckWaitMechanism(m, f);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(s.message()), HasSubstr("WAITPKG"));
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(absl::StrCat("'", WaitMechanismName(m), "'")));
    EXPECT_THAT(std::string(s.message()), HasSubstr("x86_64"));
  }
  f.waitpkg = true;
  EXPECT_EQ(Why(WaitMechanism::kUmwait, f), "OK");
  EXPECT_EQ(Why(WaitMechanism::kTpause, f), "OK");
}

TEST(CpuWaitFeatures, X86WithoutMwaitxRejectsIt) {
  CpuFeatures f;
  f.arch = "x86_64";
  f.waitpkg = true;  // Not a substitute.
  EXPECT_THAT(Why(WaitMechanism::kMwaitx, f), HasSubstr("MWAITX"));
  f.mwaitx = true;
  EXPECT_EQ(Why(WaitMechanism::kMwaitx, f), "OK");
}

TEST(CpuWaitFeatures, X86AlwaysHasSpinAndPauseButNoArmInstructions) {
  CpuFeatures f;
  f.arch = "x86_64";
  f.evtstrm = f.wfxt = true;  // Meaningless here.
  EXPECT_EQ(Why(WaitMechanism::kSpin, f), "OK");
  EXPECT_EQ(Why(WaitMechanism::kPause, f), "OK");
  for (WaitMechanism m :
       {WaitMechanism::kYield, WaitMechanism::kWfe, WaitMechanism::kWfet}) {
    EXPECT_THAT(Why(m, f), HasSubstr("not an x86-64 mechanism"))
        << WaitMechanismName(m);
  }
}

TEST(CpuWaitFeatures, X86BestPrefersUmwaitThenMwaitxThenPause) {
  CpuFeatures f;
  f.arch = "x86_64";
  EXPECT_EQ(BestWaitMechanism(f), WaitMechanism::kPause);
  f.mwaitx = true;
  EXPECT_EQ(BestWaitMechanism(f), WaitMechanism::kMwaitx);
  f.waitpkg = true;
  EXPECT_EQ(BestWaitMechanism(f), WaitMechanism::kUmwait);
  f.mwaitx = false;
  EXPECT_EQ(BestWaitMechanism(f), WaitMechanism::kUmwait);
}

#elif defined(__aarch64__)

TEST(CpuWaitFeatures, ArmWithoutEventStreamRejectsWfe) {
  CpuFeatures f;
  f.arch = "aarch64";
  const absl::Status s = CheckWaitMechanism(WaitMechanism::kWfe, f);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("HWCAP_EVTSTRM"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("'wfe'"));
  f.evtstrm = true;
  EXPECT_EQ(Why(WaitMechanism::kWfe, f), "OK");
}

TEST(CpuWaitFeatures, ArmWithoutWfxtRejectsWfet) {
  CpuFeatures f;
  f.arch = "aarch64";
  f.evtstrm = true;  // Not a substitute.
  EXPECT_THAT(Why(WaitMechanism::kWfet, f), HasSubstr("WFxT"));
  f.wfxt = true;
  EXPECT_EQ(Why(WaitMechanism::kWfet, f), "OK");
}

TEST(CpuWaitFeatures, ArmAlwaysHasSpinAndYieldButNoX86Instructions) {
  CpuFeatures f;
  f.arch = "aarch64";
  f.waitpkg = f.mwaitx = true;  // Meaningless here.
  EXPECT_EQ(Why(WaitMechanism::kSpin, f), "OK");
  EXPECT_EQ(Why(WaitMechanism::kYield, f), "OK");
  for (WaitMechanism m : {WaitMechanism::kPause, WaitMechanism::kUmwait,
                          WaitMechanism::kTpause, WaitMechanism::kMwaitx}) {
    EXPECT_THAT(Why(m, f), HasSubstr("not an arm64 mechanism"))
        << WaitMechanismName(m);
  }
}

TEST(CpuWaitFeatures, ArmBestPrefersWfetThenWfeThenYield) {
  CpuFeatures f;
  f.arch = "aarch64";
  EXPECT_EQ(BestWaitMechanism(f), WaitMechanism::kYield);
  f.evtstrm = true;
  EXPECT_EQ(BestWaitMechanism(f), WaitMechanism::kWfe);
  f.wfxt = true;
  EXPECT_EQ(BestWaitMechanism(f), WaitMechanism::kWfet);
}

#elif defined(__s390x__)

TEST(CpuWaitFeatures, S390xHasOnlySpin) {
  CpuFeatures f;
  f.arch = "s390x";
  f.waitpkg = f.mwaitx = f.evtstrm = f.wfxt = true;
  for (WaitMechanism m : kAllWaitMechanisms) {
    EXPECT_EQ(CheckWaitMechanism(m, f).ok(), m == WaitMechanism::kSpin)
        << WaitMechanismName(m);
  }
  EXPECT_THAT(Why(WaitMechanism::kPause, f),
              HasSubstr("no unprivileged wait instruction"));
  EXPECT_EQ(BestWaitMechanism(f), WaitMechanism::kSpin);
}

#endif

}  // namespace
}  // namespace haltpool::arch
