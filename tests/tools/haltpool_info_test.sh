#!/usr/bin/env bash
# Runs tools/haltpool_info: the text and --json reports carry every part
# (hypervisor, steal, wait mechanisms, profile, calibration, configuration
# with sources); HALTPOOL_HYPERVISOR picks the profile; a bad variable or
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
            '^Calibration: block wake ' \
            "^  HALTPOOL_HYPERVISOR = 'xen'  \[environment\]" \
            "^  HALTPOOL_GOVERNOR = 'predictive'  \[profile\]"; do
  grep -q -- "$want" <<<"$out" || fail "text lacks: $want"
done

out=$(env -i HALTPOOL_CALIBRATE=0 HALTPOOL_GOVERNOR=block "$info" --json) ||
  fail "json report exited $?"
python3 - "$out" <<'PY' || fail "bad JSON report"
import json, sys
j = json.loads(sys.argv[1])
assert set(j) == {"hypervisor", "steal", "kernel_cpuidle", "wait_mechanisms",
                  "profile", "calibration", "configuration"}, sorted(j)
assert j["calibration"]["measured"] is False, j["calibration"]
assert any(m["name"] == "spin" and m["usable"] for m in j["wait_mechanisms"])
conf = {v["name"]: v for v in j["configuration"]}
assert conf["HALTPOOL_GOVERNOR"] == {"name": "HALTPOOL_GOVERNOR",
                                     "value": "block", "source": "environment"}
assert conf["HALTPOOL_CALIBRATE"]["value"] == "0"
assert j["profile"]["environment"] == j["hypervisor"]["kind"]
PY

err=$(env -i HALTPOOL_HYPERVISOR=kvm "$info" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] || fail "bad HALTPOOL_HYPERVISOR exited $rc"
grep -q "HALTPOOL_HYPERVISOR='kvm': unknown environment; accepted: auto|" <<<"$err" ||
  fail "message: $err"
err=$("$info" --yaml 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] && grep -q "unknown argument '--yaml'; accepted: --json" <<<"$err" ||
  fail "bad argument: exit $rc, $err"
echo PASS
