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
# How much, derived from the configuration (the same way linecapd allocates; linecapd
# --check compares the free pages with the same estimate minus the slack). Per NUMA node
# of the ports (a PCI port's node is <sysfs>/bus/pci/devices/ADDR/numa_node; virtual
# devices and nodes the platform does not report go to the global pool):
#
#   mbufs  = capture.mbufs, or, as linecapd sizes its pool:
#            n = (Σ rx_queues × rx_descriptors + workers × (burst_size + mbuf_cache) + mbuf_cache) × 1.25
#            rounded up to 2^k − 1            (workers = lcores in eal.lcores minus the main one)
#   MiB    = mbufs × 2.5 KiB  +  Σ rx_queues × blocks_per_queue × block_size_kb KiB  +  256 MiB slack
#   pages  = ⌈MiB / 2⌉, at least eal.memory_mb / 2 in total
#
# e.g. 2 ports × 2 queues × 4096 descriptors, 4 workers, defaults: mbufs 32767 (80 MiB) +
# 4 × 32 × 1 MiB blocks (128 MiB) + 256 MiB = 464 MiB = 232 pages.
#
# Where: <sysfs>/devices/system/node/nodeN/hugepages/hugepages-2048kB/nr_hugepages per node;
# /proc/sys/vm/nr_hugepages for the global pool (when the default page size is 2 MiB, else
# <sysfs>/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages).
#
# Environment (tests): LINECAP_SYSFS (default /sys), LINECAP_PROC (default /proc),
# LINECAP_MOUNT (mount command, default mount), LINECAP_MOUNT_DIR (default
# /dev/hugepages), LINECAP_CONFIG.
# Exit status: 0 ok (also: eal.hugepages is false, nothing to do), 1 failure, 2 usage.
set -euo pipefail

SYSFS=${LINECAP_SYSFS:-/sys}
PROC=${LINECAP_PROC:-/proc}
MOUNT_CMD=${LINECAP_MOUNT:-mount}
CONFIG=${LINECAP_CONFIG:-/etc/linecap/linecap.yaml}
MOUNT_DIR=${LINECAP_MOUNT_DIR:-/dev/hugepages}
PAGE_KB=2048
SLACK_MIB=256
MBUF_BYTES=2560

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

# parse_config FILE: the keys the estimate needs, one "key value" line each, and one
# "port DEVICE RX_QUEUES RX_DESCRIPTORS" line per port. A YAML subset: block style (as in
# the example configuration) and one-line flow mappings ({a: 1, b: 2}); keys left out are
# left out here too (the defaults are applied below).
parse_config() {
    awk '
    function value(line, key,    s) {
        if (!match(line, "(^|[ \t{,-])" key "[ \t]*:[ \t]*")) return "\001"
        s = substr(line, RSTART + RLENGTH)
        if (s ~ /^"/) { s = substr(s, 2); sub(/".*$/, "", s); return s }
        if (s ~ /^\047/) { s = substr(s, 2); sub(/\047.*$/, "", s); return s }
        sub(/[ \t]*[,}].*$/, "", s); sub(/[ \t]+$/, "", s)
        return s
    }
    function take(line, key, name,    v) {
        v = value(line, key)
        if (v != "\001" && v != "") print name, v
    }
    function take_port(line, key, idx,    v) {
        v = value(line, key)
        if (v != "\001" && v != "") port[nports, idx] = v
    }
    {
        line = $0
        sub(/(^|[ \t])#.*$/, "", line)
        if (line ~ /^[ \t]*$/) next
        if (line ~ /^[A-Za-z_]/) { section = line; sub(/[ \t]*:.*$/, "", section) }
        if (section == "eal") {
            take(line, "lcores", "lcores"); take(line, "hugepages", "hugepages"); take(line, "memory_mb", "memory_mb")
        } else if (section == "ports") {
            if (line ~ /^[ \t]*-([ \t]|$)/) { nports++; port[nports, 1] = ""; port[nports, 2] = 1; port[nports, 3] = 4096 }
            if (nports > 0) {
                take_port(line, "device", 1); take_port(line, "rx_queues", 2); take_port(line, "rx_descriptors", 3)
            }
        } else if (section == "capture") {
            take(line, "burst_size", "burst"); take(line, "mbufs", "mbufs"); take(line, "mbuf_cache", "cache")
        } else if (section == "output") {
            take(line, "block_size_kb", "block_kb"); take(line, "blocks_per_queue", "blocks")
        }
    }
    END { for (i = 1; i <= nports; i++) print "port", port[i, 1], port[i, 2], port[i, 3] }
    ' "$1"
}

# count_lcores LIST: how many lcores an EAL -l list ("0-3", "0,2,4", "1-2,5") names, or an
# --lcores list that places lcores on CPUs ("0@0,1@1,2@1": three lcores).
count_lcores() {
    local n=0 part a b
    IFS=, read -ra parts <<<"$1"
    for part in "${parts[@]}"; do
        if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]]; then
            a=${BASH_REMATCH[1]} b=${BASH_REMATCH[2]}
            ((b >= a)) && n=$((n + b - a + 1))
        elif [[ $part =~ ^[0-9]+(@[0-9]+)?$ ]]; then
            n=$((n + 1))
        fi
    done
    echo "$n"
}

is_pci() { [[ $1 =~ ^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$ ]]; }
normalize_pci() {
    local a=${1,,}
    [[ $a == ????:* ]] || a=0000:$a
    echo "$a"
}

# NUMA node of a PCI address, "any" when unknown.
pci_node() {
    local n
    n=$(cat "$SYSFS/bus/pci/devices/$(normalize_pci "$1")/numa_node" 2>/dev/null || echo -1)
    [[ $n =~ ^[0-9]+$ ]] && echo "$n" || echo any
}

declare -A need_mib=() why=()

if [[ -n $mib_arg ]]; then
    if [[ -n $node_arg ]]; then
        node=$node_arg
    else
        node=any
        if [[ -r $CONFIG ]]; then
            nodes=$(parse_config "$CONFIG" | awk '$1 == "port" { print $2 }' | while read -r d; do
                is_pci "$d" && pci_node "$d"; done | sort -u)
            [[ -n $nodes && $(wc -l <<<"$nodes") -eq 1 ]] && node=$nodes
        fi
    fi
    need_mib[$node]=$mib_arg
    why[$node]="given on the command line"
else
    [[ -r $CONFIG ]] || die "cannot read the configuration $CONFIG (give --config FILE, or the MiB to reserve)"
    declare -A cfg=([lcores]=0-1 [hugepages]=true [memory_mb]=0 [burst]=64 [mbufs]=0 [cache]=256 [block_kb]=1024 [blocks]=32)
    declare -A descs=() queues=() ports=()
    nports=0
    while read -r key a b c; do
        if [[ $key == port ]]; then
            [[ -n $a ]] || continue
            node=any
            if is_pci "$a"; then
                node=$(pci_node "$a")
                a=$(normalize_pci "$a")
            fi
            descs[$node]=$((${descs[$node]:-0} + b * c))
            queues[$node]=$((${queues[$node]:-0} + b))
            ports[$node]="${ports[$node]:+${ports[$node]}, }$a"
            nports=$((nports + 1))
        else
            cfg[$key]=$a
        fi
    done < <(parse_config "$CONFIG")
    case ${cfg[hugepages],,} in
        false | no | off | 0)
            say "eal.hugepages is false in $CONFIG: nothing to reserve"
            exit 0 ;;
    esac
    ((nports > 0)) || die "no ports found in $CONFIG (block-style 'ports:' list expected; or give the MiB to reserve)"
    for k in memory_mb burst mbufs cache block_kb blocks; do
        [[ ${cfg[$k]} =~ ^[0-9]+$ ]] || die "$CONFIG: cannot read ${k} ('${cfg[$k]}'): give the MiB to reserve instead"
    done
    workers=$(($(count_lcores "${cfg[lcores]}") - 1))
    ((workers >= 1)) || workers=1
    total=0
    for node in "${!descs[@]}"; do
        if ((cfg[mbufs] > 0)); then
            mbufs=${cfg[mbufs]}
        else
            n=$((descs[$node] + workers * (cfg[burst] + cfg[cache]) + cfg[cache]))
            n=$((n + n / 4))
            p=1
            while ((p - 1 < n)); do p=$((p * 2)); done
            mbufs=$((p - 1))
        fi
        mbuf_mib=$(((mbufs * MBUF_BYTES + 1048575) / 1048576))
        block_mib=$(((queues[$node] * cfg[blocks] * cfg[block_kb] + 1023) / 1024))
        need_mib[$node]=$((mbuf_mib + block_mib + SLACK_MIB))
        why[$node]="ports ${ports[$node]}: $mbufs mbufs × 2.5 KiB = $mbuf_mib MiB + ${queues[$node]} queues × ${cfg[blocks]} × ${cfg[block_kb]} KiB blocks = $block_mib MiB + $SLACK_MIB MiB slack"
        total=$((total + need_mib[$node]))
    done
    if ((cfg[memory_mb] > total)); then
        first=$(printf '%s\n' "${!need_mib[@]}" | sort | head -n 1)
        need_mib[$first]=$((need_mib[$first] + cfg[memory_mb] - total))
        why[$first]+=" (raised to eal.memory_mb ${cfg[memory_mb]} in total)"
    fi
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

any_pages=0 known_pages=0
for node in $(printf '%s\n' "${!need_mib[@]}" | sort); do
    pages=$(((need_mib[$node] + 1) / 2))
    label="node $node"
    [[ $node != any ]] || label="no NUMA node (global pool)"
    say "$label: ${need_mib[$node]} MiB = $pages pages of 2 MiB (${why[$node]})"
    node_file=$SYSFS/devices/system/node/node$node/hugepages/hugepages-${PAGE_KB}kB/nr_hugepages
    if [[ $node != any && -e $node_file ]]; then
        raise "$node_file" "$pages" "node $node"
        known_pages=$((known_pages + pages))
    else
        [[ $node == any ]] || warn "no per-node hugepage pool for node $node ($node_file): using the global pool"
        any_pages=$((any_pages + pages))
    fi
done
if ((any_pages > 0)); then
    # The global count includes every node's pages: the nodes reserved above plus the rest.
    raise "$global_file" $((known_pages + any_pages)) "global pool"
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
