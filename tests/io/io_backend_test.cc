// Choosing the I/O backend (runtime/io/io_backend.h): names, parsing, and
// MakeIoReactor's fallback from io_uring to epoll, with io_uring_setup's
// failure forced through IoReactorOptions::fake_uring_setup_errno.

#include "runtime/io/io_backend.h"

#include <errno.h>
#include <string.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace haltpool {
namespace {

using testing::HasSubstr;

IoReactorOptions FailingUring(int error) {
  IoReactorOptions options;
  options.fake_uring_setup_errno = error;
  return options;
}

TEST(IoBackendNames, RoundTrip) {
  for (IoBackend b : {IoBackend::kAuto, IoBackend::kUring, IoBackend::kEpoll}) {
    absl::StatusOr<IoBackend> parsed = ParseIoBackend(IoBackendName(b));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, b);
  }
  EXPECT_EQ(IoBackendName(IoBackend::kAuto), "auto");
  EXPECT_EQ(IoBackendName(IoBackend::kUring), "uring");
  EXPECT_EQ(IoBackendName(IoBackend::kEpoll), "epoll");
}

TEST(IoBackendNames, BadValuesNameTheValueAndTheAcceptedNames) {
  for (const char* bad : {"", "io_uring", "URING", "Epoll", " auto", "auto ",
                          "poll", "uring,epoll"}) {
    SCOPED_TRACE(bad);
    absl::StatusOr<IoBackend> parsed = ParseIoBackend(bad);
    ASSERT_FALSE(parsed.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status()));
    EXPECT_THAT(parsed.status().message(),
                HasSubstr(std::string("'") + bad + "'"));
    EXPECT_THAT(parsed.status().message(), HasSubstr("auto|uring|epoll"));
  }
}

TEST(MakeIoReactor, EpollWhenAsked) {
  std::string reason;
  absl::StatusOr<std::unique_ptr<IoReactor>> r =
      MakeIoReactor(IoBackend::kEpoll, &reason);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->name(), "epoll");
  EXPECT_EQ(reason, "epoll: requested");
}

TEST(MakeIoReactor, AutoPrefersIoUringWhereItWorks) {
  std::string reason;
  absl::StatusOr<std::unique_ptr<IoReactor>> r =
      MakeIoReactor(IoBackend::kAuto, &reason);
  ASSERT_TRUE(r.ok()) << r.status();
  if ((*r)->name() == "epoll") {
    // This machine has no io_uring (qemu-user, seccomp, old kernel).
    EXPECT_THAT(reason, HasSubstr("epoll: io_uring"));
    GTEST_SKIP() << "no io_uring here: " << reason;
  }
  EXPECT_EQ((*r)->name(), "io_uring");
  EXPECT_EQ(reason, "io_uring: available");
}

TEST(MakeIoReactor, NullReasonIsAllowed) {
  EXPECT_TRUE(MakeIoReactor(IoBackend::kAuto, nullptr).ok());
  EXPECT_TRUE(MakeIoReactor(IoBackend::kEpoll, nullptr).ok());
  EXPECT_TRUE(
      MakeIoReactor(IoBackend::kAuto, nullptr, FailingUring(ENOSYS)).ok());
}

// io_uring missing (ENOSYS: qemu-user, kernels before 5.1) or forbidden
// (EPERM: a container's seccomp filter or io_uring_disabled; EACCES).
class UringSetupFails : public testing::TestWithParam<int> {};

TEST_P(UringSetupFails, AutoFallsBackToEpollAndSaysWhy) {
  const int error = GetParam();
  std::string reason;
  absl::StatusOr<std::unique_ptr<IoReactor>> r =
      MakeIoReactor(IoBackend::kAuto, &reason, FailingUring(error));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->name(), "epoll");
  EXPECT_EQ(reason,
            std::string("epoll: io_uring_setup failed: ") + strerror(error));
}

TEST_P(UringSetupFails, UringIsAnErrorNamingIoUringAndTheErrno) {
  const int error = GetParam();
  std::string reason = "untouched";
  absl::StatusOr<std::unique_ptr<IoReactor>> r =
      MakeIoReactor(IoBackend::kUring, &reason, FailingUring(error));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), error == ENOSYS
                                   ? absl::StatusCode::kUnimplemented
                                   : absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(r.status().message(), HasSubstr("io_uring"));
  EXPECT_THAT(r.status().message(), HasSubstr(strerror(error)));
  EXPECT_THAT(r.status().message(), HasSubstr("'uring'"));
  EXPECT_EQ(reason, "untouched");
}

TEST_P(UringSetupFails, EpollIsUnaffected) {
  std::string reason;
  absl::StatusOr<std::unique_ptr<IoReactor>> r =
      MakeIoReactor(IoBackend::kEpoll, &reason, FailingUring(GetParam()));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->name(), "epoll");
}

INSTANTIATE_TEST_SUITE_P(Errno, UringSetupFails,
                         testing::Values(ENOSYS, EPERM, EACCES),
                         [](const testing::TestParamInfo<int>& info) {
                           switch (info.param) {
                             case ENOSYS:
                               return std::string("ENOSYS");
                             case EPERM:
                               return std::string("EPERM");
                             default:
                               return std::string("EACCES");
                           }
                         });

TEST(MakeIoReactor, OtherSetupFailuresAreErrorsEvenForAuto) {
  // ENOMEM (RLIMIT_MEMLOCK before Linux 5.12) is io_uring present but short
  // of resources: an error to fix, not a reason to switch backends quietly.
  std::string reason = "untouched";
  absl::StatusOr<std::unique_ptr<IoReactor>> r =
      MakeIoReactor(IoBackend::kAuto, &reason, FailingUring(ENOMEM));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("io_uring"));
  EXPECT_THAT(r.status().message(), HasSubstr(strerror(ENOMEM)));
  EXPECT_EQ(reason, "untouched");
}

}  // namespace
}  // namespace haltpool
