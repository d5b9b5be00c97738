#!/usr/bin/env bash
# bench/tradeoff with tiny points: every contender it is asked for gets a row
# at every gap in both modes, the dominance tables, the verdicts and the CSV
# (names with commas quoted) are written; a pool run under every arrival
# process gets tables for each; bad flags exit 2 naming what is accepted.
# Usage: tradeoff_smoke_test.sh TRADEOFF [--only=...]
set -uo pipefail
tradeoff=$1
shift
fail() { echo "FAIL: $*"; exit 1; }
dir=${TEST_TMPDIR:-$(mktemp -d)}

out=$("$tradeoff" --point_ms=1 --min_samples=2 --max_samples=3 \
  --csv="$dir/t.csv" --markdown="$dir/t.md" "$@")
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "exited $rc"
cells='( [0-9.]+ \([0-9.]+ / [0-9.]+\) \|){11}'
for mode in pair pool; do
  table=$(sed -n "/^#### $mode: mean wake latency/,/^#### $mode: CPU/p" <<<"$out")
  rows=$(grep -cE "^\| [^|]+ \|$cells\$" <<<"$table")
  [[ $rows -ge 7 ]] || fail "$mode: $rows latency rows"
  grep -q "^| haltpool default (.*) |" <<<"$table" || fail "$mode: no default row"
  grep -Eq "^$mode: the default (meets|does not meet) the target .* Target (met|not met)\.\$" \
    <<<"$out" || fail "$mode: no verdict"
  dominance=$(sed -n "/^#### $mode: who dominates the default/,/^#### /p" <<<"$out")
  [[ $(grep -cE '^\| [0-9.]+( [um]s)? \| [0-9.]+ \| [0-9.]+ \| [^|]+ \| [0-9.]+ \| (not dominated|dominated by: .+) \|$' \
    <<<"$dominance") -eq 11 ]] || fail "$mode: dominance table: $dominance"
done
for name in 'haltpool block' 'std::binary_semaphore' 'folly-style' \
    'std::condition_variable pool' 'haltpool default, back-off off'; do
  grep -q "^| $name" <<<"$out" || fail "no row for $name"
done
[[ $(head -1 "$dir/t.csv") == mode,arrivals,contender,gap_us,samples,mean_us,p50_us,p99_us,cpu_pct,submit_late_us ]] ||
  fail "CSV header"
grep -q "^#### pair: how late the waker sent each wake past its plan, mean us" <<<"$out" ||
  fail "no table of the waker's lateness"
[[ $(grep -c '^pair,periodic,' "$dir/t.csv") -eq $((11 * $(grep -c "^pair,periodic,.*,0,[0-9]" "$dir/t.csv"))) ]] ||
  fail "CSV: pair curves without 11 gaps"
grep -q '^pool,periodic,"haltpool default, back-off off",0,' "$dir/t.csv" ||
  fail "CSV: the name with a comma is not quoted"
[[ $(cat "$dir/t.md") == "$out" ]] || fail "--markdown differs from stdout"

out=$("$tradeoff" --point_ms=1 --min_samples=2 --max_samples=3 --modes=pool \
  --arrivals=poisson,bursty --submitter=spin --seed=7 --only=haltpool,pool \
  --csv="$dir/a.csv")
rc=$?
[[ $rc -eq 0 ]] || fail "--arrivals=poisson,bursty exited $rc"
for a in poisson bursty; do
  grep -q "^#### pool, $a arrivals: mean wake latency" <<<"$out" || fail "no $a table"
  grep -q "^#### pool, $a arrivals: who dominates the default" <<<"$out" || fail "no $a dominance"
  grep -q "^pool,$a,\"haltpool default, back-off off\",10000," "$dir/a.csv" || fail "CSV: no $a rows"
done
grep -q '^pool,periodic,' "$dir/a.csv" && fail "periodic rows though not asked for"
grep -q '^### .*, spinning submitter)$' <<<"$out" || fail "header does not name the spinning submitter"

err=$("$tradeoff" --arrivals=periodic,steady 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "tradeoff: --arrivals: 'steady': accepted: periodic, poisson, bursty" <<<"$err" ||
  fail "bad --arrivals: exit $rc: $err"
err=$("$tradeoff" --submitter=busy 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "tradeoff: --submitter: 'busy': accepted: sleep, spin" <<<"$err" ||
  fail "bad --submitter: exit $rc: $err"
err=$("$tradeoff" --modes=pear 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "tradeoff: --modes: 'pear': accepted: pair, pool" <<<"$err" ||
  fail "bad --modes: exit $rc: $err"
err=$("$tradeoff" --only=nothing-by-this-name --point_ms=1 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "matches no contender" <<<"$err" ||
  fail "--only matching nothing: exit $rc: $err"
err=$("$tradeoff" --point_ms=0 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "Illegal value '0' specified for flag 'point_ms'; accepted: a whole number from 1" <<<"$err" ||
  fail "bad --point_ms: exit $rc: $err"

# --submitter_cpu: the first CPU this test may use runs; one outside the
# mask and one out of range exit 2 naming the flag.
cpu=$(awk '/^Cpus_allowed_list/ { split($2, a, "[-,]"); print a[1] }' /proc/self/status)
out=$("$tradeoff" --point_ms=1 --min_samples=2 --max_samples=3 --modes=pool \
  --gaps=0,50us --only="haltpool default (" --submitter_cpu="$cpu" 2>&1)
rc=$?
[[ $rc -eq 0 ]] && grep -q "^| haltpool default (.*) |" <<<"$out" ||
  fail "--submitter_cpu=$cpu: exit $rc: $out"
err=$("$tradeoff" --submitter_cpu=8191 --point_ms=1 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "^tradeoff: --submitter_cpu=8191: CPU 8191 is not one this process may run on$" <<<"$err" ||
  fail "--submitter_cpu outside the mask: exit $rc: $err"
err=$("$tradeoff" --submitter_cpu=-2 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "flag 'submitter_cpu'; accepted: a whole number from -1 to 8191" <<<"$err" ||
  fail "bad --submitter_cpu: exit $rc: $err"
echo PASS
