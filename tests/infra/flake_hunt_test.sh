#!/usr/bin/env bash
# Self-test of the flake hunt (tests/README.md, "Hunting flakes"):
#   1. tests/tools/flake_report.py over logs made here: runs, failures with meson's verdict,
#      skips, the slowest run against its timeout (times -t), "headroom < 2x", worst first,
#      exit 1 when a run failed and 0 when none did;
#   2. tests/tools/hogs.sh: its hogs spin and write, and a SIGTERM, or the death of the
#      script that started it (setpriv --pdeathsig, as run-tests.sh starts it), stops them
#      all and removes its file;
#   3. the command as tests/README.md gives it, `scripts/run-tests.sh --repeat 2 --load TEST`,
#      on this build (its own log name, so the suite's logs are untouched): both rounds run,
#      the table and the closing line count them.
TEST_NAME=infra-flake-hunt
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_cmd python3 setpriv
make_tmpdir
REPORT="python3 $LINECAP_SRC/tests/tools/flake_report.py"
HOGS=$LINECAP_SRC/tests/tools/hogs.sh

# --- 1. the report ---------------------------------------------------------------------
cat >"$TEST_TMPDIR/tests.json" <<'EOF'
[{"name": "steady", "timeout": 100, "suite": ["unit"]},
 {"name": "flaky", "timeout": 30, "suite": ["unit"]},
 {"name": "tight", "timeout": 10, "suite": ["integration"]},
 {"name": "absent", "timeout": 60, "suite": ["integration"]}]
EOF
run_log() { # run_log NAME RESULT DURATION: one line as meson test writes it
    printf '{"name": "linecap:unit / %s", "result": "%s", "duration": %s, "returncode": 0}\n' "$1" "$2" "$3"
}
{
    run_log steady OK 1.5
    run_log flaky OK 2
    run_log tight OK 4
} >"$TEST_TMPDIR/run1.json"
{
    run_log steady OK 2.5
    run_log flaky FAIL 3
    run_log tight SKIP 0.1
} >"$TEST_TMPDIR/run2.json"
{
    run_log steady OK 1
    run_log flaky TIMEOUT 30
    run_log tight OK 6
} >"$TEST_TMPDIR/run3.json"
rc=0
$REPORT --tests "$TEST_TMPDIR/tests.json" "$TEST_TMPDIR"/run{1,2,3}.json >"$TEST_TMPDIR/report.txt" || rc=$?
cat "$TEST_TMPDIR/report.txt"
((rc == 1)) || fail "flake_report: exit $rc with failed runs (expected 1)"
row() { awk -v n="$1" '$1 == n' "$TEST_TMPDIR/report.txt"; }
[[ $(sed -n 2p "$TEST_TMPDIR/report.txt" | awk '{print $1}') == flaky ]] || fail "the failing test is not first"
[[ $(row flaky | awk '{print $2, $3, $4, $5, $6}') == "3 2 0 30.0 30" ]] || fail "flaky's row: $(row flaky)"
row flaky | grep -q "(FAIL, TIMEOUT)" || fail "flaky's row does not give meson's verdicts: $(row flaky)"
[[ $(row tight | awk '{print $2, $3, $4, $5, $6, $7}') == "3 0 1 6.0 10 0.60" ]] || fail "tight's row: $(row tight)"
row tight | grep -q "headroom < 2x" || fail "tight (6 s of 10) is not marked"
row steady | grep -q "headroom" && fail "steady (2.5 s of 100) is marked"
row absent | grep -q . && fail "a test with no run has a row"
rc=0
$REPORT --tests "$TEST_TMPDIR/tests.json" --multiplier 2 "$TEST_TMPDIR/run1.json" >"$TEST_TMPDIR/report2.txt" || rc=$?
((rc == 0)) || fail "flake_report: exit $rc with no failed run (expected 0)"
[[ $(awk '$1 == "tight" {print $6, $7}' "$TEST_TMPDIR/report2.txt") == "20 0.20" ]] \
    || fail "-t 2 does not double the timeout: $(cat "$TEST_TMPDIR/report2.txt")"
rc=0
$REPORT --tests /dev/null "$TEST_TMPDIR/run1.json" >/dev/null 2>&1 || rc=$?
((rc != 0 && rc != 1)) || fail "an unreadable test list gave exit $rc"

# --- 2. the hogs -----------------------------------------------------------------------
hog_children() { pgrep -P "$1" 2>/dev/null | wc -l; }
mkdir "$TEST_TMPDIR/disk"
bash "$HOGS" --cpu 1 --disk "$TEST_TMPDIR/disk" --disk-mib 8 >"$TEST_TMPDIR/hogs.out" 2>&1 &
hogs=$!
on_exit "kill -TERM $hogs 2>/dev/null || true"
wait_for "grep -q '^hogs: 1 CPU hog' '$TEST_TMPDIR/hogs.out'" 10 || fail "hogs.sh did not start: $(cat "$TEST_TMPDIR/hogs.out")"
wait_for "[[ -n \$(ls -A '$TEST_TMPDIR/disk') ]]" 10 || fail "the disk hog wrote nothing"
(($(hog_children "$hogs") == 2)) || fail "hogs.sh has $(hog_children "$hogs") children, not 2 (one CPU, one disk)"
spinner=$(pgrep -P "$hogs" | head -1)
t0=$(awk '{print $14}' "/proc/$spinner/stat")
wait_for "(( \$(awk '{print \$14}' /proc/$spinner/stat 2>/dev/null || echo 0) > $t0 + 10 ))" 10 \
    || fail "the CPU hog does not spin"
kill -TERM "$hogs"
wait_for "! kill -0 $hogs 2>/dev/null" 10 || fail "hogs.sh did not stop on SIGTERM"
wait_for "[[ -z \$(ls -A '$TEST_TMPDIR/disk') ]] && ! kill -0 $spinner 2>/dev/null" 10 \
    || fail "hogs.sh left a hog or its file behind"

# As run-tests.sh starts it: it dies with the script that started it.
bash -c "setpriv --pdeathsig TERM bash '$HOGS' --cpu 1 --disk none >/dev/null & echo \$! >'$TEST_TMPDIR/hogs.pid'; wait" &
parent=$!
disown "$parent"  # its SIGKILL below is the point, not news
wait_for "[[ -s '$TEST_TMPDIR/hogs.pid' ]]" 10 || fail "no hogs.sh under a parent"
hogs=$(cat "$TEST_TMPDIR/hogs.pid")
on_exit "kill -TERM $hogs 2>/dev/null || true"
wait_for "(( \$(pgrep -P $hogs | wc -l) == 1 ))" 10 || fail "hogs.sh --disk none started no single CPU hog"
spinner=$(pgrep -P "$hogs")
kill -KILL "$parent"
wait_for "! kill -0 $hogs 2>/dev/null && ! kill -0 $spinner 2>/dev/null" 10 \
    || fail "hogs.sh (or its hog) outlived the script that started it"

# --- 3. the command --------------------------------------------------------------------
need_root
[[ -f $LINECAP_BUILD/build.ninja ]] || skip "no build directory at $LINECAP_BUILD"
rc=0
(cd "$LINECAP_SRC" && LINECAP_SKIP_DEPS=1 LINECAP_BUILD_DIR=$LINECAP_BUILD LINECAP_LOGBASE=flake-hunt-selftest \
    LINECAP_HOGS="--cpu 1 --disk $TEST_TMPDIR --disk-mib 8" \
    scripts/run-tests.sh --repeat 2 --load writer_errors_test) >"$TEST_TMPDIR/hunt.txt" 2>&1 || rc=$?
show_on_failure "$TEST_TMPDIR/hunt.txt"
((rc == 0)) || fail "scripts/run-tests.sh --repeat 2 --load writer_errors_test exited $rc"
[[ $(tail -1 "$TEST_TMPDIR/hunt.txt") == "2 passed, 0 failed, 0 skipped" ]] \
    || fail "closing line: $(tail -1 "$TEST_TMPDIR/hunt.txt")"
grep -q "^hogs: 1 CPU hog" "$TEST_TMPDIR/hunt.txt" || fail "--load started no hogs"
[[ $(awk '$1 == "writer_errors_test" {print $2, $3}' "$TEST_TMPDIR/hunt.txt") == "2 0" ]] \
    || fail "the table does not count two runs of writer_errors_test"
for round in 1 2; do
    [[ -s $LINECAP_BUILD/meson-logs/flake-hunt-selftest-run$round.json ]] || fail "no log of round $round"
done
[[ -z $(ls -A "$TEST_TMPDIR" | grep '^\.lc-hog') ]] || fail "the hunt's hogs left their file"
rm -f -- "$LINECAP_BUILD"/meson-logs/flake-hunt-selftest*
log "flake hunt: report, hogs and run-tests.sh --repeat --load as documented"
