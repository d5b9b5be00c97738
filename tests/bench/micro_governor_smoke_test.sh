#!/usr/bin/env bash
# bench/micro_governor with a minimal time per row: it exits 0 and prints a
# Select + Reflect row for every governor and the do-nothing floor, and the
# three clock reads.
set -uo pipefail
micro_governor=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$micro_governor" --benchmark_min_time=0.001 2>&1)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "exited $rc"
for g in haltpoll predictive poll block fixed none; do
  grep -q "^BM_SelectReflect/governor:$g[/ ].* poll_pct=.* Select + Reflect; governor=$g\$" <<<"$out" ||
    fail "no row for governor:$g"
done
for c in BM_MonotonicNowNs BM_RealClockNowNs BM_ReadCycles; do
  grep -q "^$c[/ ].* ns .* one " <<<"$out" || fail "no row for $c"
done
grep -q 'ERROR OCCURRED' <<<"$out" && fail "a row failed"
echo PASS
