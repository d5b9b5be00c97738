#!/usr/bin/env bash
# bench/io_wake with tiny points: every contender asked for gets a row at
# every gap (io_uring ones only where the machine has io_uring), the
# baseline and the verdict are printed, and bad flags exit 2 naming what is
# accepted.
set -uo pipefail
io_wake=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$io_wake" --quick --messages=5 --point_ms=1 --gaps=0,20us,200us \
  --contenders=uring-poll,uring-block,uring-default,epoll-poll,thread-recv,thread-epoll_wait)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "exited $rc"
grep -q '^| contender | gap | p50 us | p99 us | mean us | worker CPU % | IPIs/completion | polled | posted | woke |$' \
  <<<"$out" || fail "no table header"
num='-?[0-9]+\.[0-9]+'
names=(epoll-poll thread-recv thread-epoll_wait)
if grep -q '^- uring-poll: skipped: ' <<<"$out"; then
  echo "no io_uring here: the uring rows are not checked"
else
  names+=(uring-poll uring-block 'uring-default \([a-z]+\)')
fi
for name in "${names[@]}"; do
  for gap in '0' '20 us' '200 us'; do
    grep -Eq "^\| $name \| $gap \| $num \| $num \| $num \| $num \| ($num|n/a) \| ([0-9]+|-) \| ([0-9]+|-) \| ([0-9]+|-) \|\$" \
      <<<"$out" || fail "no row for $name at gap $gap"
  done
done
grep -Eq '^\| thread-recv \| 0 \|.* \| - \| - \| - \|$' <<<"$out" ||
  fail "a plain thread has I/O counters"
grep -Eq '^\| 20 us \| [0-9]+ \| [0-9.]+ \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \|$' <<<"$out" ||
  fail "no baseline row"
grep -Eq '^- epoll-poll: epoll readiness, governor poll$' <<<"$out" ||
  fail "no setup line for epoll-poll"
grep -Eq '^Target: I/O wake to a worker polling under poll: .*: (met|not met|not evaluated.*)\.$' \
  <<<"$out" || fail "no verdict"

err=$("$io_wake" --gaps=0,5parsecs 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "^io_wake: .*'5parsecs' is not a gap; accepted: durations from 0 to 1s" <<<"$err" ||
  fail "bad --gaps: exit $rc: $err"
err=$("$io_wake" --contenders=uring-poll,nobody 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "'nobody' is not a contender; accepted: comma-separated names from uring-default, " <<<"$err" ||
  fail "bad --contenders: exit $rc: $err"
err=$("$io_wake" --messages=0 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "Illegal value '0' specified for flag 'messages'; accepted: a whole number from 1" <<<"$err" ||
  fail "bad --messages: exit $rc: $err"
err=$("$io_wake" gaps=5us 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "'gaps=5us': accepted: --name=value flags" <<<"$err" ||
  fail "bare argument: exit $rc: $err"
echo PASS
