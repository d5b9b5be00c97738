// arch/thread_affinity.h: the cpulist spelling, the mask it reads is the
// kernel's, pinning holds for the calling thread only, a bad list is refused
// with its reason, and ScopedThreadCpu gives the mask back.

#include "arch/thread_affinity.h"

#include <sched.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace haltpool::arch {
namespace {

// A CPU number no machine this runs on has, for the kernel to refuse (as
// tests/runtime/topology_test.cc uses).
constexpr int kNoSuchCpu = 4000;

TEST(FormatCpuList, KernelCpulistSpelling) {
  EXPECT_EQ(FormatCpuList({}), "");
  EXPECT_EQ(FormatCpuList({0}), "0");
  EXPECT_EQ(FormatCpuList({1, 0}), "0-1");
  EXPECT_EQ(FormatCpuList({11, 3, 0, 1, 2, 8, 10, 11}), "0-3,8,10-11");
}

TEST(ThreadAffinity, ReadsTheKernelsMaskInOrder) {
  const std::vector<int> cpus = ThreadCpus();
  ASSERT_FALSE(cpus.empty());
  EXPECT_TRUE(std::is_sorted(cpus.begin(), cpus.end()));
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(static_cast<int>(cpus.size()), CPU_COUNT(&set));
  for (int cpu : cpus) EXPECT_TRUE(CPU_ISSET(cpu, &set)) << cpu;
}

TEST(ThreadAffinity, PinsTheCallingThreadOnly) {
  const std::vector<int> before = ThreadCpus();
  if (before.size() < 2) {
    GTEST_SKIP() << "one CPU allowed: pinning to it changes nothing to see";
  }
  const int last = before.back();
  std::thread t([&] {
    const int one[] = {last};
    ASSERT_TRUE(SetThreadCpus(one).ok());
    EXPECT_EQ(ThreadCpus(), std::vector<int>{last});
    EXPECT_EQ(sched_getcpu(), last);
  });
  t.join();
  EXPECT_EQ(ThreadCpus(), before);
}

TEST(ThreadAffinity, RefusesAnEmptyListANegativeCpuAndOneTheKernelLacks) {
  const std::vector<int> before = ThreadCpus();
  const absl::Status empty = SetThreadCpus({});
  EXPECT_EQ(empty.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.message().find("accepted: one CPU number or more"),
            std::string::npos)
      << empty;
  const int negative[] = {0, -3};
  const absl::Status bad = SetThreadCpus(negative);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("CPUs -3,0"), std::string::npos) << bad;
  EXPECT_NE(bad.message().find("accepted: CPU numbers from 0 to"),
            std::string::npos)
      << bad;
  const int huge[] = {kMaxCpuNumber + 1};
  EXPECT_EQ(SetThreadCpus(huge).code(), absl::StatusCode::kInvalidArgument);
  const int missing[] = {kNoSuchCpu};
  const absl::Status refused = SetThreadCpus(missing);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("4000"), std::string::npos) << refused;
  EXPECT_EQ(ThreadCpus(), before) << "a refusal changes nothing";
}

TEST(ThreadAffinity, AScopedPinGivesTheMaskBack) {
  if (ThreadCpus().size() < 2) {
    GTEST_SKIP() << "one CPU allowed: a pin to it leaves the mask as it was";
  }
  std::thread t([] {
    const std::vector<int> before = ThreadCpus();
    {
      const ScopedThreadCpu pin(before.front());
      ASSERT_TRUE(pin.status().ok()) << pin.status();
      EXPECT_EQ(ThreadCpus(), std::vector<int>{before.front()});
    }
    EXPECT_EQ(ThreadCpus(), before);
    {
      const ScopedThreadCpu none(-1);
      EXPECT_TRUE(none.status().ok());
      EXPECT_EQ(ThreadCpus(), before);
    }
    {
      const ScopedThreadCpu refused(kNoSuchCpu);
      EXPECT_FALSE(refused.status().ok());
      EXPECT_EQ(ThreadCpus(), before);
    }
    EXPECT_EQ(ThreadCpus(), before);
  });
  t.join();
}

}  // namespace
}  // namespace haltpool::arch
