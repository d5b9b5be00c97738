// Hypervisor detection (arch/hypervisor.h) against captures from real
// machines, on any architecture.
//
// tests/arch/testdata/ holds one directory per machine. A file's path under
// the directory is its absolute path on that machine (proc/sysinfo is
// /proc/sysinfo); cpuid.txt, where present, is CPU 0 as `cpuid -r` printed
// it. proc-stat/ is not a machine: it holds /proc/stat samples named after
// the kernel or machine they come from.
//
// The test binary takes the testdata directory as its first argument (Bazel
// passes it); without one it looks for tests/arch/testdata under the current
// directory, then next to this source file (tools/cross-test runs the binary
// outside the tree, but compiles this file by its absolute path).

#include "arch/hypervisor.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "arch/platform.h"
#include "arch/system_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace haltpool::arch {
namespace {

namespace fs = std::filesystem;

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// Where the captures are; set by main().
std::string g_testdata;  // NOLINT: test-wide setting

// The name of the file in a capture directory that holds `cpuid -r` output.
constexpr char kCpuidDump[] = "cpuid.txt";
// The directory of /proc/stat samples, which is not a machine.
constexpr char kProcStatSamples[] = "proc-stat";

absl::StatusOr<std::string> ReadHostFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot open ", path.string()));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Parses "0x1234abcd" into `out`.
bool ParseHex32(absl::string_view s, uint32_t* out) {
  if (!absl::ConsumePrefix(&s, "0x")) return false;
  return absl::SimpleHexAtoi(s, out);
}

// Parses `cpuid -r` output for CPU 0: "CPU 0:", then lines
// "   0x40000000 0x00: eax=0x... ebx=0x... ecx=0x... edx=0x...". Subleaves
// other than 0 and CPUs other than 0 are skipped. InvalidArgument naming the
// line for anything else.
absl::StatusOr<CpuidLeaves> ParseCpuidDump(absl::string_view text) {
  CpuidLeaves leaves;
  int cpu = -1;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (absl::ConsumePrefix(&line, "CPU ")) {
      if (!absl::ConsumeSuffix(&line, ":") || !absl::SimpleAtoi(line, &cpu)) {
        return absl::InvalidArgumentError(absl::StrCat("bad CPU line: ", line));
      }
      continue;
    }
    std::vector<absl::string_view> words =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    uint32_t leaf = 0, subleaf = 0;
    CpuidRegs regs;
    if (words.size() != 6 || !ParseHex32(words[0], &leaf) ||
        !absl::ConsumeSuffix(&words[1], ":") ||
        !ParseHex32(words[1], &subleaf) ||
        !absl::ConsumePrefix(&words[2], "eax=") ||
        !ParseHex32(words[2], &regs.eax) ||
        !absl::ConsumePrefix(&words[3], "ebx=") ||
        !ParseHex32(words[3], &regs.ebx) ||
        !absl::ConsumePrefix(&words[4], "ecx=") ||
        !ParseHex32(words[4], &regs.ecx) ||
        !absl::ConsumePrefix(&words[5], "edx=") ||
        !ParseHex32(words[5], &regs.edx) || cpu < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("not a `cpuid -r` line: '", line, "'"));
    }
    if (cpu == 0 && subleaf == 0) leaves[leaf] = regs;
  }
  return leaves;
}

// One machine's capture: its files and, for x86-64, its CPUID leaves.
struct Capture {
  FakeSystemFiles files;
  std::vector<std::string> paths;  // Absolute paths on the machine.
  CpuidLeaves cpuid;               // Empty where there is no cpuid.txt.
};

// Loads tests/arch/testdata/`name`: every regular file below it becomes the
// file at the same absolute path, except cpuid.txt, which is parsed.
absl::StatusOr<Capture> LoadCapture(absl::string_view name) {
  const fs::path dir = fs::path(g_testdata) / std::string(name);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("no capture ", dir.string()));
  }
  Capture capture;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const fs::path relative = it->path().lexically_relative(dir);
    absl::StatusOr<std::string> content = ReadHostFile(it->path());
    if (!content.ok()) return content.status();
    if (relative == kCpuidDump) {
      absl::StatusOr<CpuidLeaves> leaves = ParseCpuidDump(*content);
      if (!leaves.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(it->path().string(), ": ", leaves.status().message()));
      }
      capture.cpuid = *std::move(leaves);
      continue;
    }
    const std::string path = "/" + relative.generic_string();
    capture.files.Set(path, *content);
    capture.paths.push_back(path);
  }
  if (ec) {
    return absl::InternalError(
        absl::StrCat("walking ", dir.string(), ": ", ec.message()));
  }
  return capture;
}

// --- Every capture -----------------------------------------------------------

struct Expected {
  const char* dir;
  HostEnvironment kind;
  const char* vendor;
  bool dedicated_hint;
  bool steal_time;
  bool poll_control;
  const char* source;  // Exactly.
};

constexpr char kDmi[] = "/sys/class/dmi/id/sys_vendor";
constexpr char kDt[] = "/proc/device-tree/hypervisor/compatible";
constexpr char kSysinfoVm[] = "/proc/sysinfo VM00 Control Program";
constexpr char kSysinfoLpar[] = "/proc/sysinfo LPAR lines, no VM00";

using E = HostEnvironment;

const Expected kCaptures[] = {
    // arm64: device tree, /sys/hypervisor, DMI.
    {"aarch64-bare-metal-altra", E::kBareMetal, "", false, false, false,
     "/sys/class/dmi/id/sys_vendor (no hypervisor vendor)"},
    {"aarch64-bare-metal-rpi4", E::kBareMetal, "", false, false, false,
     "no hypervisor node, /sys/hypervisor or DMI vendor"},
    {"aarch64-ec2-graviton", E::kKvmShared, "Amazon EC2 m7g.large", false,
     false, false, kDmi},
    {"aarch64-ec2-metal", E::kBareMetal, "", false, false, false,
     "/sys/class/dmi/id/sys_vendor (Amazon EC2 c7g.metal)"},
    {"aarch64-ec2-metal-graviton4", E::kBareMetal, "", false, false, false,
     "/sys/class/dmi/id/sys_vendor (Amazon EC2 m8g.metal-24xl)"},
    {"aarch64-hyperv-azure", E::kHyperV,
     "Microsoft Corporation Virtual Machine", false, false, false, kDmi},
    {"aarch64-kvm-devicetree", E::kKvmShared, "KVM", false, false, false, kDt},
    {"aarch64-kvm-qemu", E::kKvmShared, "QEMU KVM Virtual Machine", false,
     false, false, kDmi},
    {"aarch64-qemu-tcg", E::kUnknownVm, "QEMU QEMU Virtual Machine", false,
     false, false, kDmi},
    {"aarch64-vmware", E::kVmware, "VMware, Inc. VMware20,1", false, false,
     false, kDmi},
    {"aarch64-xen", E::kXen, "Xen", false, true, false, kDt},
    // s390x: /proc/sysinfo.
    {"s390x-kvm", E::kKvmS390, "KVM/Linux", false, true, false, kSysinfoVm},
    {"s390x-lpar-dedicated", E::kLpar, "PR/SM LPAR LNXPRD01", true, true, false,
     kSysinfoLpar},
    {"s390x-lpar-shared", E::kLpar, "PR/SM LPAR LNXDEV02", false, true, false,
     kSysinfoLpar},
    {"s390x-zvm", E::kZvm, "z/VM 7.3.0", false, true, false, kSysinfoVm},
    // x86-64: CPUID.
    {"x86_64-bare-metal-epyc", E::kBareMetal, "", false, false, false,
     "cpuid 1 ecx[31] clear"},
    {"x86_64-bare-metal-xeon", E::kBareMetal, "", false, false, false,
     "cpuid 1 ecx[31] clear"},
    {"x86_64-hyperv-azure", E::kHyperV, "Microsoft Hyper-V", false, false,
     false, "cpuid 0x40000000 \"Microsoft Hv\""},
    {"x86_64-kvm-dedicated", E::kKvmDedicated, "KVM", true, true, true,
     "cpuid 0x40000000 \"KVMKVMKVM\", 0x40000001 edx[0] KVM_HINTS_REALTIME "
     "set"},
    {"x86_64-kvm-hyperv-enlightened", E::kKvmShared,
     "KVM, with Hyper-V's interface at 0x40000000", false, true, true,
     "cpuid 0x40000100 \"KVMKVMKVM\", 0x40000101 edx[0] KVM_HINTS_REALTIME "
     "clear"},
    {"x86_64-kvm-shared-epyc", E::kKvmShared, "KVM", false, true, true,
     "cpuid 0x40000000 \"KVMKVMKVM\", 0x40000001 edx[0] KVM_HINTS_REALTIME "
     "clear"},
    {"x86_64-qemu-tcg", E::kUnknownVm, "QEMU TCG (emulation)", false, false,
     false, "cpuid 0x40000000 \"TCGTCGTCGTCG\""},
    {"x86_64-vmware-esxi", E::kVmware, "VMware", false, false, false,
     "cpuid 0x40000000 \"VMwareVMware\""},
    {"x86_64-xen-hvm", E::kXen, "Xen", false, true, false,
     "cpuid 0x40000000 \"XenVMMXenVMM\""},
    {"x86_64-xen-viridian", E::kXen,
     "Xen, with Hyper-V's interface at 0x40000000", false, true, false,
     "cpuid 0x40000100 \"XenVMMXenVMM\""},
};

void PrintTo(const Expected& e, std::ostream* os) { *os << e.dir; }

class HypervisorCaptureTest : public ::testing::TestWithParam<Expected> {};

TEST_P(HypervisorCaptureTest, DetectsTheMachine) {
  const Expected& want = GetParam();
  absl::StatusOr<Capture> capture = LoadCapture(want.dir);
  ASSERT_TRUE(capture.ok()) << capture.status();
  const bool x86 = absl::StartsWith(want.dir, "x86_64-");
  ASSERT_EQ(!capture->cpuid.empty(), x86)
      << "x86-64 captures have cpuid.txt, the others none";
  if (x86) {
    ASSERT_TRUE(capture->cpuid.count(1)) << "cpuid.txt lacks leaf 1";
  } else {
    ASSERT_THAT(capture->paths, ::testing::Not(IsEmpty()));
  }

  const HypervisorInfo info = DetectHypervisor(capture->cpuid, capture->files);
  EXPECT_EQ(HostEnvironmentName(info.kind), HostEnvironmentName(want.kind));
  EXPECT_EQ(info.vendor, want.vendor);
  EXPECT_EQ(info.dedicated_hint, want.dedicated_hint);
  EXPECT_EQ(info.steal_time, want.steal_time);
  EXPECT_EQ(info.poll_control, want.poll_control);
  EXPECT_EQ(info.source, want.source);
  if (info.kind != E::kKvmShared && info.kind != E::kKvmDedicated) {
    EXPECT_EQ(info.kvm_features, 0u);
    EXPECT_EQ(info.kvm_hints, 0u);
  }
  const std::string line = DescribeHypervisor(info);
  EXPECT_THAT(line, StartsWith(std::string(HostEnvironmentName(want.kind))));
  EXPECT_THAT(line, HasSubstr(want.source));

  // A capture's /proc/stat, where it has one, parses (tests/arch/
  // proc_stat_test.cc tests the reader itself).
  if (capture->files.Read(kProcStat).ok()) {
    absl::StatusOr<CpuTimes> times = ReadCpuTimes(capture->files);
    EXPECT_TRUE(times.ok()) << times.status();
  }
}

std::string CaptureName(const ::testing::TestParamInfo<Expected>& p) {
  return absl::StrReplaceAll(p.param.dir, {{"-", "_"}});
}

INSTANTIATE_TEST_SUITE_P(Captures, HypervisorCaptureTest,
                         ::testing::ValuesIn(kCaptures), CaptureName);

TEST(HypervisorCapturesTest, EveryDirectoryIsInTheTable) {
  std::set<std::string> table;
  for (const Expected& e : kCaptures) table.insert(e.dir);
  std::set<std::string> dirs;
  std::error_code ec;
  for (const fs::directory_entry& d : fs::directory_iterator(g_testdata, ec)) {
    if (d.is_directory() && d.path().filename() != kProcStatSamples) {
      dirs.insert(d.path().filename().string());
    }
  }
  ASSERT_FALSE(ec) << g_testdata << ": " << ec.message();
  EXPECT_EQ(dirs, table);
}

TEST(HypervisorCapturesTest, EveryEnvironmentHasACapture) {
  std::set<HostEnvironment> covered;
  for (const Expected& e : kCaptures) covered.insert(e.kind);
  for (HostEnvironment e : kAllHostEnvironments) {
    EXPECT_TRUE(covered.count(e)) << HostEnvironmentName(e);
  }
}

// --- CPUID from recorded registers -------------------------------------------

// "KVMKVMKVM\0\0\0" as KVM returns it from 0x40000000.
constexpr CpuidRegs kKvmSignature = {0x40000001, 0x4b4d564b, 0x564b4d56,
                                     0x0000004d};
// "Microsoft Hv", offered by Hyper-V, and by KVM and Xen for Windows guests.
constexpr CpuidRegs kHyperVSignature = {0x4000000b, 0x7263694d, 0x666f736f,
                                        0x76482074};
// Hyper-V's interface id "Hv#1" in 0x40000001 EAX: as KVM feature bits it
// would read as poll_control and more.
constexpr CpuidRegs kHyperVInterface = {0x31237648, 0, 0, 0};
// Leaf 1 with ECX[31], the hypervisor bit (Ice Lake under KVM).
constexpr CpuidRegs kLeaf1Guest = {0x000606a6, 0x00010800, 0xfeda3223,
                                   0x1f8bfbff};
// Leaf 1 on bare metal (Cascade Lake).
constexpr CpuidRegs kLeaf1Metal = {0x00050657, 0x00400800, 0x7ffefbff,
                                   0xbfebfbff};

TEST(CpuidSignatureTest, LittleEndianBytesOfEbxEcxEdx) {
  EXPECT_EQ(CpuidSignature(kKvmSignature), std::string("KVMKVMKVM\0\0\0", 12));
  EXPECT_EQ(CpuidSignature(kHyperVSignature), "Microsoft Hv");
  EXPECT_EQ(CpuidSignature({0, 0x61774d56, 0x4d566572, 0x65726177}),
            "VMwareVMware");
  EXPECT_EQ(CpuidSignature({0, 0x566e6558, 0x65584d4d, 0x4d4d566e}),
            "XenVMMXenVMM");
  EXPECT_EQ(CpuidSignature({}), std::string(12, '\0'));
}

TEST(CpuidSignatureTest, KvmFeatureNames) {
  // x86_64-kvm-shared-epyc's 0x40000001 EAX.
  EXPECT_THAT(
      KvmFeatureNames(0x01007efb),
      ElementsAre("clocksource", "nop_io_delay", "clocksource2", "async_pf",
                  "steal_time", "pv_eoi", "pv_unhalt", "pv_tlb_flush",
                  "async_pf_vmexit", "pv_send_ipi", "poll_control",
                  "pv_sched_yield", "async_pf_int", "clocksource_stable_bit"));
  EXPECT_THAT(KvmFeatureNames(0), IsEmpty());
  EXPECT_THAT(KvmFeatureNames((1u << 8) | (1u << 17) | (1u << 31)),
              ElementsAre("bit8", "migration_control", "bit31"));
  EXPECT_THAT(KvmFeatureNames(1u << kKvmFeatureStealTime),
              ElementsAre("steal_time"));
  EXPECT_THAT(KvmFeatureNames(1u << kKvmFeaturePvUnhalt),
              ElementsAre("pv_unhalt"));
  EXPECT_THAT(KvmFeatureNames(1u << kKvmFeaturePollControl),
              ElementsAre("poll_control"));
}

TEST(HypervisorFromCpuidTest, HypervisorBitClearIsBareMetalWhateverFollows) {
  // Intel answers leaves above its maximum with the highest basic leaf, so
  // bare metal can show anything in the hypervisor range, even a signature.
  const HypervisorInfo info = HypervisorFromCpuid({
      {1, kLeaf1Metal},
      {0x40000000, kKvmSignature},
      {0x40000001, {0x01007efb, 0, 0, 1}},
  });
  EXPECT_EQ(info.kind, E::kBareMetal);
  EXPECT_EQ(info.vendor, "");
  EXPECT_FALSE(info.dedicated_hint);
  EXPECT_FALSE(info.steal_time);
  EXPECT_EQ(info.kvm_features, 0u);
  EXPECT_EQ(info.source, "cpuid 1 ecx[31] clear");
  EXPECT_EQ(HypervisorFromCpuid({}).kind, E::kBareMetal);
}

TEST(HypervisorFromCpuidTest, KvmFeaturesAndHints) {
  const HypervisorInfo info = HypervisorFromCpuid({
      {1, kLeaf1Guest},
      {0x40000000, kKvmSignature},
      {0x40000001, {0x01007e7b, 0, 0, 0x00000001}},
  });
  EXPECT_EQ(info.kind, E::kKvmDedicated);
  EXPECT_TRUE(info.dedicated_hint);
  EXPECT_TRUE(info.steal_time);
  EXPECT_TRUE(info.poll_control);
  EXPECT_EQ(info.kvm_features, 0x01007e7bu);
  EXPECT_EQ(info.kvm_hints, 1u);

  const HypervisorInfo bare = HypervisorFromCpuid({
      {1, kLeaf1Guest},
      {0x40000000, kKvmSignature},
  });  // A KVM without the feature leaf filled in: no features, no hints.
  EXPECT_EQ(bare.kind, E::kKvmShared);
  EXPECT_FALSE(bare.steal_time);
  EXPECT_FALSE(bare.poll_control);
  EXPECT_EQ(bare.kvm_features, 0u);
}

TEST(HypervisorFromCpuidTest, OwnSignatureAboveHyperVInterfaceWins) {
  // KVM with Hyper-V enlightenments: "Microsoft Hv" at 0x40000000 with
  // "Hv#1" after it, KVM itself at 0x40000100 with its features at
  // 0x40000101. The features must come from 0x40000101.
  const HypervisorInfo kvm = HypervisorFromCpuid({
      {1, kLeaf1Guest},
      {0x40000000, kHyperVSignature},
      {0x40000001, kHyperVInterface},
      {0x40000100, {0x40000101, 0x4b4d564b, 0x564b4d56, 0x0000004d}},
      {0x40000101, {1u << kKvmFeatureStealTime, 0, 0, 1}},
  });
  EXPECT_EQ(kvm.kind, E::kKvmDedicated);
  EXPECT_EQ(kvm.kvm_features, 1u << kKvmFeatureStealTime);
  EXPECT_TRUE(kvm.steal_time);
  EXPECT_FALSE(kvm.poll_control);
  EXPECT_EQ(kvm.vendor, "KVM, with Hyper-V's interface at 0x40000000");
  EXPECT_THAT(kvm.source, StartsWith("cpuid 0x40000100 \"KVMKVMKVM\""));

  const HypervisorInfo xen = HypervisorFromCpuid({
      {1, kLeaf1Guest},
      {0x40000000, kHyperVSignature},
      {0x40000001, kHyperVInterface},
      {0x40000100, {0x40000105, 0x566e6558, 0x65584d4d, 0x4d4d566e}},
  });
  EXPECT_EQ(xen.kind, E::kXen);
  EXPECT_TRUE(xen.steal_time);
  EXPECT_EQ(xen.source, "cpuid 0x40000100 \"XenVMMXenVMM\"");

  // Real Hyper-V: its "Hv#1" is not read as KVM features.
  const HypervisorInfo hyperv = HypervisorFromCpuid({
      {1, kLeaf1Guest},
      {0x40000000, kHyperVSignature},
      {0x40000001, kHyperVInterface},
  });
  EXPECT_EQ(hyperv.kind, E::kHyperV);
  EXPECT_EQ(hyperv.vendor, "Microsoft Hyper-V");
  EXPECT_FALSE(hyperv.poll_control);
  EXPECT_FALSE(hyperv.steal_time);
  EXPECT_EQ(hyperv.kvm_features, 0u);

  // KVM's own name for its Hyper-V interface, with no KVM leaf above it.
  const HypervisorInfo linux_hv = HypervisorFromCpuid({
      {1, kLeaf1Guest},
      {0x40000000, {0x4000000b, 0x756e694c, 0x564b2078, 0x7648204d}},
      {0x40000001, kHyperVInterface},
  });
  EXPECT_EQ(CpuidSignature({0, 0x756e694c, 0x564b2078, 0x7648204d}),
            "Linux KVM Hv");
  EXPECT_EQ(linux_hv.kind, E::kKvmShared);
  EXPECT_EQ(linux_hv.vendor, "KVM (Hyper-V interface)");
  EXPECT_EQ(linux_hv.kvm_features, 0u);
  EXPECT_FALSE(linux_hv.poll_control);
}

TEST(HypervisorFromCpuidTest, UnknownOrMissingSignatureIsUnknownVm) {
  const HypervisorInfo none = HypervisorFromCpuid({{1, kLeaf1Guest}});
  EXPECT_EQ(none.kind, E::kUnknownVm);
  EXPECT_EQ(none.vendor, "");
  EXPECT_EQ(none.source, "cpuid 1 ecx[31] set, no vendor leaf from 0x40000000");

  // "FooHypervsr\x01" at 0x40000200: named, the unprintable byte as '?'.
  const HypervisorInfo odd = HypervisorFromCpuid({
      {1, kLeaf1Guest},
      {0x40000200, {0, 0x486f6f46, 0x72657079, 0x01727376}},
  });
  EXPECT_EQ(odd.kind, E::kUnknownVm);
  EXPECT_EQ(odd.vendor, "FooHypervsr?");
  EXPECT_EQ(odd.source, "cpuid 0x40000200 \"FooHypervsr?\"");

  const HypervisorInfo vbox = HypervisorFromCpuid({
      {1, kLeaf1Guest},
      {0x40000000, {0x40000006, 0x786f4256, 0x786f4256, 0x786f4256}},
  });
  EXPECT_EQ(vbox.kind, E::kUnknownVm);
  EXPECT_EQ(vbox.vendor, "VirtualBox");
}

TEST(HypervisorFromCpuidTest, CpuidDumpParser) {
  absl::StatusOr<CpuidLeaves> leaves = ParseCpuidDump(
      "CPU 0:\n"
      "   0x00000001 0x00: eax=0x000606a6 ebx=0x00010800 ecx=0xfeda3223 "
      "edx=0x1f8bfbff\n"
      "   0x00000007 0x01: eax=0x00000001 ebx=0x00000000 ecx=0x00000000 "
      "edx=0x00000000\n"
      "CPU 1:\n"
      "   0x00000001 0x00: eax=0x00000000 ebx=0x00000000 ecx=0x00000000 "
      "edx=0x00000000\n");
  ASSERT_TRUE(leaves.ok()) << leaves.status();
  ASSERT_EQ(leaves->size(), 1u);
  EXPECT_EQ(leaves->at(1).ecx, 0xfeda3223u);
  EXPECT_FALSE(ParseCpuidDump("CPU 0:\n   0x1 0x00: eax=1\n").ok());
  EXPECT_FALSE(
      ParseCpuidDump("   0x00000001 0x00: eax=0x0 ebx=0x0 ecx=0x0 edx=0x0\n")
          .ok());
}

// --- Names -------------------------------------------------------------------

TEST(HostEnvironmentNameTest, RoundTripsEveryName) {
  std::vector<std::string> names;
  for (HostEnvironment e : kAllHostEnvironments) {
    const absl::string_view name = HostEnvironmentName(e);
    names.emplace_back(name);
    const std::optional<HostEnvironment> parsed = kHostEnvironments.Parse(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(*parsed, e) << name;
  }
  EXPECT_THAT(names, ElementsAre("bare-metal", "kvm-dedicated", "kvm-shared",
                                 "hyperv", "vmware", "xen", "zvm", "lpar",
                                 "kvm-s390", "unknown-vm"));
  EXPECT_EQ(kHostEnvironments.Names(),
            "bare-metal|kvm-dedicated|kvm-shared|hyperv|vmware|xen|zvm|lpar|"
            "kvm-s390|unknown-vm");
}

TEST(HostEnvironmentNameTest, AnythingElseIsNoName) {
  for (absl::string_view bad :
       {"", "KVM", " kvm-shared", "kvm-shared ", "kvm_shared", "bogus"}) {
    EXPECT_FALSE(kHostEnvironments.Parse(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(HostEnvironmentNameTest, Describe) {
  HypervisorInfo info;
  info.kind = E::kKvmShared;
  info.vendor = "KVM";
  info.source = "cpuid 0x40000000 \"KVMKVMKVM\"";
  info.steal_time = true;
  info.poll_control = true;
  EXPECT_EQ(DescribeHypervisor(info),
            "kvm-shared: KVM (cpuid 0x40000000 \"KVMKVMKVM\"); dedicated hint "
            "no, steal time yes, poll control yes");
  HypervisorInfo metal;
  metal.source = "x";
  EXPECT_EQ(DescribeHypervisor(metal),
            "bare-metal (x); dedicated hint no, steal time no, poll control "
            "no");
}

// --- /proc/sysinfo and precedence --------------------------------------------

// A file system where one path fails to read with something else than
// NotFound, as an unreadable /proc/sysinfo would.
class FailingFiles final : public SystemFiles {
 public:
  FailingFiles(const SystemFiles& base, std::string path)
      : base_(base), path_(std::move(path)) {}
  absl::StatusOr<std::string> Read(absl::string_view path) const override {
    if (path == path_) {
      return absl::PermissionDeniedError(
          absl::StrCat("open ", path, ": Permission denied"));
    }
    return base_.Read(path);
  }

 private:
  const SystemFiles& base_;
  std::string path_;
};

TEST(HypervisorFromSysinfoTest, NotFoundWithoutSysinfo) {
  absl::StatusOr<HypervisorInfo> info =
      HypervisorFromSysinfo(FakeSystemFiles());
  EXPECT_TRUE(absl::IsNotFound(info.status())) << info.status();
}

TEST(HypervisorFromSysinfoTest, NeitherVmNorLparIsInvalid) {
  FakeSystemFiles files(
      {{kProcSysinfo,
        "Manufacturer:         IBM\nType:                 3931\n"}});
  absl::StatusOr<HypervisorInfo> info = HypervisorFromSysinfo(files);
  EXPECT_TRUE(absl::IsInvalidArgument(info.status())) << info.status();
  EXPECT_THAT(info.status().message(), HasSubstr("/proc/sysinfo"));
}

TEST(HypervisorFromSysinfoTest, NearestHypervisorIsVm00) {
  // KVM in a z/VM guest: VM00 is KVM, VM01 z/VM.
  FakeSystemFiles files({{kProcSysinfo,
                          "LPAR Number:          9\n"
                          "LPAR CPUs Dedicated:  0\n"
                          "LPAR CPUs Shared:     12\n"
                          "\n"
                          "VM00 Name:            KVMguest\n"
                          "VM00 Control Program: KVM/Linux       \n"
                          "\n"
                          "VM01 Name:            LINUX07 \n"
                          "VM01 Control Program: z/VM    7.3.0   \n"}});
  absl::StatusOr<HypervisorInfo> info = HypervisorFromSysinfo(files);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->kind, E::kKvmS390);
  EXPECT_EQ(info->vendor, "KVM/Linux");

  files.Set(kProcSysinfo, "VM00 Control Program: PR/SM-ish 1.0\n");
  info = HypervisorFromSysinfo(files);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->kind, E::kUnknownVm);
  EXPECT_EQ(info->vendor, "PR/SM-ish 1.0");
}

TEST(DetectHypervisorTest, CpuidThenSysinfoThenFirmware) {
  absl::StatusOr<Capture> zvm = LoadCapture("s390x-zvm");
  ASSERT_TRUE(zvm.ok()) << zvm.status();
  FakeSystemFiles files = zvm->files;
  files.Set(kDmiSysVendor, "QEMU\n");
  files.Set(kDmiProductName, "KVM Virtual Machine\n");

  // CPUID, where there is any, wins over every file.
  const CpuidLeaves kvm = {{1, kLeaf1Guest}, {0x40000000, kKvmSignature}};
  EXPECT_EQ(DetectHypervisor(kvm, files).kind, E::kKvmShared);
  EXPECT_EQ(DetectHypervisor({{1, kLeaf1Metal}}, files).kind, E::kBareMetal);
  // Then /proc/sysinfo over the firmware.
  EXPECT_EQ(DetectHypervisor({}, files).kind, E::kZvm);
  // Then the firmware.
  FakeSystemFiles firmware(
      {{kDmiSysVendor, "QEMU\n"}, {kDmiProductName, "KVM Virtual Machine\n"}});
  EXPECT_EQ(DetectHypervisor({}, firmware).kind, E::kKvmShared);
  EXPECT_EQ(DetectHypervisor({}, FakeSystemFiles()).kind, E::kBareMetal);
}

TEST(DetectHypervisorTest, BadSysinfoIsUnknownVmWithTheError) {
  FakeSystemFiles files(
      {{kDmiSysVendor, "QEMU\n"}, {kDmiProductName, "KVM Virtual Machine\n"}});
  const FailingFiles unreadable(files, kProcSysinfo);
  const HypervisorInfo info = DetectHypervisor({}, unreadable);
  EXPECT_EQ(info.kind, E::kUnknownVm);
  EXPECT_THAT(info.source, AllOf(HasSubstr("/proc/sysinfo"),
                                 HasSubstr("Permission denied")));

  files.Set(kProcSysinfo, "Manufacturer:         IBM\n");
  const HypervisorInfo garbled = DetectHypervisor({}, files);
  EXPECT_EQ(garbled.kind, E::kUnknownVm);
  EXPECT_THAT(garbled.source, HasSubstr("/proc/sysinfo"));
}

TEST(HypervisorFromFirmwareTest, UnreadableFilesCountAsMissing) {
  FakeSystemFiles files(
      {{kDmiSysVendor, "Xen\n"}, {kDmiProductName, "HVM domU\n"}});
  const FailingFiles no_dt(files, kDeviceTreeHypervisor);
  const HypervisorInfo info = HypervisorFromFirmware(no_dt);
  EXPECT_EQ(info.kind, E::kXen);
  EXPECT_EQ(info.vendor, "Xen HVM domU");
  EXPECT_TRUE(info.steal_time);
}

// --- Kernel cpuidle ----------------------------------------------------------

TEST(ReadKernelCpuidleTest, HaltpollGuest) {
  absl::StatusOr<Capture> guest = LoadCapture("x86_64-kvm-shared-epyc");
  ASSERT_TRUE(guest.ok()) << guest.status();
  const KernelCpuidle k = ReadKernelCpuidle(guest->files);
  EXPECT_EQ(k.driver, "haltpoll");
  EXPECT_EQ(k.governor, "haltpoll");
  EXPECT_EQ(k.guest_halt_poll_ns, 0);
}

TEST(ReadKernelCpuidleTest, OlderKernelsAndMissingFiles) {
  constexpr char kDir[] = "/sys/devices/system/cpu/cpuidle/";
  FakeSystemFiles old({{absl::StrCat(kDir, "current_driver"), "intel_idle\n"},
                       {absl::StrCat(kDir, "current_governor_ro"), "menu\n"}});
  KernelCpuidle k = ReadKernelCpuidle(old);
  EXPECT_EQ(k.driver, "intel_idle");
  EXPECT_EQ(k.governor, "menu");
  EXPECT_FALSE(k.guest_halt_poll_ns.has_value());

  FakeSystemFiles none(
      {{absl::StrCat(kDir, "current_driver"), "none\n"},
       {absl::StrCat(kDir, "current_governor"), "menu\n"},
       {"/sys/module/haltpoll/parameters/guest_halt_poll_ns", "200000\n"}});
  k = ReadKernelCpuidle(none);
  EXPECT_EQ(k.driver, "");
  EXPECT_EQ(k.governor, "menu");
  EXPECT_EQ(k.guest_halt_poll_ns, 200000);

  k = ReadKernelCpuidle(FakeSystemFiles(
      {{"/sys/module/haltpoll/parameters/guest_halt_poll_ns", "lots\n"}}));
  EXPECT_EQ(k.driver, "");
  EXPECT_EQ(k.governor, "");
  EXPECT_FALSE(k.guest_halt_poll_ns.has_value());
}

// --- This machine ------------------------------------------------------------

TEST(HostHypervisorTest, ConsistentOnThisMachine) {
  const HypervisorInfo& info = HostHypervisor();
  EXPECT_EQ(&info, &HostHypervisor()) << "computed once";
  const std::string line = DescribeHypervisor(info);
  EXPECT_FALSE(line.empty());
  EXPECT_FALSE(info.source.empty());
  const std::optional<HostEnvironment> parsed =
      kHostEnvironments.Parse(HostEnvironmentName(info.kind));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed, info.kind);
  EXPECT_THAT(line, StartsWith(std::string(HostEnvironmentName(info.kind))));
  if (info.kind == E::kBareMetal) {
    EXPECT_EQ(info.vendor, "");
  }
  if (info.dedicated_hint) {
    EXPECT_TRUE(info.kind == E::kKvmDedicated || info.kind == E::kLpar);
  }

  const CpuidLeaves leaves = ReadHostCpuid();
  EXPECT_EQ(leaves.empty(), !platform::kHasCpuid);
  if (!leaves.empty()) {
    EXPECT_TRUE(leaves.count(1));
    EXPECT_EQ(HypervisorFromCpuid(leaves).kind, info.kind);
  }
  absl::PrintF("this machine: %s; %zu cpuid leaves recorded\n", line,
               leaves.size());
}

}  // namespace
}  // namespace haltpool::arch

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  namespace fs = std::filesystem;
  std::error_code ec;
  if (argc > 1) {
    haltpool::arch::g_testdata = argv[1];
  } else if (fs::is_directory("tests/arch/testdata", ec)) {
    haltpool::arch::g_testdata = "tests/arch/testdata";
  } else {
    haltpool::arch::g_testdata =
        (fs::path(__FILE__).parent_path() / "testdata").string();
  }
  if (!fs::is_directory(haltpool::arch::g_testdata, ec)) {
    // The capture tests fail and name the path; the others still run.
    absl::FPrintF(stderr, "hypervisor_test: no testdata directory at '%s'\n",
                  haltpool::arch::g_testdata);
  }
  return RUN_ALL_TESTS();
}
