#!/bin/bash
# linecap-hugepages: reserve the 2 MiB hugepages linecapd needs, on the NUMA node of its
# NICs, and mount hugetlbfs. Idempotent: it only ever raises a pool to what is needed and
# mounts only when no hugetlbfs is mounted; running it twice changes nothing the second time.
# Run at boot by linecap-hugepages.service (before linecapd.service); installed to sbindir.
#
# Usage: linecap-hugepages [--config FILE] [--node N] [--no-mount] [--dry-run] [MIB]
#
#   MIB         reserve this many MiB (on --node N, else on the node of the configured PCI
#               ports when they share one, else in the global pool) instead of deriving it
#   --config    linecapd's configuration (default /etc/linecap/linecap.yaml, or $LINECAP_CONFIG)
#   --node N    put the MIB argument on NUMA node N
#   --no-mount  do not mount hugetlbfs
#   --dry-run   print what would be reserved, change nothing
#
# How much: what `linecapd --config FILE --print-plan` says — the capture plan the daemon
# allocates by and `linecapd --check` checks against (doc/linecapd.8, CAPTURE PLAN). Per
# NUMA socket of the ports, its mbuf pool and its queues' write blocks (the plan's
# "socket N: … hugepages_2m=P" lines) go to that node's pool; devices without a node
# (virtual devices, or nodes the platform does not report: "socket -1") and the EAL
# overhead go to the global pool, which is raised to the plan's total ("hugepages_2m: T").
#
# Where: <sysfs>/devices/system/node/nodeN/hugepages/hugepages-2048kB/nr_hugepages per node;
# /proc/sys/vm/nr_hugepages for the global pool (when the default page size is 2 MiB, else
# <sysfs>/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages).
#
# Environment: LINECAPD (the daemon to ask; default: linecapd next to this script, else on
# PATH); for tests LINECAP_SYSFS (default /sys), LINECAP_PROC (default /proc), LINECAP_MOUNT
# (mount command, default mount), LINECAP_MOUNT_DIR (default /dev/hugepages), LINECAP_CONFIG.
# Exit status: 0 ok (also: eal.hugepages is false, nothing to do), 1 failure, 2 usage.
set -euo pipefail

SYSFS=${LINECAP_SYSFS:-/sys}
PROC=${LINECAP_PROC:-/proc}
MOUNT_CMD=${LINECAP_MOUNT:-mount}
CONFIG=${LINECAP_CONFIG:-/etc/linecap/linecap.yaml}
MOUNT_DIR=${LINECAP_MOUNT_DIR:-/dev/hugepages}
PAGE_KB=2048

say() { printf 'linecap-hugepages: %s\n' "$*"; }
warn() { printf 'linecap-hugepages: warning: %s\n' "$*" >&2; }
die() {
    printf 'linecap-hugepages: error: %s\n' "$*" >&2
    exit 1
}
help() { # the comment block at the top of this file
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit 0
}
usage() {
    echo "usage: linecap-hugepages [--config FILE] [--node N] [--no-mount] [--dry-run] [MIB]   (--help: more)" >&2
    exit 2
}

node_arg='' mib_arg='' no_mount=0 dry_run=0
while (($#)); do
    case $1 in
        --config) CONFIG=${2:?--config needs a FILE}; shift 2 ;;
        --config=*) CONFIG=${1#*=}; shift ;;
        --node) node_arg=${2:?--node needs N}; shift 2 ;;
        --node=*) node_arg=${1#*=}; shift ;;
        --no-mount) no_mount=1; shift ;;
        --dry-run) dry_run=1; shift ;;
        -h | --help) help ;;
        -*) echo "linecap-hugepages: unknown option $1" >&2; usage ;;
        *)
            [[ -z $mib_arg && $1 =~ ^[0-9]+$ ]] || { echo "linecap-hugepages: unexpected argument '$1'" >&2; usage; }
            mib_arg=$1; shift ;;
    esac
done
[[ -z $node_arg || $node_arg =~ ^[0-9]+$ ]] || usage
[[ -z $node_arg || -n $mib_arg ]] || { echo "linecap-hugepages: --node goes with a MIB argument" >&2; usage; }

# The daemon that plans: $LINECAPD, else the linecapd installed next to this script, else PATH.
linecapd_bin() {
    local here
    here=$(dirname "$(readlink -f "$0")")
    if [[ -n ${LINECAPD:-} ]]; then
        echo "$LINECAPD"
    elif [[ -x $here/linecapd ]]; then
        echo "$here/linecapd"
    else
        command -v linecapd || die "linecapd not found (set LINECAPD, or give the MiB to reserve)"
    fi
}

# print_plan: linecapd's capture plan for $CONFIG (LINECAP_SYSFS gives it the NUMA nodes);
# its errors (a bad configuration) go to stderr as they are.
print_plan() {
    local bin
    bin=$(linecapd_bin)
    "$bin" --config "$CONFIG" --print-plan || die "linecapd --config $CONFIG --print-plan failed (see above)"
}

declare -A need_pages=() why=()
total_pages=0

if [[ -n $mib_arg ]]; then
    if [[ -n $node_arg ]]; then
        node=$node_arg
    else
        # The node of the configured ports when they share one.
        node=-1
        if [[ -r $CONFIG ]]; then
            nodes=$(print_plan | sed -nE 's/^socket ([0-9]+): .*/\1/p')
            [[ -n $nodes && $(wc -l <<<"$nodes") -eq 1 ]] && node=$nodes
        fi
    fi
    need_pages[$node]=$(((mib_arg + 1) / 2))
    why[$node]="$mib_arg MiB given on the command line"
    total_pages=${need_pages[$node]}
else
    [[ -r $CONFIG ]] || die "cannot read the configuration $CONFIG (give --config FILE, or the MiB to reserve)"
    plan=$(print_plan)
    if grep -q '^eal.hugepages: false' <<<"$plan"; then
        say "eal.hugepages is false in $CONFIG: nothing to reserve"
        exit 0
    fi
    while IFS= read -r line; do
        if [[ $line =~ ^socket\ (-?[0-9]+):\ (.*)\;\ hugepages_2m=([0-9]+)$ ]]; then
            need_pages[${BASH_REMATCH[1]}]=${BASH_REMATCH[3]}
            why[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
        elif [[ $line =~ ^hugepages_2m:\ ([0-9]+)$ ]]; then
            total_pages=${BASH_REMATCH[1]}
        fi
    done <<<"$plan"
    ((total_pages > 0)) || die "no hugepages_2m total in linecapd --print-plan's output: $plan"
fi

# raise FILE PAGES WHAT: raise the pool behind FILE to at least PAGES (never lowers it).
raise() {
    local file=$1 want=$2 what=$3 cur got
    cur=$(cat "$file" 2>/dev/null) || die "cannot read $file ($what): no hugepage support?"
    if ((cur >= want)); then
        say "$what: nr_hugepages already $cur (>= $want), left as is"
        return 0
    fi
    if ((dry_run)); then
        say "$what: would raise nr_hugepages $cur -> $want ($file)"
        return 0
    fi
    printf '%s\n' "$want" >"$file" 2>/dev/null || die "writing $want to $file failed (not root?)"
    got=$(cat "$file")
    if ((got < want)); then
        # Memory too fragmented for the whole request: compact and ask once more.
        printf '1\n' >"$PROC/sys/vm/compact_memory" 2>/dev/null || true
        printf '%s\n' "$want" >"$file" 2>/dev/null || true
        got=$(cat "$file")
    fi
    ((got >= want)) || die "$what: asked for $want pages of 2 MiB, the kernel gave $got (memory fragmented or too small): reserve them at boot instead, e.g. hugepagesz=2M hugepages=$want on the kernel command line"
    say "$what: nr_hugepages $cur -> $got ($file)"
}

default_kb=$(awk '$1 == "Hugepagesize:" { print $2 }' "$PROC/meminfo" 2>/dev/null || true)
if [[ -z $default_kb || $default_kb == "$PAGE_KB" ]]; then
    global_file=$PROC/sys/vm/nr_hugepages
else
    global_file=$SYSFS/kernel/mm/hugepages/hugepages-${PAGE_KB}kB/nr_hugepages
fi

# Each known node's pages on that node (when the kernel has per-node pools); the global
# count includes every node's pages, so it is raised to the plan's total: the nodes above
# plus what has no node (virtual devices, the EAL overhead, eal.memory_mb).
known_pages=0 global_needed=0
for node in $(printf '%s\n' "${!need_pages[@]}" | sort -n); do
    pages=${need_pages[$node]}
    label="node $node"
    [[ $node != -1 ]] || label="no NUMA node (global pool)"
    say "$label: $pages pages of 2 MiB (${why[$node]})"
    node_file=$SYSFS/devices/system/node/node$node/hugepages/hugepages-${PAGE_KB}kB/nr_hugepages
    if [[ $node != -1 && -e $node_file ]]; then
        raise "$node_file" "$pages" "node $node"
        known_pages=$((known_pages + pages))
    else
        [[ $node == -1 ]] || warn "no per-node hugepage pool for node $node ($node_file): using the global pool"
        global_needed=1
    fi
done
((total_pages > known_pages)) && global_needed=1
if ((global_needed)); then
    say "in total: $total_pages pages of 2 MiB"
    raise "$global_file" "$total_pages" "global pool"
fi

if ((no_mount)); then
    :
elif awk '$3 == "hugetlbfs" { found = 1 } END { exit !found }' "$PROC/mounts" 2>/dev/null; then
    say "hugetlbfs already mounted on $(awk '$3 == "hugetlbfs" { printf "%s ", $2 }' "$PROC/mounts")"
elif ((dry_run)); then
    say "would mount hugetlbfs on $MOUNT_DIR"
else
    mkdir -p "$MOUNT_DIR" 2>/dev/null || true
    "$MOUNT_CMD" -t hugetlbfs -o pagesize=2M nodev "$MOUNT_DIR" || die "mounting hugetlbfs on $MOUNT_DIR failed"
    say "mounted hugetlbfs on $MOUNT_DIR"
fi
