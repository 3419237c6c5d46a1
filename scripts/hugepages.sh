#!/usr/bin/env bash
# Prepare (and undo) what DPDK tests need from the machine:
#   reserve N   raise /proc/sys/vm/nr_hugepages (2 MiB pages) to at least N (never lowers it),
#               mount hugetlbfs on /dev/hugepages and bpffs on /sys/fs/bpf if they are not
#               mounted. What was there before is saved in $STATE_DIR/hugepages.state the
#               first time, so repeated reserves are safe and release restores the original.
#   release     restore nr_hugepages to the saved value and unmount (and rmdir) only what
#               reserve mounted (and created); no-op without a state file.
#   status      show the page counts, the mounts and the saved state.
# STATE_DIR is $LINECAP_TEST_STATE_DIR, default /run/linecap-test. Needs root for
# reserve/release. Exit status: 0 ok, 1 failure, 2 usage.
set -euo pipefail

STATE_DIR=${LINECAP_TEST_STATE_DIR:-/run/linecap-test}
STATE=$STATE_DIR/hugepages.state
NR=/proc/sys/vm/nr_hugepages
HP_SYSFS=/sys/kernel/mm/hugepages/hugepages-2048kB
HUGE_MNT=/dev/hugepages
BPF_MNT=/sys/fs/bpf

say() { printf 'hugepages.sh: %s\n' "$*"; }
die() {
    printf 'hugepages.sh: error: %s\n' "$*" >&2
    exit 1
}

is_mounted() { # is_mounted DIR FSTYPE
    awk -v d="$1" -v t="$2" '$2 == d && $3 == t { found = 1 } END { exit !found }' /proc/mounts
}

need_root() { [[ $(id -u) -eq 0 ]] || die "$1 needs root"; }

lock() {
    mkdir -p "$STATE_DIR"
    exec 9>"$STATE_DIR/.lock"
    flock -w 30 9 || die "could not lock $STATE_DIR/.lock"
}

# The state file is a list of KEY=VALUE lines (values are plain words).
state_get() { # state_get KEY -> value or empty
    [[ -f $STATE ]] || return 0
    sed -n "s/^$1=//p" "$STATE" | tail -n 1
}

state_set() { # state_set KEY VALUE (replaces)
    local tmp
    tmp=$(mktemp "$STATE_DIR/.state.XXXXXX")
    { [[ -f $STATE ]] && grep -v "^$1=" "$STATE" || true; } >"$tmp"
    printf '%s=%s\n' "$1" "$2" >>"$tmp"
    mv -f "$tmp" "$STATE"
}

hp_free() { cat "$HP_SYSFS/free_hugepages" 2>/dev/null || echo 0; }

cmd_reserve() {
    local want=${1:-}
    [[ $want =~ ^[0-9]+$ ]] || usage
    need_root reserve
    [[ -w $NR ]] || die "$NR is not writable (no hugepage support in this kernel or container?)"
    lock
    local cur
    cur=$(cat "$NR")
    [[ -n $(state_get orig_nr_hugepages) ]] || state_set orig_nr_hugepages "$cur"

    if ((want > cur)); then
        echo "$want" >"$NR" || die "writing $want to $NR failed"
        local got
        got=$(cat "$NR")
        if ((got < want)); then
            # Memory too fragmented for the whole request: compact and try once more.
            echo 1 >/proc/sys/vm/compact_memory 2>/dev/null || true
            echo "$want" >"$NR" || true
            got=$(cat "$NR")
        fi
        ((got >= want)) || say "warning: asked for $want pages, the kernel gave $got"
        say "nr_hugepages $cur -> $got (2 MiB pages)"
    else
        say "nr_hugepages already $cur (>= $want), left as is"
    fi

    if is_mounted "$HUGE_MNT" hugetlbfs; then
        :
    elif awk '$3 == "hugetlbfs" { found = 1 } END { exit !found }' /proc/mounts; then
        say "hugetlbfs already mounted elsewhere: $(awk '$3 == "hugetlbfs" { print $2 }' /proc/mounts | tr '\n' ' ')"
    else
        if [[ ! -d $HUGE_MNT ]]; then
            mkdir -p "$HUGE_MNT"
            state_set created_huge_dir 1
        fi
        mount -t hugetlbfs -o pagesize=2M nodev "$HUGE_MNT" || die "mount hugetlbfs on $HUGE_MNT failed"
        state_set mounted_hugetlbfs 1
        say "mounted hugetlbfs on $HUGE_MNT"
    fi

    if ! is_mounted "$BPF_MNT" bpf; then
        if [[ -d $BPF_MNT ]] && mount -t bpf bpf "$BPF_MNT" 2>/dev/null; then
            state_set mounted_bpffs 1
            say "mounted bpffs on $BPF_MNT"
        else
            say "warning: could not mount bpffs on $BPF_MNT (af_xdp tests will skip)"
        fi
    fi
}

cmd_release() {
    need_root release
    if [[ ! -f $STATE ]]; then
        say "nothing reserved by this script ($STATE absent), nothing to undo"
        return 0
    fi
    lock
    local rc=0 orig
    if [[ $(state_get mounted_bpffs) == 1 ]]; then
        if ! is_mounted "$BPF_MNT" bpf || umount "$BPF_MNT"; then
            say "unmounted bpffs from $BPF_MNT"
        else
            say "warning: umount $BPF_MNT failed"
            rc=1
        fi
    fi
    if [[ $(state_get mounted_hugetlbfs) == 1 ]]; then
        local left
        left=$(find "$HUGE_MNT" -mindepth 1 -maxdepth 1 2>/dev/null | head -n 5 | tr '\n' ' ')
        [[ -z $left ]] || say "note: files left in $HUGE_MNT (a DPDK process without --in-memory?): $left"
        if ! is_mounted "$HUGE_MNT" hugetlbfs || umount "$HUGE_MNT"; then
            say "unmounted hugetlbfs from $HUGE_MNT"
        else
            say "warning: umount $HUGE_MNT failed (still in use?)"
            rc=1
        fi
    fi
    if [[ $(state_get created_huge_dir) == 1 ]] && ! is_mounted "$HUGE_MNT" hugetlbfs; then
        rmdir "$HUGE_MNT" 2>/dev/null || say "warning: could not remove $HUGE_MNT"
    fi
    orig=$(state_get orig_nr_hugepages)
    if [[ -n $orig ]]; then
        echo "$orig" >"$NR" || { say "warning: restoring nr_hugepages=$orig failed"; rc=1; }
        local now
        now=$(cat "$NR")
        say "nr_hugepages restored to $now (was $orig before reserve)"
        ((now == orig)) || say "warning: $((now - orig)) pages still in use (surplus until freed)"
    fi
    if ((rc == 0)); then
        rm -f "$STATE" "$STATE_DIR/.lock"
    else
        say "state kept in $STATE: run release again once the pages/mounts are free"
    fi
    rmdir "$STATE_DIR" 2>/dev/null || true
    return "$rc"
}

cmd_status() {
    printf 'nr_hugepages:   %s (2 MiB pages; free %s)\n' "$(cat "$NR" 2>/dev/null || echo '?')" "$(hp_free)"
    printf 'hugetlbfs:      %s\n' "$(awk '$3 == "hugetlbfs" { printf "%s ", $2 }' /proc/mounts)"
    printf 'bpffs:          %s\n' "$(awk '$3 == "bpf" { printf "%s ", $2 }' /proc/mounts)"
    if [[ -f $STATE ]]; then
        printf 'state (%s):\n' "$STATE"
        sed 's/^/  /' "$STATE"
    else
        printf 'state:          none (nothing reserved by this script)\n'
    fi
}

usage() {
    echo "usage: $0 reserve N_2MB_PAGES | release | status" >&2
    exit 2
}

case ${1:-} in
    reserve) cmd_reserve "${2:-}" ;;
    release) cmd_release ;;
    status) cmd_status ;;
    *) usage ;;
esac
