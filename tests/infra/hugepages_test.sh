#!/usr/bin/env bash
# Self-test of scripts/hugepages.sh, with a private state directory so it neither sees nor
# disturbs a reservation made by scripts/run-tests.sh: reserve raises nr_hugepages (never
# lowers it) and mounts what is missing; release puts back exactly what was there before.
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

need_root
[[ -w /proc/sys/vm/nr_hugepages ]] || skip "no writable /proc/sys/vm/nr_hugepages"
make_tmpdir
export LINECAP_TEST_STATE_DIR=$TEST_TMPDIR/state
HP="bash $LINECAP_SRC/scripts/hugepages.sh"
on_exit "$HP release >/dev/null 2>&1 || true"

mounts() { awk '$3 == "hugetlbfs" || $3 == "bpf" { print $2, $3 }' /proc/mounts | sort; }
before_nr=$(cat /proc/sys/vm/nr_hugepages)
before_mounts=$(mounts)
before_dir=$([[ -d /dev/hugepages ]] && echo yes || echo no)

want=$((before_nr + 4))
$HP reserve "$want" || fail "reserve $want failed"
now=$(cat /proc/sys/vm/nr_hugepages)
((now >= want)) || fail "nr_hugepages $now after reserve $want"
awk '$3 == "hugetlbfs" { f = 1 } END { exit !f }' /proc/mounts || fail "no hugetlbfs mounted"
awk '$2 == "/sys/fs/bpf" && $3 == "bpf" { f = 1 } END { exit !f }' /proc/mounts \
    || log "note: bpffs could not be mounted here"
[[ -f $LINECAP_TEST_STATE_DIR/hugepages.state ]] || fail "no state file"
grep -qx "orig_nr_hugepages=$before_nr" "$LINECAP_TEST_STATE_DIR/hugepages.state" \
    || fail "state does not record the original value $before_nr"

# A second, smaller reserve changes nothing and keeps the original value.
$HP reserve 1 >/dev/null || fail "second reserve failed"
[[ $(cat /proc/sys/vm/nr_hugepages) == "$now" ]] || fail "a smaller reserve lowered nr_hugepages"
grep -qx "orig_nr_hugepages=$before_nr" "$LINECAP_TEST_STATE_DIR/hugepages.state" \
    || fail "a second reserve overwrote the saved original"
# (output captured first: with pipefail, `cmd | grep -q` can fail on SIGPIPE)
out=$($HP status)
grep -q "nr_hugepages: *$now" <<<"$out" || fail "status output: $out"

$HP release || fail "release failed"
[[ $(cat /proc/sys/vm/nr_hugepages) == "$before_nr" ]] \
    || fail "nr_hugepages $(cat /proc/sys/vm/nr_hugepages) after release, was $before_nr"
[[ $(mounts) == "$before_mounts" ]] || fail "mounts after release: $(mounts | tr '\n' ';') before: $(tr '\n' ';' <<<"$before_mounts")"
[[ $([[ -d /dev/hugepages ]] && echo yes || echo no) == "$before_dir" ]] || fail "/dev/hugepages existence changed"
[[ ! -e $LINECAP_TEST_STATE_DIR/hugepages.state ]] || fail "state file left after release"
out=$($HP release)
grep -q 'nothing to undo' <<<"$out" || fail "a second release should be a no-op: $out"

rc=0
$HP reserve >/dev/null 2>&1 || rc=$?
[[ $rc == 2 ]] || fail "reserve without N: exit $rc, expected 2 (usage)"

# provide N: as many pages more as are missing for N free ones; release undoes it.
free_file=/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages
free=$(cat "$free_file")
$HP provide "$((free + 2))" >/dev/null || fail "provide $((free + 2)) failed"
(($(cat "$free_file") >= free + 2)) || fail "provide $((free + 2)): only $(cat "$free_file") pages free"
$HP release >/dev/null || fail "release after provide failed"
[[ $(cat /proc/sys/vm/nr_hugepages) == "$before_nr" ]] || fail "nr_hugepages not restored after provide"

log "all checks passed (nr_hugepages $before_nr -> $now -> $before_nr)"
