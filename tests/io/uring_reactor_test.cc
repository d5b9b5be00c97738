// What only the io_uring backend (runtime/io/uring_reactor.h) promises:
// setup errors and their codes, the ring sizes, completions visible without
// a system call, and cancellation of what is in flight at destruction.
// Skipped, with the reason, where this machine has no io_uring.

#include "runtime/io/uring_reactor.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "arch/cycle_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace haltpool {
namespace {

using arch::kNoDeadline;
using arch::MonotonicNowNs;
using testing::HasSubstr;

constexpr int64_t kMs = 1000000;
constexpr int64_t kSecond = 1000 * kMs;

class UringReactorTest : public testing::Test {
 protected:
  void SetUp() override {
    IoReactorOptions options;
    options.entries = 8;
    absl::StatusOr<std::unique_ptr<UringReactor>> r =
        UringReactor::Create(options);
    if (!r.ok()) {
      ASSERT_TRUE(absl::IsUnimplemented(r.status()) ||
                  absl::IsPermissionDenied(r.status()))
          << r.status();
      GTEST_SKIP() << "no io_uring here: " << r.status().message();
    }
    reactor_ = std::move(*r);
  }

  std::unique_ptr<UringReactor> reactor_;
};

TEST(UringReactorCreate, FakeSetupErrnoGivesTheMatchingCode) {
  struct Case {
    int error;
    absl::StatusCode code;
  };
  for (const Case& c : {Case{ENOSYS, absl::StatusCode::kUnimplemented},
                        Case{EPERM, absl::StatusCode::kPermissionDenied},
                        Case{EACCES, absl::StatusCode::kPermissionDenied},
                        Case{ENOMEM, absl::StatusCode::kResourceExhausted},
                        Case{EINVAL, absl::StatusCode::kInvalidArgument}}) {
    SCOPED_TRACE(strerror(c.error));
    IoReactorOptions options;
    options.fake_uring_setup_errno = c.error;
    absl::StatusOr<std::unique_ptr<UringReactor>> r =
        UringReactor::Create(options);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code);
    EXPECT_EQ(r.status().message(),
              std::string("io_uring_setup failed: ") + strerror(c.error));
  }
}

TEST(UringReactorCreate, EachTaskRunModeIsSetUpOrSaysWhyNot) {
  for (IoTaskRun mode :
       {IoTaskRun::kInterrupt, IoTaskRun::kCoop, IoTaskRun::kDefer}) {
    SCOPED_TRACE(kIoTaskRuns.Name(mode));
    IoReactorOptions options;
    options.task_run = mode;
    absl::StatusOr<std::unique_ptr<UringReactor>> r =
        UringReactor::Create(options);
    if (absl::IsUnimplemented(r.status()) ||
        absl::IsPermissionDenied(r.status())) {
      GTEST_SKIP() << "no io_uring here: " << r.status().message();
    }
    ASSERT_TRUE(r.ok()) << r.status();
    const std::string setup((*r)->setup());
    if ((*r)->task_run() != mode) {
      // An older kernel: the fall-back must say what it refused.
      EXPECT_THAT(setup, HasSubstr("the kernel refused")) << setup;
    } else {
      EXPECT_THAT(setup,
                  testing::StartsWith(std::string(kIoTaskRuns.Name(mode))))
          << setup;
    }
  }
}

TEST(UringReactorCreate, RefusedTaskRunFlagsFallBackToMilderModes) {
  IoReactorOptions options;
  options.task_run = IoTaskRun::kDefer;
  options.fake_refused_setup_flags = IORING_SETUP_DEFER_TASKRUN;
  absl::StatusOr<std::unique_ptr<UringReactor>> r =
      UringReactor::Create(options);
  if (absl::IsUnimplemented(r.status()) ||
      absl::IsPermissionDenied(r.status())) {
    GTEST_SKIP() << "no io_uring here: " << r.status().message();
  }
  ASSERT_TRUE(r.ok()) << r.status();
  if ((*r)->task_run() == IoTaskRun::kCoop) {
    EXPECT_EQ((*r)->setup(),
              "coop (COOP_TASKRUN|TASKRUN_FLAG); the kernel refused "
              "SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG (EINVAL)");
  }

  // Both flag sets refused: no flags at all, and both refusals named.
  options.fake_refused_setup_flags = IORING_SETUP_TASKRUN_FLAG;
  r = UringReactor::Create(options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->task_run(), IoTaskRun::kInterrupt);
  EXPECT_EQ((*r)->setup(),
            "interrupt (no task-run flags); the kernel refused "
            "SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG (EINVAL); the kernel "
            "refused COOP_TASKRUN|TASKRUN_FLAG (EINVAL)");
}

TEST(UringReactorCreate, ZeroEntriesIsInvalid) {
  IoReactorOptions options;
  options.entries = 0;
  absl::StatusOr<std::unique_ptr<UringReactor>> r =
      UringReactor::Create(options);
  ASSERT_FALSE(r.ok());
  if (absl::IsUnimplemented(r.status()) ||
      absl::IsPermissionDenied(r.status())) {
    GTEST_SKIP() << "no io_uring here: " << r.status().message();
  }
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
}

TEST_F(UringReactorTest, RingSizesAreWhatWasAsked) {
  EXPECT_EQ(reactor_->sq_entries(), 8u);
  EXPECT_EQ(reactor_->cq_entries(), 16u);
}

TEST_F(UringReactorTest, CompletionReadyOnceTheCqeIsPosted) {
  EXPECT_FALSE(reactor_->CompletionReady());
  bool ran = false;
  reactor_->Timeout(1 * kMs, [&](int r) {
    EXPECT_EQ(r, 0) << "-ETIME is reported as 0";
    ran = true;
  });
  EXPECT_FALSE(reactor_->CompletionReady()) << "not even submitted";
  ASSERT_TRUE(reactor_->WaitUntil(MonotonicNowNs() + 20 * kSecond));
  EXPECT_TRUE(reactor_->CompletionReady());
  EXPECT_FALSE(ran);
  EXPECT_EQ(reactor_->ReapCompletions(), 1);
  EXPECT_TRUE(ran);
  EXPECT_FALSE(reactor_->CompletionReady());
}

TEST_F(UringReactorTest, AWakeAloneMayLookLikeACompletion) {
  reactor_->Wake();
  // The eventfd poll's CQE is posted by task work; waiting sees it.
  ASSERT_TRUE(reactor_->WaitUntil(MonotonicNowNs() + 20 * kSecond));
  EXPECT_EQ(reactor_->ReapCompletions(), 0);
  EXPECT_FALSE(reactor_->WaitUntil(MonotonicNowNs() + 5 * kMs));
}

TEST_F(UringReactorTest, FullSubmissionQueueIsSubmittedNotDropped) {
  // 100 operations into 8 SQ slots with no reaping in between.
  int fired = 0;
  for (int i = 0; i < 100; ++i) reactor_->Timeout(0, [&](int) { ++fired; });
  EXPECT_EQ(reactor_->in_flight(), 100u);
  const int64_t give_up = MonotonicNowNs() + 20 * kSecond;
  while (fired < 100 && MonotonicNowNs() < give_up) {
    reactor_->ReapCompletions();
    if (fired < 100) reactor_->WaitUntil(give_up);
  }
  EXPECT_EQ(fired, 100);
  EXPECT_EQ(reactor_->in_flight(), 0u);
}

TEST_F(UringReactorTest, DestructorCancelsUnsubmittedAndSubmittedWork) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  char in_kernel[4] = {}, queued[4] = {};
  bool ran = false;
  reactor_->Recv(sv[0], in_kernel, sizeof(in_kernel), [&](int) { ran = true; });
  reactor_->Timeout(3600 * kSecond, [&](int) { ran = true; });
  reactor_->ReapCompletions();  // Both submitted.
  // Still in the SQ: never reaches the kernel.
  reactor_->Send(sv[0], "gone", 4, [&](int) { ran = true; });
  reactor_->Recv(sv[0], queued, sizeof(queued), [&](int) { ran = true; });
  const int64_t start = MonotonicNowNs();
  reactor_.reset();
  EXPECT_LT(MonotonicNowNs() - start, 2 * kSecond);
  EXPECT_FALSE(ran);
  char buf[8];
  EXPECT_EQ(recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT), -1)
      << "the queued Send never ran";
  ASSERT_EQ(write(sv[1], "late", 4), 4);
  usleep(5000);
  EXPECT_EQ(in_kernel[0], '\0');
  EXPECT_EQ(queued[0], '\0');
  close(sv[0]);
  close(sv[1]);
}

TEST_F(UringReactorTest, WaitUntilSubmitsQueuedOperationsFirst) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  int sent = -1;
  reactor_->Send(sv[0], "abc", 3, [&](int r) { sent = r; });
  // The Send completes only if WaitUntil submitted it.
  ASSERT_TRUE(reactor_->WaitUntil(MonotonicNowNs() + 20 * kSecond));
  EXPECT_EQ(reactor_->ReapCompletions(), 1);
  EXPECT_EQ(sent, 3);
  char buf[8];
  EXPECT_EQ(read(sv[1], buf, sizeof(buf)), 3);
  close(sv[0]);
  close(sv[1]);
}

}  // namespace
}  // namespace haltpool
