// The file reader under hypervisor detection, CPU quota and topology
// (arch/system_files.h): the fake's map, and the real file system's NotFound
// and error reporting.

#include "arch/system_files.h"

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace haltpool::arch {
namespace {

using ::testing::HasSubstr;

TEST(SystemFilesTest, FakeMissingIsNotFound) {
  FakeSystemFiles files({{"/a", "x"}});
  EXPECT_EQ(*files.Read("/a"), "x");
  EXPECT_TRUE(absl::IsNotFound(files.Read("/b").status()));
  files.Set("/a", "y");
  EXPECT_EQ(*files.Read("/a"), "y");
}

TEST(SystemFilesTest, RealReadsProcAndReportsMissingAsNotFound) {
  absl::StatusOr<std::string> version = RealSystemFiles().Read("/proc/version");
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_THAT(*version, HasSubstr("Linux"));
  absl::StatusOr<std::string> missing =
      RealSystemFiles().Read("/proc/self/no-such-file");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr("no-such-file"));
}

TEST(SystemFilesTest, RealReportsOtherFailuresWithThePath) {
  absl::StatusOr<std::string> dir = RealSystemFiles().Read("/proc");
  ASSERT_FALSE(dir.ok());
  EXPECT_FALSE(absl::IsNotFound(dir.status())) << dir.status();
  EXPECT_THAT(dir.status().message(), HasSubstr("/proc"));
}

}  // namespace
}  // namespace haltpool::arch
