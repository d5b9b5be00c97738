// The ways a CPU can wait for a 32-bit word to change, by name.
//
// Names are what operators type in HALTPOOL_WAIT; which mechanisms this CPU
// and kernel can actually use is answered by cpu_wait.h.

#ifndef HALTPOOL_ARCH_WAIT_MECHANISM_H_
#define HALTPOOL_ARCH_WAIT_MECHANISM_H_

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "arch/named_enum.h"

namespace haltpool::arch {

enum class WaitMechanism : uint8_t {
  kSpin,    // Plain load loop with a compiler barrier; builds everywhere.
  kPause,   // x86-64: load loop with PAUSE.
  kUmwait,  // x86-64 WAITPKG: UMONITOR the word, UMWAIT (C0.1) to a TSC
            // deadline.
  kTpause,  // x86-64 WAITPKG: TPAUSE (C0.1) in short slices between loads.
  kMwaitx,  // AMD: MONITORX the word, MWAITX with its timer.
  kYield,   // arm64: load loop with YIELD.
  kWfe,     // arm64: LDAXR arms the monitor, WFE (needs the event stream).
  kWfet,    // arm64 FEAT_WFxT: as kWfe, with WFET's absolute counter deadline.
};

// Every mechanism with its name, in declaration order.
inline constexpr NamedEnum<WaitMechanism, 8> kWaitMechanisms({{
    {WaitMechanism::kSpin, "spin"},
    {WaitMechanism::kPause, "pause"},
    {WaitMechanism::kUmwait, "umwait"},
    {WaitMechanism::kTpause, "tpause"},
    {WaitMechanism::kMwaitx, "mwaitx"},
    {WaitMechanism::kYield, "yield"},
    {WaitMechanism::kWfe, "wfe"},
    {WaitMechanism::kWfet, "wfet"},
}});

// Every mechanism, in declaration order.
inline constexpr std::array<WaitMechanism, 8> kAllWaitMechanisms =
    kWaitMechanisms.values();

// The lower-case name of `m` ("umwait").
absl::string_view WaitMechanismName(WaitMechanism m);

}  // namespace haltpool::arch

#endif  // HALTPOOL_ARCH_WAIT_MECHANISM_H_
