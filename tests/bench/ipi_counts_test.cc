// bench/ipi_counts: the Rescheduling and Function call rows of
// /proc/interrupts summed over the CPUs, on x86-64 and arm64 layouts, and
// clear errors for files without them or with broken counts.

#include "bench/ipi_counts.h"

#include "arch/system_files.h"
#include "gtest/gtest.h"

namespace haltpool::bench {
namespace {

// Captured on a 2-vCPU AMD EPYC guest (Linux 6.18), shortened.
constexpr char kX86[] =
    "           CPU0       CPU1       \n"
    " 24:          2          0  IO-APIC   5-edge      ACPI:Ged\n"
    " 36:          0     822272 PCI-MSIX-0000:00:02.0   1-edge      "
    "virtio1-req.0\n"
    "NMI:          0          0   Non-maskable interrupts\n"
    "LOC:    3744763    3763994   Local timer interrupts\n"
    "IWI:          0          1   IRQ work interrupts\n"
    "RES:     833567     745669   Rescheduling interrupts\n"
    "CAL:     837693     941529   Function call interrupts\n"
    "TLB:          0          0   TLB shootdowns\n"
    "ERR:          0\n"
    "MIS:          0\n";

// The arm64 layout: IPIn rows, four CPUs.
constexpr char kArm64[] =
    "           CPU0       CPU1       CPU2       CPU3       \n"
    " 11:      12345      23456      34567      45678     GICv3  27 Level     "
    "arch_timer\n"
    "IPI0:       100        200        300        400       Rescheduling "
    "interrupts\n"
    "IPI1:        10         20         30         40       Function call "
    "interrupts\n"
    "IPI2:         0          0          0          0       CPU stop "
    "interrupts\n"
    "Err:          0\n";

TEST(IpiCounts, SumsX86RowsOverCpus) {
  const absl::StatusOr<IpiCounts> c = ParseIpiCounts(kX86);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rescheduling, 833567u + 745669u);
  EXPECT_EQ(c->function_call, 837693u + 941529u);
  EXPECT_EQ(c->total(), 833567u + 745669u + 837693u + 941529u);
}

TEST(IpiCounts, FindsArm64RowsByDescription) {
  const absl::StatusOr<IpiCounts> c = ParseIpiCounts(kArm64);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rescheduling, 1000u);
  EXPECT_EQ(c->function_call, 100u);
}

TEST(IpiCounts, NoIpiRowsIsNotFound) {
  const absl::StatusOr<IpiCounts> c = ParseIpiCounts(
      "           CPU0\n"
      "LOC:       1234   Local timer interrupts\n");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
}

TEST(IpiCounts, BrokenCountIsAnError) {
  const absl::StatusOr<IpiCounts> c = ParseIpiCounts(
      "           CPU0       CPU1\n"
      "RES:         12        x3   Rescheduling interrupts\n");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("'x3' is not a count"),
            absl::string_view::npos);
}

TEST(IpiCounts, ShortRowIsAnError) {
  const absl::StatusOr<IpiCounts> c = ParseIpiCounts(
      "           CPU0       CPU1\n"
      "RES:         12   Rescheduling interrupts\n");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(IpiCounts, EmptyFileIsAnError) {
  EXPECT_EQ(ParseIpiCounts("").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(IpiCounts, ReadsThroughTheFileReader) {
  arch::FakeSystemFiles files({{kProcInterrupts, kArm64}});
  const absl::StatusOr<IpiCounts> c = ReadIpiCounts(files);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->total(), 1100u);
  EXPECT_EQ(ReadIpiCounts(arch::FakeSystemFiles()).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace haltpool::bench
