#!/usr/bin/env bash
# bench/tradeoff with tiny points: every contender it is asked for gets a row
# at every gap in both modes, the verdicts and the CSV are written, and bad
# flags exit 2 naming what is accepted.
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
done
for name in 'haltpool block' 'std::binary_semaphore' 'folly-style' \
    'std::condition_variable pool' 'haltpool default, back-off off'; do
  grep -q "^| $name" <<<"$out" || fail "no row for $name"
done
[[ $(head -1 "$dir/t.csv") == mode,contender,gap_us,samples,mean_us,p50_us,p99_us,cpu_pct ]] ||
  fail "CSV header"
[[ $(grep -c '^pair,' "$dir/t.csv") -eq $((11 * $(grep -c "^pair,.*,0,[0-9]" "$dir/t.csv"))) ]] ||
  fail "CSV: pair curves without 11 gaps"
[[ $(cat "$dir/t.md") == "$out" ]] || fail "--markdown differs from stdout"

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
echo PASS
