#include "arch/cpuid_hypervisor.h"

#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/platform.h"

namespace haltpool::arch {
namespace {

using E = HostEnvironment;

bool Bit(uint32_t word, int bit) { return (word >> bit) & 1u; }

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

}  // namespace

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
    return FoundHypervisor(E::kBareMetal, "", "cpuid 1 ecx[31] clear");
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
      return FoundHypervisor(E::kUnknownVm, Printable(unknown->second),
                             CpuidSource(unknown->first, unknown->second));
    }
    return FoundHypervisor(
        E::kUnknownVm, "",
        "cpuid 1 ecx[31] set, no vendor leaf from 0x40000000");
  }
  const auto [base, known] = *own;
  HypervisorInfo info = FoundHypervisor(
      known->kind, known->vendor,
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

}  // namespace haltpool::arch
