// arch::ZeroPages: whole pages, zeroed, writable, and not resident until
// touched.

#include "arch/zero_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace haltpool::arch {
namespace {

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

TEST(ZeroPages, RoundsUpToWholePages) {
  EXPECT_EQ(ZeroPages(1).size(), PageSize());
  EXPECT_EQ(ZeroPages(PageSize()).size(), PageSize());
  EXPECT_EQ(ZeroPages(PageSize() + 1).size(), 2 * PageSize());
  EXPECT_EQ(ZeroPages(0).size(), PageSize());
}

TEST(ZeroPages, StartsZeroedAndIsWritable) {
  ZeroPages pages(3 * PageSize());
  auto* bytes = static_cast<unsigned char*>(pages.data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes) % PageSize(), 0u);
  for (size_t i = 0; i < pages.size(); ++i) ASSERT_EQ(bytes[i], 0) << i;
  bytes[pages.size() - 1] = 7;
  EXPECT_EQ(bytes[pages.size() - 1], 7);
}

TEST(ZeroPages, OnlyTouchedPagesAreResident) {
  constexpr size_t kPages = 64;
  ZeroPages pages(kPages * PageSize());
  auto* bytes = static_cast<unsigned char*>(pages.data());
  bytes[0] = 1;
  bytes[5 * PageSize()] = 1;
  std::vector<unsigned char> resident(kPages);
  ASSERT_EQ(mincore(pages.data(), pages.size(), resident.data()), 0);
  int count = 0;
  for (unsigned char r : resident) count += r & 1;
  EXPECT_EQ(count, 2);
  EXPECT_TRUE(resident[0] & 1);
  EXPECT_TRUE(resident[5] & 1);
}

}  // namespace
}  // namespace haltpool::arch
