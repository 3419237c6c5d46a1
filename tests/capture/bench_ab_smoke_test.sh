#!/usr/bin/env bash
# The A/B benchmark (bench/run.sh ab REV runs bench.py ab with REV's binary as --baseline),
# shortest form: this build's linecapd against itself, one 1 s repetition per side at 64
# bytes. Checks that both sides ran and the table has its ratio; numbers are not judged
# here (bench/run.sh ab measures).
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_hugepages 512
need_linecapd
make_tmpdir

mkdir -p "$TEST_TMPDIR/work"
mount_small_fs tmpfs 1G

rc=0
python3 "$LINECAP_SRC/bench/bench.py" ab --baseline "$LINECAPD" --workdir "$TEST_TMPDIR/work" \
    --tmpfs-dir "$tmpfs" --sizes 64 --repeat 1 --seconds 1 --warmup 0.5 --packets 1024 \
    >"$TEST_TMPDIR/stdout" 2>"$TEST_TMPDIR/stderr" || rc=$?
show_on_failure "$TEST_TMPDIR/stderr"
((rc == 0)) || fail "bench.py ab exited $rc"
cat "$TEST_TMPDIR/stdout" >&2
# "64    5.46 (5.40-6.24)    6.19 (5.60-6.89)    1.134    385    33    1/1"
grep -Eq '^64 +[0-9.]+ \([0-9.]+-[0-9.]+\) +[0-9.]+ \([0-9.]+-[0-9.]+\) +[0-9.]+ +[0-9]+ +[0-9]+ +1/1$' \
    "$TEST_TMPDIR/stdout" || fail "no A/B row with one run per side"
[[ -z $(ls -A "$tmpfs/linecap-out" 2>/dev/null) ]] || fail "capture files left in the output directory"
log "OK: both binaries ran, alternated, and the ratio row is printed"
