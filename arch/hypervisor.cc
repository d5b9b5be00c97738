#include "arch/hypervisor.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "arch/platform.h"

namespace haltpool::arch {
namespace {

using E = HostEnvironment;

bool Bit(uint32_t word, int bit) { return (word >> bit) & 1u; }

// --- CPUID ---

// A vendor signature and what it means.
struct VendorSignature {
  const char signature[13];  // 12 bytes, NULs included, plus a terminator.
  E kind;                    // kKvmShared for KVM: the hint refines it.
  const char* vendor;
  bool hyperv_interface;  // Hyper-V's interface, offered by many hypervisors.
};

// The signatures the kernel and the hypervisors' documentation give.
constexpr VendorSignature kSignatures[] = {
    {"KVMKVMKVM\0\0\0", E::kKvmShared, "KVM", false},
    {"Microsoft Hv", E::kHyperV, "Microsoft Hyper-V", true},
    {"Linux KVM Hv", E::kKvmShared, "KVM (Hyper-V interface)", true},
    {"VMwareVMware", E::kVmware, "VMware", false},
    {"XenVMMXenVMM", E::kXen, "Xen", false},
    {"TCGTCGTCGTCG", E::kUnknownVm, "QEMU TCG (emulation)", false},
    {"bhyve bhyve ", E::kUnknownVm, "bhyve", false},
    {"ACRNACRNACRN", E::kUnknownVm, "ACRN", false},
    {" lrpepyh  vr", E::kUnknownVm, "Parallels", false},
    {"QNXQVMBSQG\0\0", E::kUnknownVm, "QNX Hypervisor", false},
    {"Jailhouse\0\0\0", E::kUnknownVm, "Jailhouse", false},
    {"VBoxVBoxVBox", E::kUnknownVm, "VirtualBox", false},
};

const VendorSignature* FindSignature(absl::string_view signature) {
  for (const VendorSignature& s : kSignatures) {
    if (absl::string_view(s.signature, 12) == signature) return &s;
  }
  return nullptr;
}

CpuidRegs Leaf(const CpuidLeaves& leaves, uint32_t leaf) {
  auto it = leaves.find(leaf);
  return it == leaves.end() ? CpuidRegs{} : it->second;
}

// The signature with its NULs dropped and other unprintables as '?'.
std::string Printable(absl::string_view signature) {
  std::string out;
  for (char c : signature) {
    if (c == '\0') continue;
    out += absl::ascii_isprint(static_cast<unsigned char>(c)) ? c : '?';
  }
  return out;
}

std::string CpuidSource(uint32_t base, absl::string_view signature) {
  return absl::StrFormat("cpuid 0x%08x \"%s\"", base, Printable(signature));
}

// --- Files ---

// The content of `path`, trimmed; nullopt if it cannot be read.
std::optional<std::string> ReadTrimmed(const SystemFiles& files,
                                       absl::string_view path) {
  absl::StatusOr<std::string> content = files.Read(path);
  if (!content.ok()) return std::nullopt;
  return std::string(absl::StripAsciiWhitespace(*content));
}

HypervisorInfo Found(E kind, std::string vendor, std::string source) {
  HypervisorInfo info;
  info.kind = kind;
  info.vendor = std::move(vendor);
  info.source = std::move(source);
  info.steal_time = kind == E::kXen;  // Xen's runstate area, always.
  return info;
}

// The device tree's hypervisor node: a list of NUL-terminated strings.
std::optional<HypervisorInfo> FromDeviceTree(const SystemFiles& files) {
  absl::StatusOr<std::string> compatible = files.Read(kDeviceTreeHypervisor);
  if (!compatible.ok()) return std::nullopt;
  std::vector<absl::string_view> names =
      absl::StrSplit(*compatible, '\0', absl::SkipEmpty());
  for (absl::string_view name : names) {
    if (absl::StartsWith(name, "xen,xen")) {
      return Found(E::kXen, "Xen", kDeviceTreeHypervisor);
    }
    if (name == "linux,kvm") {
      return Found(E::kKvmShared, "KVM", kDeviceTreeHypervisor);
    }
  }
  return Found(E::kUnknownVm,
               names.empty()
                   ? std::string("unnamed")
                   : std::string(absl::StripAsciiWhitespace(names[0])),
               kDeviceTreeHypervisor);
}

std::optional<HypervisorInfo> FromSysHypervisor(const SystemFiles& files) {
  std::optional<std::string> type = ReadTrimmed(files, kSysHypervisorType);
  if (!type || type->empty()) return std::nullopt;
  if (*type == "xen") return Found(E::kXen, "Xen", kSysHypervisorType);
  return Found(E::kUnknownVm, *type, kSysHypervisorType);
}

std::optional<HypervisorInfo> FromDmi(const SystemFiles& files) {
  std::optional<std::string> vendor = ReadTrimmed(files, kDmiSysVendor);
  if (!vendor || vendor->empty()) return std::nullopt;
  const std::string product = ReadTrimmed(files, kDmiProductName).value_or("");
  const std::string both =
      product.empty() ? *vendor : absl::StrCat(*vendor, " ", product);
  const std::string source = kDmiSysVendor;
  if (*vendor == "QEMU") {
    // QEMU's arm64 "virt" machine names itself "KVM Virtual Machine" when
    // KVM runs it and "QEMU Virtual Machine" when it emulates.
    if (absl::StrContains(product, "KVM")) {
      return Found(E::kKvmShared, both, source);
    }
    return Found(E::kUnknownVm, both, source);
  }
  if (*vendor == "Amazon EC2") {
    // Nitro is KVM-based; bare-metal instances have no hypervisor. Their
    // sizes are "c7g.metal" and, on newer families, "m8g.metal-24xl".
    if (absl::StrContains(product, ".metal")) {
      HypervisorInfo info = Found(E::kBareMetal, "", source);
      info.source = absl::StrCat(source, " (", both, ")");
      return info;
    }
    return Found(E::kKvmShared, both, source);
  }
  if (*vendor == "Microsoft Corporation") {
    if (product == "Virtual Machine") return Found(E::kHyperV, both, source);
    return std::nullopt;  // Microsoft's own hardware (Surface, ...).
  }
  if (absl::StartsWith(*vendor, "VMware")) {
    return Found(E::kVmware, both, source);
  }
  if (*vendor == "Xen") return Found(E::kXen, both, source);
  if (*vendor == "Google") return Found(E::kKvmShared, both, source);
  if (*vendor == "innotek GmbH" || absl::StartsWith(*vendor, "Parallels")) {
    return Found(E::kUnknownVm, both, source);
  }
  return std::nullopt;
}

// "Key:   value" lines of /proc/sysinfo, values trimmed; the first of each.
std::map<std::string, std::string, std::less<>> SysinfoFields(
    absl::string_view content) {
  std::map<std::string, std::string, std::less<>> fields;
  for (absl::string_view line : absl::StrSplit(content, '\n')) {
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    fields.emplace(
        std::string(absl::StripAsciiWhitespace(line.substr(0, colon))),
        std::string(absl::StripAsciiWhitespace(line.substr(colon + 1))));
  }
  return fields;
}

// "z/VM    7.3.0" -> "z/VM 7.3.0".
std::string CollapseBlanks(absl::string_view s) {
  return absl::StrJoin(absl::StrSplit(s, ' ', absl::SkipEmpty()), " ");
}

}  // namespace

absl::string_view HostEnvironmentName(HostEnvironment e) {
  return kHostEnvironments.Name(e);
}

absl::StatusOr<HostEnvironment> ParseHostEnvironment(absl::string_view name) {
  if (std::optional<HostEnvironment> e = kHostEnvironments.Parse(name)) {
    return *e;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown environment '", name, "'; accepted: ", HostEnvironmentNames()));
}

absl::string_view HostEnvironmentNames() {
  static const std::string* kJoined =
      new std::string(kHostEnvironments.Names());
  return *kJoined;
}

std::string DescribeHypervisor(const HypervisorInfo& info) {
  auto yn = [](bool b) { return b ? "yes" : "no"; };
  std::string out(HostEnvironmentName(info.kind));
  if (!info.vendor.empty()) absl::StrAppend(&out, ": ", info.vendor);
  absl::StrAppend(&out, " (", info.source, "); dedicated hint ",
                  yn(info.dedicated_hint), ", steal time ", yn(info.steal_time),
                  ", poll control ", yn(info.poll_control));
  return out;
}

std::string CpuidSignature(const CpuidRegs& regs) {
  // Byte by byte rather than memcpy: CPUID's byte order is little-endian,
  // and recorded leaves are parsed on big-endian s390x too.
  std::string bytes;
  for (uint32_t word : {regs.ebx, regs.ecx, regs.edx}) {
    for (int shift = 0; shift < 32; shift += 8) {
      bytes += static_cast<char>((word >> shift) & 0xff);
    }
  }
  return bytes;
}

std::vector<std::string> KvmFeatureNames(uint32_t features) {
  // KVM_FEATURE_* in arch/x86/include/uapi/asm/kvm_para.h, by bit.
  static constexpr std::pair<int, const char*> kFeatures[] = {
      {0, "clocksource"},
      {1, "nop_io_delay"},
      {2, "mmu_op"},
      {3, "clocksource2"},
      {4, "async_pf"},
      {5, "steal_time"},
      {6, "pv_eoi"},
      {7, "pv_unhalt"},
      {9, "pv_tlb_flush"},
      {10, "async_pf_vmexit"},
      {11, "pv_send_ipi"},
      {12, "poll_control"},
      {13, "pv_sched_yield"},
      {14, "async_pf_int"},
      {15, "msi_ext_dest_id"},
      {16, "hc_map_gpa_range"},
      {17, "migration_control"},
      {24, "clocksource_stable_bit"},
  };
  std::vector<std::string> names;
  for (int bit = 0; bit < 32; ++bit) {
    if (!Bit(features, bit)) continue;
    std::string name = absl::StrCat("bit", bit);
    for (const auto& [b, n] : kFeatures) {
      if (b == bit) name = n;
    }
    names.push_back(std::move(name));
  }
  return names;
}

HypervisorInfo HypervisorFromCpuid(const CpuidLeaves& leaves) {
  if (!Bit(Leaf(leaves, 1).ecx, kCpuidHypervisorBit)) {
    return Found(E::kBareMetal, "", "cpuid 1 ecx[31] clear");
  }
  // The first signature that is a hypervisor's own, else the first Hyper-V
  // interface, else the first unknown one.
  std::optional<std::pair<uint32_t, const VendorSignature*>> own, hyperv;
  std::optional<std::pair<uint32_t, std::string>> unknown;
  for (uint32_t base = kCpuidHypervisorFirst; base < kCpuidHypervisorEnd;
       base += kCpuidHypervisorStep) {
    const std::string signature = CpuidSignature(Leaf(leaves, base));
    if (signature == std::string(12, '\0')) continue;
    const VendorSignature* known = FindSignature(signature);
    if (known == nullptr) {
      if (!unknown) unknown.emplace(base, signature);
    } else if (known->hyperv_interface) {
      if (!hyperv) hyperv.emplace(base, known);
    } else if (!own) {
      own.emplace(base, known);
    }
  }
  if (!own) own = hyperv;
  if (!own) {
    if (unknown) {
      return Found(E::kUnknownVm, Printable(unknown->second),
                   CpuidSource(unknown->first, unknown->second));
    }
    return Found(E::kUnknownVm, "",
                 "cpuid 1 ecx[31] set, no vendor leaf from 0x40000000");
  }
  const auto [base, known] = *own;
  HypervisorInfo info =
      Found(known->kind, known->vendor,
            CpuidSource(base, absl::string_view(known->signature, 12)));
  if (hyperv && hyperv->first != base) {
    absl::StrAppend(&info.vendor, ", with Hyper-V's interface at ",
                    absl::StrFormat("0x%08x", hyperv->first));
  }
  if (known->kind == E::kKvmShared && !known->hyperv_interface) {
    const CpuidRegs features = Leaf(leaves, base + 1);
    info.kvm_features = features.eax;
    info.kvm_hints = features.edx;
    info.steal_time = Bit(features.eax, kKvmFeatureStealTime);
    info.poll_control = Bit(features.eax, kKvmFeaturePollControl);
    info.dedicated_hint = Bit(features.edx, kKvmHintsRealtime);
    if (info.dedicated_hint) info.kind = E::kKvmDedicated;
    absl::StrAppend(
        &info.source,
        absl::StrFormat(", 0x%08x edx[0] KVM_HINTS_REALTIME %s", base + 1,
                        info.dedicated_hint ? "set" : "clear"));
  }
  return info;
}

CpuidLeaves ReadHostCpuid() {
  CpuidLeaves leaves;
  if (!platform::kHasCpuid) return leaves;
  auto read = [&](uint32_t leaf) {
    uint32_t r[4];
    platform::Cpuid(leaf, r);
    leaves[leaf] = CpuidRegs{r[0], r[1], r[2], r[3]};
    return leaves[leaf];
  };
  if (!Bit(read(1).ecx, kCpuidHypervisorBit)) return leaves;
  for (uint32_t base = kCpuidHypervisorFirst; base < kCpuidHypervisorEnd;
       base += kCpuidHypervisorStep) {
    const CpuidRegs r = read(base);
    if (r.ebx == 0 && r.ecx == 0 && r.edx == 0) {
      leaves.erase(base);  // Keep the record to what matters.
      continue;
    }
    // Only a known hypervisor's next leaf means anything (KVM's features).
    // Intel CPUs, and KVM on them, answer every unused leaf with the highest
    // basic leaf, so most bases "have a signature" there.
    if (FindSignature(CpuidSignature(r)) != nullptr) read(base + 1);
  }
  return leaves;
}

HypervisorInfo HypervisorFromFirmware(const SystemFiles& files) {
  if (auto info = FromDeviceTree(files)) return *info;
  if (auto info = FromSysHypervisor(files)) return *info;
  if (auto info = FromDmi(files)) return *info;
  const bool dmi = files.Read(kDmiSysVendor).ok();
  return Found(E::kBareMetal, "",
               dmi ? absl::StrCat(kDmiSysVendor, " (no hypervisor vendor)")
                   : "no hypervisor node, /sys/hypervisor or DMI vendor");
}

absl::StatusOr<HypervisorInfo> HypervisorFromSysinfo(const SystemFiles& files) {
  absl::StatusOr<std::string> content = files.Read(kProcSysinfo);
  if (!content.ok()) return content.status();
  const auto fields = SysinfoFields(*content);
  HypervisorInfo info;
  info.steal_time = true;  // s390x accounts steal from the CPU timer.
  if (auto cp = fields.find("VM00 Control Program"); cp != fields.end()) {
    info.vendor = CollapseBlanks(cp->second);
    info.source = absl::StrCat(kProcSysinfo, " VM00 Control Program");
    if (absl::StartsWith(cp->second, "z/VM")) {
      info.kind = E::kZvm;
    } else if (absl::StartsWith(cp->second, "KVM")) {
      info.kind = E::kKvmS390;
    } else {
      info.kind = E::kUnknownVm;
    }
    return info;
  }
  if (fields.count("LPAR Number") || fields.count("LPAR Name")) {
    info.kind = E::kLpar;
    info.source = absl::StrCat(kProcSysinfo, " LPAR lines, no VM00");
    auto name = fields.find("LPAR Name");
    info.vendor = absl::StrCat(
        "PR/SM", name == fields.end() ? "" : " LPAR " + name->second);
    auto shared = fields.find("LPAR CPUs Shared");
    auto dedicated = fields.find("LPAR CPUs Dedicated");
    int64_t n_shared = -1, n_dedicated = 0;
    if (shared != fields.end() && dedicated != fields.end() &&
        absl::SimpleAtoi(shared->second, &n_shared) &&
        absl::SimpleAtoi(dedicated->second, &n_dedicated)) {
      info.dedicated_hint = n_shared == 0 && n_dedicated > 0;
    }
    return info;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(kProcSysinfo,
                   ": neither a 'VM00 Control Program' line nor 'LPAR' "
                   "lines; cannot tell LPAR, z/VM or KVM"));
}

HypervisorInfo DetectHypervisor(const CpuidLeaves& cpuid,
                                const SystemFiles& files) {
  if (!cpuid.empty()) return HypervisorFromCpuid(cpuid);
  absl::StatusOr<HypervisorInfo> sysinfo = HypervisorFromSysinfo(files);
  if (sysinfo.ok()) return *sysinfo;
  if (!absl::IsNotFound(sysinfo.status())) {
    return Found(E::kUnknownVm, "", std::string(sysinfo.status().message()));
  }
  return HypervisorFromFirmware(files);
}

const HypervisorInfo& HostHypervisor() {
  static const HypervisorInfo* kInfo =
      new HypervisorInfo(DetectHypervisor(ReadHostCpuid(), RealSystemFiles()));
  return *kInfo;
}

// --- Steal time ---

uint64_t CpuTimes::Total() const {
  return user + nice + system + idle + iowait + irq + softirq + steal;
}

absl::StatusOr<CpuTimes> ParseProcStat(absl::string_view content) {
  absl::string_view line;
  for (absl::string_view l : absl::StrSplit(content, '\n')) {
    if (absl::StartsWith(l, "cpu ")) {
      line = l;
      break;
    }
  }
  if (line.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kProcStat, ": no 'cpu ' line"));
  }
  std::vector<absl::string_view> words =
      absl::StrSplit(line, ' ', absl::SkipEmpty());
  words.erase(words.begin());    // "cpu"
  constexpr size_t kNeeded = 8;  // user ... steal
  if (words.size() < kNeeded) {
    return absl::InvalidArgumentError(absl::StrCat(
        kProcStat, ": the cpu line has ", words.size(),
        " values; expected at least 8 (user nice system idle iowait irq "
        "softirq steal): '",
        line, "'"));
  }
  CpuTimes t;
  uint64_t* fields[] = {&t.user,   &t.nice,      &t.system,  &t.idle,
                        &t.iowait, &t.irq,       &t.softirq, &t.steal,
                        &t.guest,  &t.guest_nice};
  for (size_t i = 0; i < std::size(fields) && i < words.size(); ++i) {
    if (!absl::SimpleAtoi(words[i], fields[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(kProcStat, ": value ", i + 1, " of the cpu line, '",
                       words[i], "', is not a number"));
    }
  }
  return t;
}

absl::StatusOr<CpuTimes> ReadCpuTimes(const SystemFiles& files) {
  absl::StatusOr<std::string> content = files.Read(kProcStat);
  if (!content.ok()) return content.status();
  return ParseProcStat(*content);
}

double StealFraction(const CpuTimes& before, const CpuTimes& after) {
  const uint64_t t0 = before.Total(), t1 = after.Total();
  if (t1 <= t0 || after.steal < before.steal) return 0.0;
  const double steal = static_cast<double>(after.steal - before.steal);
  const double total = static_cast<double>(t1 - t0);
  return steal >= total ? 1.0 : steal / total;
}

KernelCpuidle ReadKernelCpuidle(const SystemFiles& files) {
  constexpr char kDir[] = "/sys/devices/system/cpu/cpuidle/";
  KernelCpuidle k;
  k.driver =
      ReadTrimmed(files, absl::StrCat(kDir, "current_driver")).value_or("");
  k.governor =
      ReadTrimmed(files, absl::StrCat(kDir, "current_governor")).value_or("");
  if (k.governor.empty()) {
    k.governor = ReadTrimmed(files, absl::StrCat(kDir, "current_governor_ro"))
                     .value_or("");
  }
  if (k.driver == "none") k.driver.clear();
  if (k.governor == "none") k.governor.clear();
  int64_t ns = 0;
  if (std::optional<std::string> v = ReadTrimmed(
          files, "/sys/module/haltpoll/parameters/guest_halt_poll_ns");
      v && absl::SimpleAtoi(*v, &ns)) {
    k.guest_halt_poll_ns = ns;
  }
  return k;
}

}  // namespace haltpool::arch
