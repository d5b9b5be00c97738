#!/usr/bin/env bash
# bench/host_noise at its smallest: a lateness row per sleep length with
# ordered percentiles, a stall row per online CPU, and a bad flag exits 2
# naming it.
set -uo pipefail
host_noise=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$host_noise" --sleeps=50us,1ms --samples=20 --seconds=1)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "exited $rc"
for s in 50us 1ms; do
  row=$(grep "^| $s | " <<<"$out") || fail "no lateness row for $s"
  # p10 <= p50 <= p90 <= p99 <= max, all numbers.
  awk -F'|' '{for (i = 3; i <= 7; ++i) { v = $i + 0; if ($i !~ /^ *[0-9.]+ *$/ || v < prev) exit 1; prev = v }}' \
    <<<"$row" || fail "lateness row for $s is not ordered numbers: $row"
done
cpus=$(nproc)
for ((c = 0; c < cpus; ++c)); do
  grep -Eq "^\| $c \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ % \|$" <<<"$out" ||
    fail "no stall row for CPU $c"
done

err=$("$host_noise" --sleeps=2s 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "^host_noise: '2s' in --sleeps is not a sleep length; accepted: durations from 1us to 1s" <<<"$err" ||
  fail "bad --sleeps: exit $rc: $err"
err=$("$host_noise" --samples=0 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "flag 'samples'; accepted: a whole number from 10 to" <<<"$err" ||
  fail "bad --samples: exit $rc: $err"
echo PASS
