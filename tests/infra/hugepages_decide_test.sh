#!/usr/bin/env bash
# The decisions scripts/hugepages.sh takes from the machine's state, on fake /proc and /sys
# trees (LINECAP_PROC, LINECAP_SYSFS): `ready N` (what demo.sh and bench/run.sh reserve by)
# and `bare` (what the bare-machine demo test runs on). No root, nothing on the real machine.
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

make_tmpdir
export LINECAP_PROC=$TEST_TMPDIR/proc LINECAP_SYSFS=$TEST_TMPDIR/sys
export LINECAP_TEST_STATE_DIR=$TEST_TMPDIR/state
HP="bash $LINECAP_SRC/scripts/hugepages.sh"
mkdir -p "$LINECAP_PROC/sys/vm" "$LINECAP_SYSFS/kernel/mm/hugepages/hugepages-2048kB" "$LINECAP_TEST_STATE_DIR"

# machine NR FREE MOUNTS... : nr_hugepages, free pages, and "DIR TYPE" mount lines.
machine() {
    echo "$1" >"$LINECAP_PROC/sys/vm/nr_hugepages"
    echo "$2" >"$LINECAP_SYSFS/kernel/mm/hugepages/hugepages-2048kB/free_hugepages"
    shift 2
    {
        echo "/dev/vda / ext4 rw,relatime 0 0"
        echo "proc /proc proc rw 0 0"
        local m
        for m in "$@"; do
            set -- $m
            echo "$2 $1 $2 rw,relatime 0 0"
        done
    } >"$LINECAP_PROC/mounts"
}
# expect CMD RC [TEXT]: the exit status of `hugepages.sh CMD`, and TEXT in its output.
expect() {
    local cmd=$1 want=$2 text=${3:-} out rc=0
    out=$($HP $cmd 2>&1) || rc=$?
    [[ $rc == "$want" ]] || fail "hugepages.sh $cmd: exit $rc, expected $want (machine: $(tr '\n' ' ' <"$LINECAP_PROC/mounts"); output: $out)"
    [[ -z $text || $out == *"$text"* ]] || fail "hugepages.sh $cmd: output '$out' lacks '$text'"
}

# A fresh boot: nothing reserved, nothing mounted, no state. status's prose says "nothing
# reserved by this script" here (grepping for "reserved by" would take that as ready).
machine 0 0
rm -f "$LINECAP_TEST_STATE_DIR/hugepages.state"
out=$($HP status)
[[ $out == *"reserved by"* ]] || fail "status no longer prints the prose this test guards against: $out"
expect bare 0
expect "ready 512" 1 "0 of 512 2 MiB pages free"
expect "ready 512" 1 "hugetlbfs not mounted"
expect "ready 512" 1 "bpffs not mounted on /sys/fs/bpf"

# Prepared by run-tests.sh or the lead: pages, both mounts, a state file.
machine 1024 1024 "/dev/hugepages hugetlbfs" "/sys/fs/bpf bpf"
echo "orig_nr_hugepages=0" >"$LINECAP_TEST_STATE_DIR/hugepages.state"
expect "ready 512" 0
expect bare 1 "nr_hugepages=1024"
expect bare 1 "state file"
expect bare 1 "hugetlbfs on /dev/hugepages"

# Reserved by hand (no state file), hugetlbfs mounted elsewhere: ready, and not bare.
rm -f "$LINECAP_TEST_STATE_DIR/hugepages.state"
machine 600 600 "/mnt/huge hugetlbfs" "/sys/fs/bpf bpf"
expect "ready 512" 0
expect bare 1 "nr_hugepages=600"

# Reserved, but others hold most pages: not ready for 512.
machine 1024 100 "/dev/hugepages hugetlbfs" "/sys/fs/bpf bpf"
expect "ready 512" 1 "100 of 512"
# Pages but no bpffs (af_xdp needs it).
machine 1024 1024 "/dev/hugepages hugetlbfs"
expect "ready 512" 1 "bpffs not mounted"
out=$($HP ready 512) || true
[[ $out != *hugetlbfs* ]] || fail "ready names hugetlbfs although it is mounted: $out"
# Only bpffs mounted: not bare either.
machine 0 0 "/sys/fs/bpf bpf"
expect bare 1 "bpffs on /sys/fs/bpf"
expect ready 2   # usage: N missing

log "all checks passed"
