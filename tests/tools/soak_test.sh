#!/usr/bin/env bash
# Runs tools/soak with tiny counts: it must finish, report every pair and
# task, and exit 0; a bad option must give its usage and exit 2.
set -uo pipefail
soak=$1
out=$("$soak" --pairs=40000 --tasks=40000 --stall=30s)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || { echo "soak exited $rc"; exit 1; }
grep -q '^soak: OK, nothing lost: 40000 park/unpark pairs and 40000 tasks over' <<<"$out" ||
  { echo "no OK line"; exit 1; }
[[ $(grep -c '^pairs ' <<<"$out") -ge 4 ]] || { echo "a governor is missing"; exit 1; }
if grep -q LOST <<<"$out"; then echo "something was lost"; exit 1; fi
"$soak" --pairs=0 2>/tmp/soak_usage.$$
rc=$?
[[ $rc -eq 2 ]] && grep -q "usage: soak" /tmp/soak_usage.$$ ||
  { echo "bad option: exit $rc"; rm -f /tmp/soak_usage.$$; exit 1; }
rm -f /tmp/soak_usage.$$
echo PASS
