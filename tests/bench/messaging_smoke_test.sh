#!/usr/bin/env bash
# bench/messaging with tiny sizes: every governor delivers every message
# (1 group x 2 senders x 3 receivers x 5 loops = 30) in each of two runs,
# the table has a row each, and a bad flag exits 2 naming it and what is
# accepted.
set -uo pipefail
messaging=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$messaging" --groups=1 --senders=2 --receivers=3 --loops=5 --workers=2 --hogs=1 --runs=2)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "exited $rc"
for g in 'default (' haltpoll predictive poll block fixed; do
  grep -q "^| $g.* | 2 | 30 | " <<<"$out" || fail "no row with 30 messages for $g"
done
grep -q '^# messaging: 1 groups x 2 senders x 3 receivers x 5 loops, 100 bytes; 2 workers, 1 hogs; median of 2 runs$' <<<"$out" ||
  fail "no header"
grep -q '^default / block throughput: ' <<<"$out" || fail "no ratio to block"
grep -q '^default / poll throughput: ' <<<"$out" || fail "no ratio to poll"

out=$("$messaging" --governors=block --loops=2 --groups=1 --senders=1 --receivers=1)
[[ $(grep -c '^| ' <<<"$out") -eq 4 ]] || fail "--governors=block: $out"

err=$("$messaging" --loops=0 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "^messaging: Illegal value '0' specified for flag 'loops'; accepted: a whole number from 1 to" <<<"$err" ||
  fail "bad --loops: exit $rc: $err"
err=$("$messaging" --governors=menu 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "'menu' is not a governor; accepted: haltpoll|predictive" <<<"$err" ||
  fail "bad --governors: exit $rc: $err"
err=$("$messaging" --group=3 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "unknown flag --group; accepted: --governors, --groups" <<<"$err" ||
  fail "unknown flag: exit $rc: $err"
echo PASS
