#!/usr/bin/env bash
# Runs tools/bench-sockperf against the real echo_server with a stand-in
# for sockperf (CI machines may lack it) whose clients print fixed
# statistics and a round-trip count that follows --mps: every server must
# start and stop, the table must have a row per server and client rate with
# the numbers parsed (latencies, ratios, a server CPU % and IPIs per round
# trip), and the three verdict lines must be there (target 1 not met: every
# ratio is 1; target 2 met: poll's avg equals block's).
set -uo pipefail
script=$PWD/$1
server=$PWD/$2
dir=${TEST_TMPDIR:-$(mktemp -d)}

# The stand-in refuses any option the real client would not take the same
# way, so a misspelt one fails the run.
cat >"$dir/sockperf" <<'FAKE'
#!/usr/bin/env bash
mode=$1
shift
case $mode in
  sr|server) echo "sockperf: [tid $$] using recvfrom() to block on socket(s)"; exec sleep 600 ;;
  ping-pong) ;;
  *) echo "fake sockperf: unknown mode $mode" >&2; exit 2 ;;
esac
mps=
while (($#)); do
  case $1 in
    -i|-p|-m|-t) [[ $# -ge 2 ]] || exit 2; shift 2 ;;
    --tcp|--nonblocked) shift ;;
    --mps=*) mps=${1#--mps=}; shift ;;
    *) echo "fake sockperf: unknown option $1" >&2; exit 2 ;;
  esac
done
case $mps in
  max) n=40000 ;;
  ''|0*|*[!0-9]*) echo "fake sockperf: bad --mps '$mps'" >&2; exit 2 ;;
  *) n=$mps ;;
esac
echo "sockperf: Warmup stage (sending a few dummy messages)..."
echo "sockperf: Starting test..."
sleep 0.05
echo "sockperf: Test end (interrupted by timer)"
echo "sockperf: Test ended"
echo "sockperf: [Total Run] RunTime=1.000 sec; Warm up time=400 msec; SentMessages=$n; ReceivedMessages=$n"
echo "sockperf: ========= Printing statistics for Server No: 0"
echo "sockperf: [Valid Duration] RunTime=0.550 sec; SentMessages=$((n / 2)); ReceivedMessages=$((n / 2))"
printf 'sockperf: \033[2;35m====> avg-latency=12.500 (std-dev=3.1)\033[0m\n'
echo "sockperf: Summary: Latency is 12.500 usec"
echo "sockperf: ---> percentile 99.000 =   40.000"
echo "sockperf: ---> percentile 50.000 =   10.250"
FAKE
chmod +x "$dir/sockperf"

out=$(SOCKPERF="$dir/sockperf" ECHO_SERVER="$server" "$script" 1)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || { echo "bench-sockperf exited $rc"; exit 1; }
num='[0-9]+(\.[0-9]+)?'
for name in "sockperf sr" "echo_server, "{haltpoll,predictive,poll,block,fixed,default}; do
  for rate in max 50000/s 10000/s 2000/s 500/s "max, --nonblocked"; do
    row="| $name | $rate | 12.500 | 10.250 | 40.000 | 1.00 | 1.00 | "
    grep -Fq "$row" <<<"$out" || { echo "no row '$row...'"; exit 1; }
    # The server's CPU % and the IPIs per round trip: numbers, not n/a.
    grep -F "$row" <<<"$out" | grep -qE "^[^|]*(\|[^|]*){7}\| $num \| $num \|$" ||
      { echo "no CPU % or IPIs in: $(grep -F "$row" <<<"$out")"; exit 1; }
  done
done
rows=$(grep -c '^| \(sockperf sr\|echo_server, \)' <<<"$out")
[[ $rows -eq 42 ]] || { echo "expected 42 rows, got $rows"; exit 1; }
grep -qE "^Target 1, the default governor at most 0\.75x sockperf sr's avg and p99 with the server at most 60 % of a CPU, at max and 10000/s: max: avg 1\.00x, p99 1\.00x, server CPU $num %; 10000/s: avg 1\.00x, p99 1\.00x, server CPU $num %: not met\.$" <<<"$out" ||
  { echo "no target 1 line, or not as expected"; exit 1; }
grep -qx "Target 2, poll never slower than block, avg us at each client rate: max: 12.500 against 12.500; 50000/s: 12.500 against 12.500; 10000/s: 12.500 against 12.500; 2000/s: 12.500 against 12.500; 500/s: 12.500 against 12.500; max, --nonblocked: 12.500 against 12.500: met." <<<"$out" ||
  { echo "no target 2 line, or not as expected"; exit 1; }
grep -qE "^Target 3, poll at most 0\.05 IPIs per round trip with the --nonblocked client at max: $num: (met|not met)\.$" <<<"$out" ||
  { echo "no target 3 line, or not as expected"; exit 1; }
echo PASS
