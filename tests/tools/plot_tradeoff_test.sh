#!/usr/bin/env bash
# tools/plot-tradeoff reads bench/tradeoff's RFC 4180 CSV: contender names
# with a comma and with a double quote reach the plot data whole, with their
# values; every point's default and Pareto-front marks are right; bad CSV
# exits 2 naming the problem; with gnuplot, one SVG per mode and arrivals.
# Usage: plot_tradeoff_test.sh PLOT_TRADEOFF
set -uo pipefail
plot=$1
fail() { echo "FAIL: $*"; exit 1; }
dir=${TEST_TMPDIR:-$(mktemp -d)}

# As bench/tradeoff_table.cc's CurvesCsv writes it (tradeoff_table_test
# checks that writer's quoting).
cat >"$dir/t.csv" <<'CSV'
mode,arrivals,contender,gap_us,samples,mean_us,p50_us,p99_us,cpu_pct,submit_late_us
pool,periodic,haltpool default (predictive),5,100,20.000,4.000,40.000,10.000,0.500
pool,periodic,"haltpool default, back-off off",5,100,4.000,3.000,9.000,30.000,0.500
pool,periodic,"the ""quoted"" pool",5,100,25.000,5.000,50.000,5.000,0.500
pool,periodic,slow and hungry,5,100,30.000,5.000,50.000,40.000,0.500
pool,bursty,haltpool default (predictive),1000,80,7.500,3.000,40.000,2.500,0.500
pool,bursty,"a, ""b"", c",1000,80,7.500,3.000,40.000,2.000,0.500
CSV
tab=$'\t'
expected="pool${tab}periodic${tab}5${tab}haltpool default (predictive)${tab}20.000${tab}10.000${tab}1${tab}1
pool${tab}periodic${tab}5${tab}haltpool default, back-off off${tab}4.000${tab}30.000${tab}0${tab}1
pool${tab}periodic${tab}5${tab}the \"quoted\" pool${tab}25.000${tab}5.000${tab}0${tab}1
pool${tab}periodic${tab}5${tab}slow and hungry${tab}30.000${tab}40.000${tab}0${tab}0
pool${tab}bursty${tab}1000${tab}haltpool default (predictive)${tab}7.500${tab}2.500${tab}1${tab}0
pool${tab}bursty${tab}1000${tab}a, \"b\", c${tab}7.500${tab}2.000${tab}0${tab}1"
got=$("$plot" --data "$dir/t.csv") || fail "--data exited $?"
[[ $got == "$expected" ]] || fail "--data: got
$got
expected
$expected"

# A file written before the waker's lateness had a column still reads.
sed -e 's/,submit_late_us$//' -e 's/,0\.500$//' "$dir/t.csv" >"$dir/before.csv"
got=$("$plot" --data "$dir/before.csv") || fail "--data, no lateness column: exited $?"
[[ $got == "$expected" ]] || fail "--data, no lateness column: got
$got"

printf 'mode,arrivals,contender,gap_us,samples,mean_us,p50_us,p99_us,cpu_pct\npool,periodic,"open,5,1,1,1,1,1\n' >"$dir/open.csv"
err=$("$plot" --data "$dir/open.csv" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "not RFC 4180 CSV" <<<"$err" || fail "unclosed quote: exit $rc: $err"
printf 'mode,contender,gap_us\n' >"$dir/old.csv"
err=$("$plot" --data "$dir/old.csv" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "is not bench/tradeoff's CSV (header mode,arrivals,contender" <<<"$err" ||
  fail "old header: exit $rc: $err"
err=$("$plot" 2>&1 >/dev/null)
[[ $? -eq 2 ]] && grep -q "usage: tools/plot-tradeoff CSV DIR" <<<"$err" || fail "no arguments: $err"

if command -v gnuplot >/dev/null; then
  "$plot" "$dir/t.csv" "$dir/svg" || fail "plot exited $?"
  for f in tradeoff_pool_periodic.svg tradeoff_pool_bursty.svg; do
    [[ -s $dir/svg/$f ]] || fail "no $f"
  done
  grep -q 'no back-off' "$dir/svg/tradeoff_pool_periodic.svg" || fail "no label in the SVG"
else
  echo "gnuplot missing: the drawing is not checked"
fi
echo PASS
