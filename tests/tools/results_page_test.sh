#!/usr/bin/env bash
# tools/results-page on a hand-made results folder: the machine stamp, the
# seeds' table with the figures taken from the right rows and compared the
# right way round, every section with its CSV link, and clear errors for a
# missing folder or wrong arguments.
set -uo pipefail
page=$(realpath "$1")
fail() { echo "FAIL: $*"; exit 1; }
root=${TEST_TMPDIR:-$(mktemp -d)}
dir=$root/docs/results
mkdir -p "$dir"

cat >"$dir/machine.md" <<'MD'
| machine | |
| --- | --- |
| CPU | Test CPU (x86_64) |
| run | 2026-01-01 00:00 UTC, tools/compare quick, haltpool abc1234 |
MD
cat >"$dir/cyclic.md" <<'MD'
| governor | min us | avg us | p99 us | max us | CPU % |
| --- | ---: | ---: | ---: | ---: | ---: |
| default (predictive) | 1.0 | 40.0 | 90.0 | 100.0 | 5.0 |
| block | 20.0 | 50.0 | 145.0 | 200.0 | 3.6 |
| cyclictest (SCHED_OTHER) | 18 | 79 | 120 | 8967 | 2.0 |
MD
cat >"$dir/pipe.md" <<'MD'
| transport | tasks | haltpoll us/op | poll us/op | block us/op | perf us/op |
| --- | --- | ---: | ---: | ---: | ---: |
| parker | threads | 2.0 | 2.1 | 24.0 | |
| pipe | threads | 6.0 | | 3.0 | 25.7 |
MD
printf 'default / block throughput: 0.972\n' >"$dir/messaging.md"
printf 'Target 2, poll never slower: met.\nTarget 1, ... at max and 10000/s: max: avg 0.38x, p99 0.35x, server CPU 41 %%; 10000/s: met.\n' >"$dir/sockperf.md"
printf 'pair: the default does not meet the target. Target not met.\n' >"$dir/tradeoff.md"
cat >"$dir/io_wake.md" <<'MD'
| contender | gap | p50 us |
| --- | ---: | ---: |
| uring-poll | 5 us | 4.0 |

Target: I/O wake to a worker polling under poll: at most 1 IPI per 100 completions (uring-poll: io_uring coop): met.
MD
for s in tradeoff pipe messaging cyclic io_wake; do echo 'a,b' >"$dir/$s.csv"; done
: >"$dir/sockperf.csv"  # Empty: no link to it.

out=$(cd "$root" && "$page" docs/results 123)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "exited $rc"
grep -q '^| CPU | Test CPU (x86_64) |$' <<<"$out" || fail "no machine stamp"
grep -q 'tools/compare quick, 123 s' <<<"$out" || fail "no mode and time"
grep -q 'average lateness 40.0 us with the default governor against 50.0 us with block: 20 % lower (better); cyclictest itself 79 us' <<<"$out" ||
  fail "cyclictest row"
grep -q 'throughput, default / block: 0.972' <<<"$out" || fail "hackbench row"
grep -q '| Target 1, ... at max and 10000/s: max: avg 0.38x, p99 0.35x, server CPU 41 %; 10000/s: met. |' <<<"$out" ||
  fail "sockperf row"
grep -q '2.0 us/op with haltpoll against 24.0 with block, 92 % lower (better); over kernel pipes 6.0 against 3.0, 100 % higher (worse)' <<<"$out" ||
  fail "pipe row"
grep -q '^pair: the default does not meet the target. Target not met.$' <<<"$out" || fail "tradeoff verdict"
grep -q '^no pool verdict$' <<<"$out" || fail "a missing verdict is not said"
[[ $(grep -c '^Target: I/O wake to a worker polling under poll: .*: met\.$' <<<"$out") -eq 2 ]] ||
  fail "the I/O wake verdict is not in the summary and its section"
grep -q '^## bench/io_wake$' <<<"$out" || fail "no io_wake section"
for s in tradeoff pipe messaging cyclic io_wake; do
  grep -q "^CSV: \[\`results/$s.csv\`\](results/$s.csv)$" <<<"$out" || fail "no CSV link for $s"
done
grep -q '^## sockperf ping-pong$' <<<"$out" || fail "no sockperf section"
grep -q 'results/sockperf.csv' <<<"$out" && fail "a link to an empty CSV"
grep -q '^## Microbenchmarks' <<<"$out" && fail "a section for a file that is not there"

err=$("$page" "$root/nowhere" 1 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "machine.md missing; run tools/compare" <<<"$err" ||
  fail "missing folder: exit $rc: $err"
err=$("$page" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "usage: tools/results-page DIR ELAPSED_SECONDS" <<<"$err" ||
  fail "no arguments: exit $rc: $err"
echo PASS
