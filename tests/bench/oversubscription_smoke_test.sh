#!/usr/bin/env bash
# bench/oversubscription at its smallest (1 s a row, one pool process, one
# hog): it exits 0 and prints every row of the table with a throughput, and
# a bad flag exits 2 naming it.
set -uo pipefail
oversubscription=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$oversubscription" --seconds=1 --processes=1 --hogs=1 --workers=1 2>&1)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "exited $rc"
for g in block poll default; do
  for b in on off; do
    grep -q "^| $g | $b | [1-9][0-9]* | " <<<"$out" || fail "no row for $g, back-off $b"
  done
done
grep -q "^| default, idle (1 process, no hogs) | on | [1-9][0-9]* | - | " <<<"$out" ||
  fail "no idle row"
grep -q "^  default (idle), back-off on: level [0-4] of 4" <<<"$out" ||
  fail "no back-off line for the idle row"

bad=$("$oversubscription" --processes=0 2>&1)
[[ $? -eq 2 ]] || fail "--processes=0 did not exit 2"
grep -q "processes" <<<"$bad" || fail "the message does not name --processes: $bad"
echo PASS
