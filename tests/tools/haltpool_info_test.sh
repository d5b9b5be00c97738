#!/usr/bin/env bash
# Runs tools/haltpool_info: the text and --json reports carry every part
# (hypervisor, steal, wait mechanisms, profile, calibration, configuration
# with sources; the calibration is a measurement, or says why it has none
# when a round trip stalled on a loaded machine); HALTPOOL_HYPERVISOR picks the profile; a bad variable or
# argument exits 2 with the message.
set -uo pipefail
info=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$(env -i HALTPOOL_HYPERVISOR=xen "$info") || fail "text report exited $?"
echo "$out"
for want in '^Hypervisor: ' '^Steal time: ' '^Kernel cpuidle: ' \
            '^Wait mechanisms (best: ' '^  spin    usable' \
            '^Profile: xen (from HALTPOOL_HYPERVISOR)' \
            'governor predictive, poll cap 50us, block exit latency 25us' \
            '^Calibration: block\( wake \|: a round trip took over \)' \
            "^  HALTPOOL_HYPERVISOR = 'xen'  \[environment\]" \
            "^  HALTPOOL_GOVERNOR = 'predictive'  \[profile\]"; do
  grep -q -- "$want" <<<"$out" || fail "text lacks: $want"
done

out=$(env -i HALTPOOL_CALIBRATE=0 HALTPOOL_GOVERNOR=block "$info" --json) ||
  fail "json report exited $?"
for want in '^{"hypervisor":{"kind":"' '"steal":{' '"kernel_cpuidle":{' \
            '"wait_mechanisms":\[{"name":"spin","usable":true,' \
            '"profile":{"environment":"' '"calibration":{"measured":false,' \
            '{"name":"HALTPOOL_GOVERNOR","value":"block","source":"environment"}' \
            '{"name":"HALTPOOL_CALIBRATE","value":"0","source":"environment"}' \
            ']}$'; do
  grep -q -- "$want" <<<"$out" || fail "JSON lacks: $want"
done
kind=$(sed 's/^{"hypervisor":{"kind":"\([^"]*\)".*/\1/' <<<"$out")
grep -q "\"profile\":{\"environment\":\"$kind\"" <<<"$out" ||
  fail "the profile is not the detected environment's ($kind)"

err=$(env -i HALTPOOL_HYPERVISOR=kvm "$info" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] || fail "bad HALTPOOL_HYPERVISOR exited $rc"
grep -q "HALTPOOL_HYPERVISOR='kvm': unknown environment; accepted: auto|" <<<"$err" ||
  fail "message: $err"
err=$("$info" --yaml 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "unknown flag --yaml; accepted: --json" <<<"$err" ||
  fail "bad argument: exit $rc, $err"
echo PASS
