#!/usr/bin/env bash
# bench/micro_submit with a minimal time per row (the idle-worker rows run
# their fixed count): it exits 0 and prints every row with its label.
set -uo pipefail
micro_submit=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$micro_submit" --benchmark_min_time=0.001 2>&1)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "exited $rc"
for g in haltpoll poll block; do
  grep -q "^BM_SubmitBatch/haltpool:$g[/ ].* per task; [0-9]* workers, governor=$g; TaskGroup + Wait\$" <<<"$out" ||
    fail "no batch row for $g"
  grep -q "^BM_SubmitToIdle/haltpool:$g[/ ].* same_cpu_pct=.* one Submit, idle worker; governor=$g, back-off off\$" <<<"$out" ||
    fail "no idle row for $g"
done
grep -q '^BM_SubmitBatch/condvar[/ ].* per task; condvar pool, ' <<<"$out" ||
  fail "no condvar batch row"
grep -q '^BM_SubmitToIdle/condvar[/ ].* one Submit, idle worker; condvar pool' <<<"$out" ||
  fail "no condvar idle row"
grep -q '^BM_SubmitToBusy/haltpool[/ ].* one Submit, worker busy; haltpool$' <<<"$out" ||
  fail "no haltpool busy row"
grep -q '^BM_SubmitToBusy/condvar[/ ].* one Submit, worker busy; condvar pool$' <<<"$out" ||
  fail "no condvar busy row"
grep -q '^BM_SubmitToBusy/mutex_deque[/ ].* one push; std::mutex + std::deque' <<<"$out" ||
  fail "no mutex + deque row"
grep -q 'ERROR OCCURRED' <<<"$out" && fail "a row failed"
echo PASS
