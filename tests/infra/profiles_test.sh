#!/usr/bin/env bash
# The install profiles (scripts/install-deps.sh run|test|vm) cannot go silently short:
#   1. the run profile brings none of the suite's packages (Ceph, Chromium, Stenographer,
#      Prometheus, clang, tshark) into a bare Debian root;
#   2. every program a test or bench asks for (need_cmd, outside tests/vm) comes with the
#      test profile;
#   3. the demo as the README gives it, `scripts/demo.sh` (a short run), works with only the
#      run profile's programs on PATH.
# What each profile brings is read from this machine's dpkg database
# (tests/lib/linecap_harness/packages.py): a bare root's packages, the profile's, and what
# they depend on.
TEST_NAME=infra-profiles
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_cmd python3 dpkg-query
make_tmpdir
DEPS="bash $LINECAP_SRC/scripts/install-deps.sh"
PACKAGES="python3 -m linecap_harness.packages"
mapfile -t run < <($DEPS --list run)
mapfile -t test_profile < <($DEPS --list test)
((${#run[@]} > 0 && ${#test_profile[@]} > ${#run[@]})) || fail "install-deps.sh --list gave no profiles"
$PACKAGES closure "${test_profile[@]}" >/dev/null 2>"$TEST_TMPDIR/closure.err" \
    || skip "the test profile is not installed here: $(cat "$TEST_TMPDIR/closure.err")"

# --- 1. the run profile ------------------------------------------------------------------
$PACKAGES closure "${run[@]}" >"$TEST_TMPDIR/run.txt" || fail "the run profile's closure"
for suite_only in ceph-mon ceph-osd radosgw chromium stenographer prometheus clang-14 tshark googletest; do
    grep -qx "$suite_only" "$TEST_TMPDIR/run.txt" && fail "the run profile brings $suite_only"
done
log "run profile: $(wc -l <"$TEST_TMPDIR/run.txt") packages in a bare root with it"

# --- 2. what the tests ask for -------------------------------------------------------------
$PACKAGES path "$TEST_TMPDIR/test-path" "${test_profile[@]}" || fail "the test profile's programs"
short=()
while read -r cmd; do
    [[ -e $TEST_TMPDIR/test-path/$cmd ]] || short+=("$cmd")
done < <(cd "$LINECAP_SRC" && grep -rhoE '^\s*need_cmd( [A-Za-z0-9._+-]+)+' tests bench --include='*.sh' \
    --exclude-dir=vm | sed 's/^\s*need_cmd //' | tr ' ' '\n' | sort -u)
((${#short[@]} == 0)) || fail "the test profile brings no ${short[*]} (need_cmd in tests/ or bench/)"

# --- 3. the demo on the run profile alone ----------------------------------------------
need_root
$PACKAGES path "$TEST_TMPDIR/run-path" "${run[@]}" || fail "the run profile's programs"
[[ -e $TEST_TMPDIR/run-path/tcpdump ]] && fail "tcpdump is on the run profile's PATH: the check would see nothing"
show_on_failure "$TEST_TMPDIR/demo.log"
rc=0
(cd "$LINECAP_SRC" && PATH=$TEST_TMPDIR/run-path LINECAP_BUILD_DIR=$LINECAP_BUILD \
    LINECAP_DEMO_DIR=$TEST_TMPDIR/demo bash scripts/demo.sh 4) >"$TEST_TMPDIR/demo.log" 2>&1 || rc=$?
((rc == 0)) || fail "scripts/demo.sh with only the run profile's programs exited $rc"
grep -q "command not found" "$TEST_TMPDIR/demo.log" && fail "the demo missed a program: $(grep 'command not found' "$TEST_TMPDIR/demo.log")"
compgen -G "$TEST_TMPDIR/demo/*.pcap" >/dev/null || fail "the demo finished no capture file"
log "profiles: run brings no suite package, test every need_cmd, and the demo runs on run alone"
