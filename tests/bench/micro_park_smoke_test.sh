#!/usr/bin/env bash
# bench/micro_park with a minimal time per row: it exits 0 and prints a
# row for every wait mechanism (measured, or an error naming what this CPU
# lacks; spin runs everywhere), every governor and the three baselines.
set -uo pipefail
micro_park=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$micro_park" --benchmark_min_time=0.001 2>&1)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "exited $rc"
grep -q '^BM_ParkRoundTrip/wait:spin[/ ].* round trip; governor=poll wait=spin$' <<<"$out" ||
  fail "no measured row for wait:spin"
for m in spin pause umwait tpause mwaitx yield wfe wfet; do
  grep -Eq "^BM_ParkRoundTrip/wait:$m[/ ].*( round trip; governor=poll wait=$m|ERROR OCCURRED: 'wait mechanism '$m' is unavailable on .*)\$" <<<"$out" ||
    fail "no row for wait:$m"
done
for g in haltpoll predictive poll block fixed; do
  grep -q "^BM_ParkRoundTrip/governor:$g[/ ].* round trip; governor=$g wait=" <<<"$out" ||
    fail "no row for governor:$g"
done
grep -q '^BM_BinarySemaphoreRoundTrip[/ ].* round trip; std::binary_semaphore$' <<<"$out" ||
  fail "no binary_semaphore row"
grep -q '^BM_AtomicWaitRoundTrip[/ ].* round trip; std::atomic<uint32_t>::wait/notify_one$' <<<"$out" ||
  fail "no atomic wait row"
grep -q '^BM_SpinRoundTrip[/ ].* round trip; spin on an atomic (the limit)$' <<<"$out" ||
  fail "no spin row"
echo PASS
