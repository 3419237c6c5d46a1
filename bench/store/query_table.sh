#!/usr/bin/env bash
# The query table (issue 32): `linecap extract` against the reference `tcpdump -r` over the
# same files, for a conversation spread over the whole capture, one clustered in a 5 s
# window, and a query matching nothing; cold (page cache dropped before every run) and
# warm; medians of REPS runs, tools alternated; every answer compared record by record
# (timestamps included) with tcpdump's; the index size ÷ the data; and for each query the
# bytes read ÷ the bytes returned, two ways: what extract parsed (its own counter, `-v`) and
# what the kernel read from the disk for it (getrusage's inblock × 512, cold runs).
#
#   bench/run.sh query            (or bench/store/query_table.sh [BUILD_DIR])
#   BENCH_GB=10 REPS=3 BENCH_DIR=/var/tmp/lc-query-bench BENCH_KEEP=0 BENCH_DROP_CACHES=1
#
# The store is bench/store/store_gen's (2 ports x 2 queues, 256 MiB files, both
# conversations injected), indexed with this tree's linecap (index version 2). Stenographer
# is not in this table: its index is built by stenotype from live traffic (the peers rig,
# bench/rfc2544.py); bench/api/run.sh times stenoread against linecap serve.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$SRC/build}
LINECAP=${LINECAP:-$BUILD/src/linecap}
STORE_GEN=${STORE_GEN:-$BUILD/bench/store/store_gen}
GB=${BENCH_GB:-10}
REPS=${REPS:-3}
DIR=${BENCH_DIR:-/var/tmp/lc-query-bench}
DROP=${BENCH_DROP_CACHES:-1}
PY=python3
[[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3
die() { echo "bench/store/query_table.sh: $*" >&2; exit 1; }
for b in "$LINECAP" "$STORE_GEN"; do [[ -x $b ]] || die "missing $b (configure with -Dbench=true and build)"; done
for c in tcpdump mergecap /usr/bin/time; do command -v "$c" >/dev/null || die "needs $c"; done
[[ ! -e $DIR ]] || die "$DIR exists; remove it or set BENCH_DIR"
WORK=$(mktemp -d /tmp/lc-query-bench.XXXXXX)
cleanup() {
    if [[ ${BENCH_KEEP:-0} == 1 ]]; then echo "kept $DIR"; else rm -rf -- "$DIR"; fi
    rm -rf -- "$WORK"
}
trap cleanup EXIT

cold_note=""
drop_caches() {
    ((DROP)) || { cold_note=" (NOT COLD: BENCH_DROP_CACHES=0)"; return 0; }
    sync
    echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || { DROP=0; cold_note=" (NOT COLD: cannot drop the page cache)"; }
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }'; }

echo "# query table, $(date -u +%FT%TZ), $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo '?')"
echo "machine: $(nproc) vCPUs, load average at the start $(cut -d' ' -f1-3 /proc/loadavg)"
eval "$("$STORE_GEN" --out "$DIR" --gb "$GB" --rotate-mb 256 --ports 2 --queues 2)"
ls "$DIR"/*.pcap >"$WORK/files.txt"
"$LINECAP" index --dir "$DIR" --force 2>"$WORK/index.log" || die "linecap index: $(cat "$WORK/index.log")"
idx=$(du -cb "$DIR"/*.pcap.idx | tail -1 | cut -f1)
echo "store: $(wc -l <"$WORK/files.txt") files, $STORE_BYTES bytes, $STORE_PACKETS packets; index $idx bytes = $(awk -v i="$idx" -v p="$STORE_BYTES" 'BEGIN { printf "%.2f", 100 * i / p }') % of the data"

declare -A FILTER=([spread]=$SPREAD_FILTER [clustered]=$CONV_FILTER [nothing]="host 198.51.100.1 and tcp port 9")
# run TOOL QUERY MODE: one timed run; appends seconds to WORK/TOOL-QUERY-MODE, disk bytes
# (cold) to ...-disk.
run() {
    local tool=$1 q=$2 mode=$3 out=$WORK/$1-$2.pcap
    [[ $mode == cold ]] && drop_caches
    local cmd
    if [[ $tool == extract ]]; then
        cmd=("$LINECAP" extract --dir "$DIR" --filter "${FILTER[$q]}" -o "$out" -v)
    else
        cmd=(tcpdump -q -Z root -V "$WORK/files.txt" -w "$out" "${FILTER[$q]}")
    fi
    /usr/bin/time -f "%e %I" -o "$WORK/time" "${cmd[@]}" 2>"$WORK/$tool-$q.log" >/dev/null \
        || die "$tool $q: $(cat "$WORK/$tool-$q.log")"
    read -r secs blocks <"$WORK/time"
    echo "$secs" >>"$WORK/$tool-$q-$mode"
    [[ $mode == cold ]] && echo $((blocks * 512)) >>"$WORK/$tool-$q-disk"
    return 0
}
for ((rep = 1; rep <= REPS; rep++)); do
    for q in spread clustered nothing; do
        for mode in cold warm; do
            run extract "$q" "$mode"
            run tcpdump "$q" "$mode"
        done
    done
done

# The reference answer, not timed: tcpdump -r over each file at nanosecond precision (-V
# opens the files after the first at microseconds), merged in time order.
reference() {
    local q=$1 f i=0 parts=()
    while read -r f; do
        tcpdump -q --time-stamp-precision=nano -r "$f" -w "$WORK/part-$i.pcap" "${FILTER[$q]}" 2>/dev/null
        parts+=("$WORK/part-$i.pcap")
        i=$((i + 1))
    done <"$WORK/files.txt"
    mergecap -F nsecpcap -w "$WORK/reference-$q.pcap" "${parts[@]}"
    rm -f -- "${parts[@]}"
}
for q in spread clustered nothing; do reference "$q"; done

echo ""
echo "medians of $REPS runs, tools alternated, cold = sync + drop_caches before the run$cold_note; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| query | packets | tcpdump -r cold / warm s | linecap extract cold / warm s | tcpdump ÷ extract cold / warm | bytes read ÷ returned: parsed by extract / from disk, cold | answers |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for q in spread clustered nothing; do
    tc=$(median <"$WORK/tcpdump-$q-cold") tw=$(median <"$WORK/tcpdump-$q-warm")
    ec=$(median <"$WORK/extract-$q-cold") ew=$(median <"$WORK/extract-$q-warm")
    returned=$(stat -c %s "$WORK/extract-$q.pcap")
    parsed=$(sed -n 's/.* packets \/ \([0-9.]*\) MiB examined.*/\1/p' "$WORK/extract-$q.log" | awk '{ printf "%.0f", $1 * 1048576 }')
    disk=$(median <"$WORK/extract-$q-disk")
    # Of the disk bytes, the capture files' share: less what the query matching nothing
    # read (the programs, libraries and the indexes, read cold as well).
    base=$(median <"$WORK/extract-nothing-disk")
    n=$("$PY" "$SRC/tests/tools/pcap_compare.py" count "$WORK/extract-$q.pcap" | sed -n 's/.*: \([0-9]*\) packets, .*/\1/p' | tail -1)
    if PYTHONPATH=$SRC/tests/lib "$PY" "$SRC/tests/store/ref_compare.py" compare "$WORK/reference-$q.pcap" \
        "$WORK/extract-$q.pcap" >"$WORK/cmp" 2>&1; then
        same="the same records as tcpdump -r's"
    else
        same="DIFFER: $(head -c 200 "$WORK/cmp")"
    fi
    rr="-"
    if ((returned > 24)); then  # less the file header
        rr="$(ratio "$parsed" "$((returned - 24))") / $(ratio "$disk" "$((returned - 24))"), less the nothing query's: $(ratio "$(awk -v a="$disk" -v b="$base" 'BEGIN { print a - b }')" "$((returned - 24))")"
    fi
    [[ $q != nothing ]] || rr="- (nothing returned; $parsed B parsed, $disk B from disk cold: programs, libraries, indexes)"
    echo "| $q | $n | $tc / $tw | $ec / $ew | $(ratio "$tc" "$ec") / $(ratio "$tw" "$ew") | $rr | $same |"
done
echo ""
echo "what extract read (-v): "
for q in spread clustered nothing; do echo "  $q: $(sed -n 's/^linecap: \([0-9]* packets written.*\)/\1/p' "$WORK/extract-$q.log")"; done
