// The fixture of the pool tests that run on each I/O backend: parameterized
// by a BackendCase, with io_uring cases skipped, with the reason, where the
// machine has no io_uring (qemu-user, a seccomp policy).
//
//   class MyTest : public BackendTest {};
//   TEST_P(MyTest, Something) { ... GetParam().backend ... }
//   INSTANTIATE_TEST_SUITE_P(Backends, MyTest, AllBackends(),
//                            BackendTestName);

#ifndef HALTPOOL_TESTS_POOL_BACKEND_TEST_H_
#define HALTPOOL_TESTS_POOL_BACKEND_TEST_H_

#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "runtime/io/io_backend.h"

namespace haltpool {

struct BackendCase {
  IoBackend backend;
  const char* name;  // What PoolIo::backend() and WorkerStats report.

  friend void PrintTo(const BackendCase& c, std::ostream* os) { *os << c.name; }
};

// io_uring, then epoll.
inline auto AllBackends() {
  return testing::Values(BackendCase{IoBackend::kUring, "io_uring"},
                         BackendCase{IoBackend::kEpoll, "epoll"});
}

// "uring" or "epoll", for the test's name.
inline std::string BackendTestName(
    const testing::TestParamInfo<BackendCase>& info) {
  return std::string(IoBackendName(info.param.backend));
}

class BackendTest : public testing::TestWithParam<BackendCase> {
 protected:
  void SetUp() override {
    if (GetParam().backend == IoBackend::kUring) {
      absl::StatusOr<std::unique_ptr<IoReactor>> probe =
          MakeIoReactor(IoBackend::kUring, nullptr);
      if (!probe.ok()) GTEST_SKIP() << "no io_uring here: " << probe.status();
    }
  }
};

}  // namespace haltpool

#endif  // HALTPOOL_TESTS_POOL_BACKEND_TEST_H_
