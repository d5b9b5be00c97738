#!/usr/bin/env bash
# bench/cyclic with tiny sizes: every governor runs every cycle and gets a
# row of lateness figures, --histogram prints buckets, and a bad flag exits
# 2 naming it.
set -uo pipefail
cyclic=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$cyclic" --interval_us=200 --loops=20 --histogram=50)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "exited $rc"
for g in 'default \(' haltpoll predictive poll block fixed; do
  grep -Eq "^\| $g[^|]* \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$" <<<"$out" ||
    fail "no row for $g"
done
[[ $(grep -c '^# histogram ' <<<"$out") -eq 6 ]] || fail "histograms missing"
[[ $(grep -c '^# Histogram Overflows: [0-9]\{5\}$' <<<"$out") -eq 6 ]] || fail "no overflow counts"
grep -Eq '^[0-9]{6} [0-9]{6}$' <<<"$out" || fail "no histogram bucket lines"

err=$("$cyclic" --interval_us=10 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "^cyclic: Illegal value '10' specified for flag 'interval_us'; accepted: a whole number from 50 to" <<<"$err" ||
  fail "bad --interval_us: exit $rc: $err"
err=$("$cyclic" loops=5 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "'loops=5': accepted: --name=value flags" <<<"$err" ||
  fail "bare argument: exit $rc: $err"
echo PASS
