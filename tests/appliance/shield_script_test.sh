#!/usr/bin/env bash
# linecap-shield (scripts/linecap-shield.sh) against a fake systemctl, a fake cgroup root and
# a fake sysfs for linecapd --print-cpus: apply gives linecap.slice every CPU (so that the
# cpuset controller stays on for it) and confines system/user/machine.slice to the CPUs the
# workers do not use, reset lifts the confinement (linecap.slice keeps its setting), status
# reads the slices' cpusets, and a configuration whose workers take every CPU is refused. The real thing runs in the VM test
# (tests/vm/vm_test.sh).
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=fake_tree.sh
source "$(dirname "${BASH_SOURCE[0]}")/fake_tree.sh"
need_linecapd
make_tmpdir
T=$TEST_TMPDIR
SHIELD=$LINECAP_SRC/scripts/linecap-shield.sh
for n in 0 1 2 3; do fake_cpu "$T/sys" "$n" 0; done
mkdir -p "$T/cgroup/system.slice"
echo "cpuset cpu io memory pids" >"$T/cgroup/cgroup.controllers"
echo 0,3 >"$T/cgroup/system.slice/cpuset.cpus.effective"
# The fake parses set-property as systemctl does: one unit, then assignments only (the real
# one answers "Not an assignment: user.slice" to a second unit name).
cat >"$T/systemctl" <<FAKE
#!/bin/bash
echo "\$*" >>"$T/systemctl.log"
[[ \$1 == set-property ]] || exit 0
shift; [[ \$1 == --runtime ]] && shift
shift
for a in "\$@"; do [[ \$a == *=* ]] || { echo "Not an assignment: \$a" >&2; exit 1; }; done
FAKE
chmod +x "$T/systemctl"
export LINECAP_SYSFS=$T/sys LINECAP_CGROUP=$T/cgroup SYSTEMCTL=$T/systemctl LINECAPD
printf 'eal: {lcores: "0-2", hugepages: false}\nports:\n  - {name: p0, device: net_null0}\noutput: {directory: "%s"}\n' \
    "$T" >"$T/cfg.yaml"

OUT=$(bash "$SHIELD" --config "$T/cfg.yaml" apply) || fail "apply failed: $OUT"
[[ $(cat "$T/systemctl.log") == "set-property --runtime linecap.slice AllowedCPUs=1-2,0,3
set-property --runtime system.slice AllowedCPUs=0,3
set-property --runtime user.slice AllowedCPUs=0,3
set-property --runtime machine.slice AllowedCPUs=0,3" ]] \
    || fail "apply ran: $(cat "$T/systemctl.log")"
grep -qF "worker CPUs 1-2 shielded" <<<"$OUT" || fail "apply said: $OUT"

: >"$T/systemctl.log"
bash "$SHIELD" --config "$T/cfg.yaml" reset >/dev/null || fail "reset failed"
[[ $(cat "$T/systemctl.log") == "set-property --runtime system.slice AllowedCPUs=
set-property --runtime user.slice AllowedCPUs=
set-property --runtime machine.slice AllowedCPUs=" ]] \
    || fail "reset ran: $(cat "$T/systemctl.log")"

OUT=$(bash "$SHIELD" --config "$T/cfg.yaml" status) || fail "status failed"
grep -qF "worker CPUs: 1-2; other CPUs: 0,3" <<<"$OUT" || fail "status said: $OUT"
grep -qF "system.slice: cpuset.cpus.effective 0,3" <<<"$OUT" || fail "status said: $OUT"

# Workers on every CPU: refused, nothing applied.
sed -i 's/"0-2"/"0@0,1@1,2@2,3@3,4@0"/' "$T/cfg.yaml"
: >"$T/systemctl.log"
RC=0
OUT=$(bash "$SHIELD" --config "$T/cfg.yaml" apply 2>&1) || RC=$?
[[ $RC == 1 ]] || fail "apply with every CPU taken exited $RC: $OUT"
grep -qF "none left for the other slices" <<<"$OUT" || fail "apply said: $OUT"
[[ ! -s $T/systemctl.log ]] || fail "apply ran systemctl anyway"

# No cgroup v2: refused with the reason.
sed -i 's/"0@0,1@1,2@2,3@3,4@0"/"0-2"/' "$T/cfg.yaml"
RC=0
OUT=$(LINECAP_CGROUP=$T/none bash "$SHIELD" --config "$T/cfg.yaml" apply 2>&1) || RC=$?
[[ $RC == 1 ]] && grep -qF "no cgroup v2 hierarchy" <<<"$OUT" || fail "without cgroup v2: exit $RC: $OUT"

# A bad configuration: linecapd's error, and the script fails.
echo "eal: {lcores: nope}" >"$T/bad.yaml"
RC=0
OUT=$(bash "$SHIELD" --config "$T/bad.yaml" apply 2>&1) || RC=$?
[[ $RC == 1 ]] && grep -qF -- "--print-cpus failed" <<<"$OUT" || fail "bad config: exit $RC: $OUT"
RC=0
bash "$SHIELD" >/dev/null 2>&1 || RC=$?
[[ $RC == 2 ]] || fail "no command: exit $RC, expected 2 (usage)"
log "ok"
