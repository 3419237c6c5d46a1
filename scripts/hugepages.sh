#!/usr/bin/env bash
# Prepare (and undo) what DPDK tests need from the machine:
#   reserve N   raise /proc/sys/vm/nr_hugepages (2 MiB pages) to at least N (never lowers it),
#               mount hugetlbfs on /dev/hugepages and bpffs on /sys/fs/bpf if they are not
#               mounted. What was there before is saved in $STATE_DIR/hugepages.state the
#               first time, so repeated reserves are safe and release restores the original.
#   release     restore nr_hugepages to the saved value and unmount (and rmdir) only what
#               reserve mounted (and created); no-op without a state file.
#   status      show the page counts, the mounts and the saved state.
#   provide N   reserve what `ready N` lacks: nr_hugepages raised by the pages missing for N
#               free ones (others may hold some), hugetlbfs and bpffs mounted; state as reserve.
#   ready N     exit 0 when DPDK can run now: at least N 2 MiB pages free, hugetlbfs mounted,
#               bpffs mounted on /sys/fs/bpf; else exit 1, naming what is missing. Callers
#               decide whether to reserve from this exit status, never from status' prose.
#   bare        exit 0 when the machine is as a fresh boot leaves it: no 2 MiB page reserved,
#               neither hugetlbfs nor bpffs mounted, no state file; else exit 1, saying why.
# STATE_DIR is $LINECAP_TEST_STATE_DIR, default /run/linecap-test. Needs root for
# reserve/release. Exit status: 0 ok (ready/bare: yes), 1 failure (ready/bare: no), 2 usage.
# LINECAP_PROC and LINECAP_SYSFS (default /proc, /sys) point ready/bare/status at fake trees
# (tests).
set -euo pipefail

STATE_DIR=${LINECAP_TEST_STATE_DIR:-/run/linecap-test}
STATE=$STATE_DIR/hugepages.state
PROC=${LINECAP_PROC:-/proc}
NR=$PROC/sys/vm/nr_hugepages
MOUNTS=$PROC/mounts
HP_SYSFS=${LINECAP_SYSFS:-/sys}/kernel/mm/hugepages/hugepages-2048kB
HUGE_MNT=/dev/hugepages
BPF_MNT=/sys/fs/bpf

say() { printf 'hugepages.sh: %s\n' "$*"; }
die() {
    printf 'hugepages.sh: error: %s\n' "$*" >&2
    exit 1
}

is_mounted() { # is_mounted DIR FSTYPE
    awk -v d="$1" -v t="$2" '$2 == d && $3 == t { found = 1 } END { exit !found }' "$MOUNTS"
}

mounted_on() { # mounted_on FSTYPE -> the mount points of that type, space separated
    awk -v t="$1" '$3 == t { printf "%s ", $2 }' "$MOUNTS"
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
    elif [[ -n $(mounted_on hugetlbfs) ]]; then
        say "hugetlbfs already mounted elsewhere: $(mounted_on hugetlbfs)"
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

cmd_provide() {
    [[ ${1:-} =~ ^[0-9]+$ ]] || usage
    local free nr
    free=$(hp_free)
    nr=$(cat "$NR")
    cmd_reserve "$((nr + (free < $1 ? $1 - free : 0)))"
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
    printf 'hugetlbfs:      %s\n' "$(mounted_on hugetlbfs)"
    printf 'bpffs:          %s\n' "$(mounted_on bpf)"
    if [[ -f $STATE ]]; then
        printf 'state (%s):\n' "$STATE"
        sed 's/^/  /' "$STATE"
    else
        printf 'state:          none (nothing reserved by this script)\n'
    fi
}

# What `ready N` lacks, one item per line (nothing: ready).
missing_for() {
    local want=$1 free
    free=$(hp_free)
    ((free >= want)) || echo "$free of $want 2 MiB pages free"
    [[ -n $(mounted_on hugetlbfs) ]] || echo "hugetlbfs not mounted"
    is_mounted "$BPF_MNT" bpf || echo "bpffs not mounted on $BPF_MNT"
}

cmd_ready() {
    [[ ${1:-} =~ ^[0-9]+$ ]] || usage
    local missing
    missing=$(missing_for "$1")
    [[ -z $missing ]] && return 0
    printf 'not ready: %s\n' "$(paste -sd';' <<<"$missing" | sed 's/;/; /g')"
    return 1
}

# What is not bare, one item per line (nothing: bare).
not_bare() {
    local nr
    nr=$(cat "$NR" 2>/dev/null || echo 0)
    ((nr == 0)) || echo "nr_hugepages=$nr"
    [[ -z $(mounted_on hugetlbfs) ]] || echo "hugetlbfs on $(mounted_on hugetlbfs)"
    [[ -z $(mounted_on bpf) ]] || echo "bpffs on $(mounted_on bpf)"
    [[ ! -e $STATE ]] || echo "state file $STATE"
}

cmd_bare() {
    local why
    why=$(not_bare)
    [[ -z $why ]] && return 0
    printf 'not bare: %s\n' "$(paste -sd';' <<<"$why" | sed 's/ *;/; /g; s/ *$//')"
    return 1
}

usage() {
    echo "usage: $0 reserve N_2MB_PAGES | provide N_2MB_PAGES | release | status | ready N_2MB_PAGES | bare" >&2
    exit 2
}

case ${1:-} in
    reserve) cmd_reserve "${2:-}" ;;
    provide) cmd_provide "${2:-}" ;;
    release) cmd_release ;;
    status) cmd_status ;;
    ready) cmd_ready "${2:-}" ;;
    bare) cmd_bare ;;
    *) usage ;;
esac
