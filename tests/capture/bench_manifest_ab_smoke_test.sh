#!/usr/bin/env bash
# The manifest on/off A/B (bench/run.sh manifest-ab runs bench.py manifest-ab), shortest
# form: this build's linecapd alone (no --baseline), one 1 s window per side at 64 bytes
# into tmpfs, with --page-reporting-delay-ms. Checks that both sides ran, the table has its
# on/off ratio and names the reporting delay, and that the VM's page reporting delay is as
# it was afterwards (on a kernel without page_reporting the option does nothing: the
# header then says so). Numbers are not judged here (bench/run.sh manifest-ab measures).
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_hugepages 512
need_linecapd
make_tmpdir

mkdir -p "$TEST_TMPDIR/work"
mount_small_fs tmpfs 1G

delay=/sys/module/page_reporting/parameters/min_free_ms
delay_before=$(cat "$delay" 2>/dev/null || echo absent)
rc=0
LINECAPD="$LINECAPD" python3 "$LINECAP_SRC/bench/bench.py" manifest-ab --workdir "$TEST_TMPDIR/work" \
    --tmpfs-dir "$tmpfs" --fs tmpfs --sizes 64 --repeat 1 --seconds 1 --warmup 0.5 --packets 1024 \
    --budget-mib 256 --page-reporting-delay-ms 1000 >"$TEST_TMPDIR/stdout" 2>"$TEST_TMPDIR/stderr" || rc=$?
show_on_failure "$TEST_TMPDIR/stderr"
((rc == 0)) || fail "bench.py manifest-ab exited $rc"
cat "$TEST_TMPDIR/stdout" >&2
# "64    after   24.46                 39.55                 0.62"
grep -Eq '^64 +after +[0-9.]+ +[0-9.]+ +[0-9.]+$' "$TEST_TMPDIR/stdout" || fail "no on/off row for this build"
if [[ $delay_before == absent ]]; then
    grep -q 'free memory reported to the host never' "$TEST_TMPDIR/stdout" || fail "header does not say there is no page reporting"
else
    grep -q 'free memory reported to the host after 1000 ms' "$TEST_TMPDIR/stdout" \
        || fail "header does not name the reporting delay of the run"
    [[ $(cat "$delay") == "$delay_before" ]] || fail "page reporting delay not restored: $(cat "$delay") (before: $delay_before)"
fi
[[ -z $(ls -A "$tmpfs/linecap-out" 2>/dev/null) ]] || fail "capture files left in the output directory"
log "OK: manifest on and off ran, the on/off row is printed, the reporting delay restored"
