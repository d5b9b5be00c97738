#!/usr/bin/env bash
# bench/micro_contention with a minimal time per row: it exits 0 and prints
# a row for each reading of the poll back-off, or says why a file is
# missing; no row fails otherwise.
set -uo pipefail
micro_contention=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$micro_contention" --benchmark_min_time=0.001 2>&1)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "exited $rc"
for row in BM_ProcStat BM_CpuPressure BM_CpuPressureKeptOpen BM_Loadavg \
  BM_LoadavgKeptOpen BM_RunDelayKeptOpen; do
  grep -q "^$row " <<<"$out" || fail "no row for $row"
done
grep -Eq "^BM_RunDelayKeptOpen .*( ns .*schedstat kept open|cannot be read)" \
  <<<"$out" || fail "the run-delay reading has neither a timing nor a reason"
if grep 'ERROR OCCURRED' <<<"$out" | grep -qv 'cannot be read'; then
  fail "a row failed for another reason than a missing file"
fi
echo PASS
