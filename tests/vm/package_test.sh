#!/usr/bin/env bash
# The Debian package (tests/vm/deb.sh builds it with dpkg-buildpackage -b -us -uc): lintian
# reports no error, and it holds what an operator needs - the binaries, the helper scripts,
# the units and the slice, the module list, the example configuration (a conffile), the man
# pages of both programs and their bash completions, the Prometheus rules and the Grafana
# dashboard.
TEST_NAME=package  # for common.sh's log lines and temp dir names
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_cmd dpkg-buildpackage dh lintian
make_tmpdir
T=$TEST_TMPDIR
EVIDENCE=${LINECAP_VM_EVIDENCE:-}

DEB=$(bash "$(dirname "${BASH_SOURCE[0]}")/deb.sh") || fail "the package did not build"
log "package: $DEB"

rc=0
lintian --fail-on error --tag-display-limit 0 "$DEB" >"$T/lintian" 2>&1 || rc=$?
cat "$T/lintian" >&2
[[ -z $EVIDENCE ]] || { mkdir -p "$EVIDENCE"; cp "$T/lintian" "$EVIDENCE/lintian.txt"; }
grep -q '^E: ' "$T/lintian" && fail "lintian reports errors"
[[ $rc == 0 ]] || fail "lintian exited $rc"

dpkg-deb -c "$DEB" | awk '{ print $NF }' | sed 's|^\./|/|' >"$T/contents"
for f in /usr/sbin/linecapd /usr/bin/linecap \
    /usr/sbin/linecap-bind /usr/sbin/linecap-hugepages /usr/sbin/linecap-shield \
    /lib/systemd/system/linecapd.service /lib/systemd/system/linecap-bind.service \
    /lib/systemd/system/linecap-hugepages.service /lib/systemd/system/linecap-shield.service \
    /lib/systemd/system/linecap.slice /usr/lib/modules-load.d/linecap.conf /usr/lib/sysctl.d/60-linecap.conf \
    /etc/linecap/linecap.yaml /usr/share/man/man8/linecapd.8.gz /usr/share/man/man1/linecap.1.gz \
    /usr/share/bash-completion/completions/linecap /usr/share/bash-completion/completions/linecapd \
    /usr/share/linecap/prometheus/linecap-rules.yml /usr/share/linecap/grafana/linecap.json; do
    grep -qx -- "$f" "$T/contents" || fail "the package lacks $f"
done
dpkg-deb -f "$DEB" Conffiles 2>/dev/null | grep -q /etc/linecap/linecap.yaml \
    || { dpkg-deb -e "$DEB" "$T/control" && grep -qx /etc/linecap/linecap.yaml "$T/control/conffiles"; } \
    || fail "/etc/linecap/linecap.yaml is not a conffile (an upgrade would overwrite the operator's edits)"
# The units point at the installed programs and configuration.
dpkg-deb --fsys-tarfile "$DEB" | tar -xf - -C "$T" ./lib/systemd/system
grep -q '^ExecStart=/usr/sbin/linecapd --config \${LINECAP_CONFIG}$' "$T/lib/systemd/system/linecapd.service" \
    || fail "linecapd.service does not run /usr/sbin/linecapd"
grep -q '^Environment=LINECAP_CONFIG=/etc/linecap/linecap.yaml$' "$T/lib/systemd/system/linecapd.service" \
    || fail "linecapd.service does not default to /etc/linecap/linecap.yaml"
log "depends: $(dpkg-deb -f "$DEB" Depends)"
log "PASS"
