#!/usr/bin/env bash
# Load beside a test run, for hunting flakes: CPU hogs that spin at normal priority (no CPU
# here is isolated, so every test thread competes with them for its core) and a disk hog that
# writes and syncs a file over and over (writeback and fsync latency for every test that
# writes). Runs until it receives SIGTERM or SIGINT, then stops its hogs and removes its file.
#
#   tests/tools/hogs.sh [--cpu N] [--disk DIR] [--disk-mib M]
#
#   --cpu N       N spinning processes (default: one per online CPU, less one, at least one)
#   --disk DIR    where the disk hog writes (default: ${TMPDIR:-/var/tmp}); --disk none: none
#   --disk-mib M  the size of each file it writes and syncs (default 256)
#
# It prints one line saying what it started, then nothing until it stops.
set -uo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }

cpus=$(($(nproc) - 1))
((cpus >= 1)) || cpus=1
disk=${TMPDIR:-/var/tmp}
disk_mib=256
while (($#)); do
    case $1 in
        --cpu) cpus=${2:?--cpu needs a number}; shift 2 ;;
        --disk) disk=${2:?--disk needs a directory or none}; shift 2 ;;
        --disk-mib) disk_mib=${2:?--disk-mib needs a number}; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "hogs: unknown argument '$1' (see --help)" >&2; exit 64 ;;
    esac
done
[[ $cpus =~ ^[0-9]+$ && $disk_mib =~ ^[1-9][0-9]*$ ]] || { echo "hogs: --cpu and --disk-mib take whole numbers" >&2; exit 64; }

pids=()
file=
stop() {
    trap - TERM INT EXIT
    if ((${#pids[@]})); then
        kill -TERM "${pids[@]}" 2>/dev/null
        # The disk hog's dd too: its shell would run the trap only once dd is done.
        pkill -TERM -P "$(IFS=,; echo "${pids[*]}")" 2>/dev/null
    fi
    wait 2>/dev/null
    [[ -z $file ]] || rm -f -- "$file"
    exit 0
}
trap stop TERM INT EXIT

for ((i = 0; i < cpus; i++)); do
    # A subshell of its own: killing it ends the spin at once (no child to orphan).
    (trap 'exit 0' TERM; while :; do :; done) &
    pids+=($!)
done

if [[ $disk != none ]]; then
    [[ -d $disk && -w $disk ]] || { echo "hogs: $disk is not a writable directory" >&2; exit 1; }
    file=$disk/.lc-hog.$$
    (
        trap 'exit 0' TERM
        while :; do
            dd if=/dev/zero of="$file" bs=1M count="$disk_mib" conv=fsync status=none 2>/dev/null || true
            rm -f -- "$file"
        done
    ) &
    pids+=($!)
fi

echo "hogs: $cpus CPU hog(s), disk hog: $([[ $disk == none ]] && echo none || echo "${disk_mib} MiB written and synced in a loop in $disk")"
wait
