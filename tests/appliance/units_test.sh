#!/usr/bin/env bash
# The systemd units: `systemd-analyze verify` on copies generated from the same templates
# as the installed units but pointing into the build tree (verify insists that every
# Exec*= program exists), failing on anything it reports about them - it reports unknown
# keys and unparsable values but still exits 0, so its output is what counts. A unit with
# a deliberate mistake must be reported (so the check is known to look), the installed
# units must have every @VARIABLE@ filled in, and the contract the daemon relies on
# (Type=notify, the watchdog, no restart on 78, ...) must be there.
# Usage: units_test.sh TEST_UNIT_DIR INSTALL_UNIT_DIR
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

TEST_UNITS=${1:?usage: units_test.sh TEST_UNIT_DIR INSTALL_UNIT_DIR}
INSTALL_UNITS=${2:?usage: units_test.sh TEST_UNIT_DIR INSTALL_UNIT_DIR}
UNITS=(linecapd.service linecap-hugepages.service linecap-bind.service linecap-shield.service linecap-api.service)
need_cmd systemd-analyze
need_linecapd
make_tmpdir
T=$TEST_TMPDIR

for u in "${UNITS[@]}"; do
    for dir in "$TEST_UNITS" "$INSTALL_UNITS"; do
        [[ -r $dir/$u ]] || fail "no $dir/$u (not generated?)"
        if grep -n '@[A-Z_]*@' "$dir/$u"; then fail "$dir/$u: unreplaced @VARIABLE@"; fi
    done
done

# verify UNIT_FILE...: runs systemd-analyze verify; output in $OUT, status in $RC.
# Documentation=man:linecapd(8) is checked too: MANPATH holds doc/linecapd.8.
mkdir -p "$T/man/man8"
ln -s "$LINECAP_SRC/doc/linecapd.8" "$T/man/man8/linecapd.8"
verify() {
    RC=0
    OUT=$(cd "$T" && MANPATH=$T/man SYSTEMD_LOG_LEVEL=notice systemd-analyze verify "$@" 2>&1) || RC=$?
    printf '%s\n' "$OUT" | sed '/^$/d; s/^/    | /' >&2
}

# The generated copies, as they are.
cp "${UNITS[@]/#/$TEST_UNITS/}" "$T/"
verify "${UNITS[@]/#/$T/}"
[[ $RC == 0 ]] || fail "systemd-analyze verify exited $RC"
if grep -E 'linecap|\.service' <<<"$OUT"; then
    fail "systemd-analyze verify reported problems in the units (above)"
fi

# The check looks: a misspelt key and an unparsable value are reported.
mkdir -p "$T/broken"
cp "${UNITS[@]/#/$TEST_UNITS/}" "$T/broken/"
sed -i 's/^Type=notify$/Type=notfy/; s/^WatchdogSec=.*/WatchdogSecs=10s/' "$T/broken/linecapd.service"
verify "${UNITS[@]/#/$T/broken/}"
grep -q "linecapd.service:.*notfy" <<<"$OUT" || fail "verify did not report Type=notfy"
grep -q "linecapd.service:.*WatchdogSecs" <<<"$OUT" || fail "verify did not report WatchdogSecs="

# The contract with the daemon and the scripts.
D=$TEST_UNITS/linecapd.service
# shellcheck disable=SC2016 # $MAINPID and ${LINECAP_CONFIG} are systemd's, literally
for line in 'Type=notify' 'NotifyAccess=main' 'WatchdogSec=10s' 'Restart=on-failure' \
    'RestartPreventExitStatus=78' 'LimitMEMLOCK=infinity' 'ExecReload=/bin/kill -HUP $MAINPID' \
    'ProtectSystem=strict' 'ProtectHome=yes' 'PrivateTmp=yes' 'NoNewPrivileges=yes' \
    'CapabilityBoundingSet=CAP_IPC_LOCK CAP_SYS_NICE CAP_SYS_RAWIO' \
    'Requires=linecap-hugepages.service linecap-bind.service' \
    'After=linecap-hugepages.service linecap-bind.service' \
    'Wants=linecap-shield.service' 'After=linecap-shield.service' 'Slice=linecap.slice' \
    "ExecStart=$LINECAPD --config \${LINECAP_CONFIG}" \
    "ExecStartPre=-$LINECAPD --config \${LINECAP_CONFIG} --check"; do
    grep -qxF -- "$line" "$D" || fail "linecapd.service lacks the line: $line"
done
grep -qE '^ReadWritePaths=.*/var/lib/linecap.*/dev/hugepages.*/dev/vfio' "$D" \
    || fail "linecapd.service: ReadWritePaths= lacks the capture directory, /dev/hugepages or /dev/vfio"
for u in linecap-hugepages.service linecap-bind.service linecap-shield.service; do
    grep -qx 'Type=oneshot' "$TEST_UNITS/$u" || fail "$u is not Type=oneshot"
    grep -qx 'RemainAfterExit=yes' "$TEST_UNITS/$u" || fail "$u lacks RemainAfterExit=yes"
    grep -qx 'Before=linecapd.service' "$TEST_UNITS/$u" || fail "$u is not ordered Before=linecapd.service"
done

# The exposure score of the hardening, for the record (offline analysis, systemd >= 250).
if score=$(cd "$T" && systemd-analyze security --offline=yes "$T/linecapd.service" 2>/dev/null | tail -n 1); then
    log "systemd-analyze security: $score"
fi
log "units verified"
