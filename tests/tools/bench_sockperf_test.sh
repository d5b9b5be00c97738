#!/usr/bin/env bash
# Runs tools/bench-sockperf against the real echo_server with a stand-in
# for sockperf (CI machines may lack it) whose clients print fixed
# statistics: every server must start and stop, the table must have a row
# per server, transport and client count with the numbers parsed, and the
# last line must state the target's verdict (not met: every ratio is 1).
set -uo pipefail
script=$PWD/$1
server=$PWD/$2
dir=${TEST_TMPDIR:-$(mktemp -d)}

cat >"$dir/sockperf" <<'FAKE'
#!/usr/bin/env bash
case $1 in
  server) echo "sockperf: [tid $$] using recvfrom() to block on socket(s)"; exec sleep 600 ;;
  ping-pong)
    printf 'sockperf: \033[2;35m====> avg-latency=12.500 (std-dev=3.1)\033[0m\n'
    echo "sockperf: ---> percentile 99.000 =   40.000"
    echo "sockperf: ---> percentile 50.000 =   10.250" ;;
  *) exit 2 ;;
esac
FAKE
chmod +x "$dir/sockperf"

out=$(SOCKPERF="$dir/sockperf" ECHO_SERVER="$server" "$script" 1)
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || { echo "bench-sockperf exited $rc"; exit 1; }
rows=$(grep -c '^| \(sockperf sr\|echo_server, [a-z]*\) | \(UDP\|TCP\) | [14] | 12.500 | 10.250 | 40.000 | 1.00 | 1.00 |$' <<<"$out")
[[ $rows -eq 28 ]] || { echo "expected 28 rows with the parsed numbers, got $rows"; exit 1; }
for gov in haltpoll predictive poll block fixed default; do
  grep -q "^| echo_server, $gov | TCP | 4 |" <<<"$out" || { echo "no row for $gov"; exit 1; }
done
last=$(tail -1 <<<"$out")
[[ $last == "Target: echo_server's default governor <= 0.7x sockperf sr's average and p99, single client: TCP avg 1.00x, p99 1.00x; UDP avg 1.00x, p99 1.00x: not met." ]] ||
  { echo "unexpected last line: $last"; exit 1; }
echo PASS
