#!/usr/bin/env bash
# bench/pool_latency and bench/pool_throughput with tiny sizes: every
# contender gets a row at every gap, the CSV is written, a bad option exits 2
# naming it; every throughput benchmark runs.
# Usage: pool_benchmarks_smoke_test.sh POOL_LATENCY POOL_THROUGHPUT [--tsan]
# (--tsan: leave oneTBB out, whose synchronization ThreadSanitizer cannot see)
set -uo pipefail
latency=$1
throughput=$2
tsan=${3:-}
fail() { echo "FAIL: $*"; exit 1; }
dir=${TEST_TMPDIR:-$(mktemp -d)}

extra=()
[[ $tsan == --tsan ]] && extra=(--without_tbb)
out=$("$latency" --workers=1 --scale=0.0001 --csv="$dir/l.csv" "${extra[@]}")
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "pool_latency exited $rc"
names=('haltpool default (' 'haltpool haltpoll' 'haltpool block' 'mutex + condvar pool')
[[ $tsan == --tsan ]] || names+=('oneTBB task_arena::enqueue')
for name in "${names[@]}"; do
  rows=$(grep -cF "| $name" <<<"$out")
  [[ $rows -eq 5 ]] || fail "pool_latency: $rows rows for '$name', want one per gap (5)"
done
[[ $(head -1 "$dir/l.csv") == contender,gap_us,p50_us,p99_us,mean_us,pool_cpu_pct ]] ||
  fail "pool_latency CSV header"
err=$("$latency" --scale=0 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "^pool_latency: --scale=0: accepted: above 0" <<<"$err" ||
  fail "bad --scale: exit $rc: $err"

filter=()
[[ $tsan == --tsan ]] && filter=(--benchmark_filter=Haltpool)
out=$("$throughput" --benchmark_min_time=0.001 "${filter[@]}" 2>&1)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "pool_throughput exited $rc"
for name in BM_HaltpoolOutsideProducer BM_HaltpoolInsideFanOut; do
  grep -q "^$name" <<<"$out" || fail "pool_throughput: no $name"
done
[[ $tsan == --tsan ]] || grep -q '^BM_TbbOutsideProducer' <<<"$out" ||
  fail "pool_throughput: no oneTBB row"
echo PASS
