#!/usr/bin/env bash
# Retrieval benchmark (not a test): generates a store of >= 10 GB of pcap (2 ports x 2
# queues, rotation at 256 MiB, realistic mix), indexes it, and times a selective query
# (one conversation) with `linecap extract` against `tcpdump -r` with the same filter over
# the same files, cold (page cache dropped) and warm. Prints the speedup and the index
# size ratio, then deletes the store.
#
#   bench/store/run_bench.sh [BUILD_DIR]       (default: build; needs -Dbench=true)
#   BENCH_GB=10 BENCH_DIR=/var/tmp/lc-store-bench BENCH_KEEP=0 BENCH_BLOCK_KB="256 64"
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$SRC/build}
LINECAP=${LINECAP:-$BUILD/src/linecap}
[[ -x $LINECAP ]] || LINECAP=$BUILD/tests/store/linecap
STORE_GEN=$BUILD/bench/store/store_gen
VARIANTS=$BUILD/bench/store/index_variants
GB=${BENCH_GB:-10}
DIR=${BENCH_DIR:-/var/tmp/lc-store-bench}
BLOCKS=${BENCH_BLOCK_KB:-256 64}
for b in "$LINECAP" "$STORE_GEN" "$VARIANTS"; do
    [[ -x $b ]] || { echo "missing $b (configure with -Dbench=true and build)" >&2; exit 1; }
done
command -v tcpdump >/dev/null || { echo "needs tcpdump" >&2; exit 1; }

need_kb=$((GB * 1100 * 1024))
parent=$(dirname "$DIR")
avail_kb=$(df -Pk "$parent" | awk 'NR == 2 { print $4 }')
if ((avail_kb < need_kb)); then
    echo "not enough space in $parent: $((avail_kb / 1024 / 1024)) GiB free, need ~$((need_kb / 1024 / 1024)) GiB" >&2
    echo "(df -h /work /tmp /var/tmp; set BENCH_DIR)" >&2
    exit 1
fi
[[ ! -e $DIR ]] || { echo "$DIR exists; remove it or set BENCH_DIR" >&2; exit 1; }
WORK=$(mktemp -d /tmp/lc-store-bench-out.XXXXXX)
cleanup() {
    if [[ ${BENCH_KEEP:-0} == 1 ]]; then echo "kept $DIR"; else rm -rf -- "$DIR"; fi
    rm -rf -- "$WORK"
}
trap cleanup EXIT

can_drop=1
drop_caches() {
    sync
    if ((can_drop)) && ! echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
        can_drop=0
        echo "note: cannot drop the page cache here (not root?): 'cold' runs are warm" >&2
    fi
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
count() { capinfos -c -M "$1" 2>/dev/null | awk -F: '/Number of packets/ { gsub(/ /, "", $2); print $2 }'; }

echo "== generating ${GB} GB in $DIR"
t0=$(now)
eval "$("$STORE_GEN" --out "$DIR" --gb "$GB" --rotate-mb 256 --ports 2 --queues 2)"
t1=$(now)
nfiles=$(ls "$DIR"/*.pcap | wc -l)
echo "store: $nfiles files, $STORE_BYTES bytes, $STORE_PACKETS packets, generated in $(elapsed "$t0" "$t1") s"
echo "query: $CONV_FILTER ($CONV_PACKETS packets in the store)"
ls "$DIR"/*.pcap >"$WORK/files.txt"

# tcpdump baseline: every file, same filter (tcpdump -V reads a list of files).
tcpdump_run() {
    drop_caches_if=$1
    [[ $drop_caches_if == cold ]] && drop_caches
    local a b
    a=$(now)
    tcpdump -q -V "$WORK/files.txt" -w "$WORK/tcpdump.pcap" "$CONV_FILTER" 2>/dev/null
    b=$(now)
    elapsed "$a" "$b"
}
extract_run() {
    local mode=$1 a b
    shift
    [[ $mode == cold ]] && drop_caches
    a=$(now)
    "$LINECAP" extract --dir "$DIR" --filter "$CONV_FILTER" -o "$WORK/linecap.pcap" -v "$@" 2>"$WORK/extract.log"
    b=$(now)
    elapsed "$a" "$b"
}

declare -A R
R[tcpdump_cold]=$(tcpdump_run cold)
R[tcpdump_warm]=$(tcpdump_run warm)
tcpdump_n=$(count "$WORK/tcpdump.pcap")
echo "tcpdump -r over $nfiles files: cold ${R[tcpdump_cold]} s, warm ${R[tcpdump_warm]} s, $tcpdump_n packets"

for kb in $BLOCKS; do
    echo "== index, ${kb} KiB blocks"
    drop_caches
    a=$(now)
    "$LINECAP" index --dir "$DIR" --force --block-kb "$kb" 2>"$WORK/index.log"
    b=$(now)
    cat "$WORK/index.log"
    idx_bytes=$(du -cb "$DIR"/*.pcap.idx | tail -1 | cut -f1)
    ratio=$(awk -v i="$idx_bytes" -v p="$STORE_BYTES" 'BEGIN { printf "%.3f", 100 * i / p }')
    echo "index build (cold, 1 job): $(elapsed "$a" "$b") s for $STORE_BYTES bytes = $(awk -v s="$(elapsed "$a" "$b")" -v p="$STORE_BYTES" 'BEGIN { printf "%.0f", p / 1e6 / s }') MB/s; index $idx_bytes bytes = ${ratio}% of the pcap"

    cold=$(extract_run cold)
    warm=$(extract_run warm)
    n=$(count "$WORK/linecap.pcap")
    grep -v '^linecap: filter plan' "$WORK/extract.log" || true
    [[ $n == "$tcpdump_n" ]] || echo "MISMATCH: linecap $n packets, tcpdump $tcpdump_n" >&2
    echo "linecap extract: cold $cold s, warm $warm s, $n packets"
    echo "speedup vs tcpdump: cold $(awk -v a="${R[tcpdump_cold]}" -v b="$cold" 'BEGIN { printf "%.1f", a / b }')x, warm $(awk -v a="${R[tcpdump_warm]}" -v b="$warm" 'BEGIN { printf "%.1f", a / b }')x"
    # The same conversation with its time window (the typical forensic query).
    from=$((CONV_FROM_NS / 1000000000)).$(printf %09d $((CONV_FROM_NS % 1000000000)))
    to=$((CONV_TO_NS / 1000000000)).$(printf %09d $((CONV_TO_NS % 1000000000)))
    tc=$(extract_run cold --from "$from" --to "$to")
    tw=$(extract_run warm --from "$from" --to "$to")
    echo "linecap extract with the conversation's 5 s window: cold $tc s, warm $tw s, $(count "$WORK/linecap.pcap") packets"
    grep -v '^linecap: filter plan' "$WORK/extract.log" || true
done

echo "== index design: postings vs per-block Bloom filters (first 4 files, in memory)"
"$VARIANTS" --block-kb 64,256,1024 --queries 1000 $(head -4 "$WORK/files.txt")
