#!/usr/bin/env bash
# The query table (issue 32): `linecap extract` against the reference `tcpdump -r` over the
# same files and against Debian's `stenoread` over a Stenographer store of the same packets,
# for a conversation spread over the whole capture, one clustered in a 5 s window, and a
# query matching nothing; cold (page cache dropped before every run; for stenoread the
# server started again as well) and warm; medians of REPS runs, tools alternated; every
# answer of extract compared record by record (timestamps included) with tcpdump's, and
# stenoread's with extract's frame by frame (its timestamps are the replay's); the index
# size ÷ the data; and for each query the bytes read ÷ the bytes returned, two ways: what
# extract parsed (its own counter, `-v`) and what the kernel read from the disk for it
# (the store's device's sectors read, cold runs). Times are wall clock ($EPOCHREALTIME
# around the command); warm means the same query ran just before (untimed).
#
#   bench/run.sh query            (or bench/store/query_table.sh [BUILD_DIR])
#   BENCH_GB=10 REPS=3 BENCH_DIR=/var/tmp/lc-query-bench BENCH_KEEP=0 BENCH_DROP_CACHES=1
#   BENCH_STENO=1 BENCH_STENO_PPS=50000 BENCH_STENO_BLOCKS=256
#
# The store is bench/store/store_gen's (2 ports x 2 queues, 256 MiB files, both
# conversations injected), indexed with this tree's linecap (index version 2).
# Stenographer's store (bench/store/steno_store.py, in BENCH_DIR-steno): the store's files
# merged in time order and replayed by tcpreplay at BENCH_STENO_PPS into a veth that the
# stenographer server's stenotype captures, so stenotype writes and indexes them itself; the
# column is refused (not measured) unless its files hold every packet with no drop counted.
# stenoread asks the server over TLS with the client certificate (stenokeys' PKI) and writes
# the answer through tcpdump, as an analyst runs it. Needs stenographer, stenographer-client,
# tcpreplay; BENCH_STENO=0 leaves the column out.
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
for c in tcpdump mergecap; do command -v "$c" >/dev/null || die "needs $c"; done
STENO=${BENCH_STENO:-1}
STENO_DIR=$DIR-steno
steno_note=""
if ((STENO)); then
    for c in stenographer stenotype stenoread stenokeys tcpreplay jq; do
        command -v "$c" >/dev/null || { STENO=0; steno_note="stenoread not measured: no $c"; }
    done
fi
[[ ! -e $DIR ]] || die "$DIR exists; remove it or set BENCH_DIR"
[[ ! -e $STENO_DIR ]] || die "$STENO_DIR exists; remove it or set BENCH_DIR"
WORK=$(mktemp -d /tmp/lc-query-bench.XXXXXX)
cleanup() {
    [[ ! -e $STENO_DIR ]] || "$PY" "$SRC/bench/store/steno_store.py" down --work "$STENO_DIR" || true
    if [[ ${BENCH_KEEP:-0} == 1 ]]; then echo "kept $DIR"; else rm -rf -- "$DIR" "$STENO_DIR"; fi
    rm -rf -- "$WORK"
}
trap cleanup EXIT

cold_note=""
drop_caches() {
    ((DROP)) || { cold_note=" (NOT COLD: BENCH_DROP_CACHES=0)"; return 0; }
    sync
    echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || { DROP=0; cold_note=" (NOT COLD: cannot drop the page cache)"; }
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else printf "%.4f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }'; }
ratio2() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

echo "# query table, $(date -u +%FT%TZ), $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo '?')"
echo "machine: $(nproc) vCPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), load average at the start $(cut -d' ' -f1-3 /proc/loadavg)"
eval "$("$STORE_GEN" --out "$DIR" --gb "$GB" --rotate-mb 256 --ports 2 --queues 2)"
ls "$DIR"/*.pcap >"$WORK/files.txt"
"$LINECAP" index --dir "$DIR" --force 2>"$WORK/index.log" || die "linecap index: $(cat "$WORK/index.log")"
idx=$(du -cb "$DIR"/*.pcap.idx | tail -1 | cut -f1)
echo "store: $(wc -l <"$WORK/files.txt") files, $STORE_BYTES bytes, $STORE_PACKETS packets; index $idx bytes = $(awk -v i="$idx" -v p="$STORE_BYTES" 'BEGIN { printf "%.2f", 100 * i / p }') % of the data"

declare -A FILTER=([spread]=$SPREAD_FILTER [clustered]=$CONV_FILTER [nothing]="host 198.51.100.1 and tcp port 9")
# The same queries in Stenographer's language ("tcp port P" is "port P and tcp").
declare -A STENO_QUERY
for q in "${!FILTER[@]}"; do STENO_QUERY[$q]="${FILTER[$q]/tcp port/port} and tcp"; done
TOOLS="extract tcpdump"
if ((STENO)); then
    echo "Stenographer's store: replaying the store at ${BENCH_STENO_PPS:-50000} pps into stenotype (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    rc=0
    "$PY" "$SRC/bench/store/steno_store.py" up --store "$DIR" --work "$STENO_DIR" --pps "${BENCH_STENO_PPS:-50000}" \
        --blocks "${BENCH_STENO_BLOCKS:-256}" --expect "$STORE_PACKETS" >"$WORK/steno.vars" 2>"$WORK/steno.log" || rc=$?
    ((rc == 0 || rc == 3)) || die "stenographer's store: $(tail -c 2000 "$WORK/steno.log")"
    eval "$(cat "$WORK/steno.vars")"
    if ((rc == 3)); then
        STENO=0
        steno_note="stenoread not measured, REFUSED: ${STENO_REFUSED:-?}"
        echo "$steno_note"
    else
        TOOLS+=" steno"
        echo "Stenographer's store: $STENO_FILES files, $STENO_PACKETS packets (all replayed, 0 dropped), $STENO_BYTES bytes = $(ratio2 "$STENO_BYTES" "$STORE_BYTES") x linecap's; index $STENO_INDEX_BYTES bytes = $(awk -v i="$STENO_INDEX_BYTES" -v p="$STENO_BYTES" 'BEGIN { printf "%.2f", 100 * i / p }') % of its data; replayed at $STENO_REPLAY_PPS pps"
    fi
fi
# The sectors read from the disk under the store, as the kernel counts them for the whole
# device: a tool's own reads and those of any server it asks (stenoread's are the
# stenographer server's), with nothing else running (the bench's condition).
STORE_DEV=$(findmnt -n -o SOURCE --target "$DIR" 2>/dev/null || true)
STORE_DEV_STAT=/sys/class/block/$(basename "${STORE_DEV:-none}")/stat
sectors_read() { if [[ -r $STORE_DEV_STAT ]]; then awk '{ print $3 }' "$STORE_DEV_STAT"; else echo 0; fi; }
# run TOOL QUERY MODE: one timed run; appends seconds to WORK/TOOL-QUERY-MODE, disk bytes
# (cold) to ...-disk. Warm: the same query has just run (an untimed run first), so the
# program, its libraries and what it read are in the page cache.
run() {
    local tool=$1 q=$2 mode=$3 out=$WORK/$1-$2.pcap
    if [[ $mode == cold && $tool == steno ]]; then
        "$PY" "$SRC/bench/store/steno_store.py" restart --work "$STENO_DIR" 2>"$WORK/steno-restart.log" \
            || die "stenographer restart: $(tail -c 2000 "$WORK/steno-restart.log")"
    fi
    [[ $mode == cold ]] && drop_caches
    local cmd
    if [[ $tool == extract ]]; then
        cmd=("$LINECAP" extract --dir "$DIR" --filter "${FILTER[$q]}" -o "$out" -v)
    elif [[ $tool == steno ]]; then
        # -Z root: its tcpdump would open OUT after dropping to the tcpdump user (WORK is root's).
        cmd=(env STENOGRAPHER_CONFIG="$STENO_CONFIG" stenoread "${STENO_QUERY[$q]}" -Z root -w "$out")
    else
        cmd=(tcpdump -q -Z root -V "$WORK/files.txt" -w "$out" "${FILTER[$q]}")
    fi
    if [[ $mode == warm ]]; then
        "${cmd[@]}" 2>"$WORK/$tool-$q.log" >/dev/null || die "$tool $q: $(cat "$WORK/$tool-$q.log")"
    fi
    local sectors start end
    sectors=$(sectors_read)
    start=$EPOCHREALTIME
    "${cmd[@]}" 2>"$WORK/$tool-$q.log" >/dev/null || die "$tool $q: $(cat "$WORK/$tool-$q.log")"
    end=$EPOCHREALTIME
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f\n", b - a }' >>"$WORK/$tool-$q-$mode"
    [[ $mode == cold ]] && echo $((($(sectors_read) - sectors) * 512)) >>"$WORK/$tool-$q-disk"
    return 0
}
for ((rep = 1; rep <= REPS; rep++)); do
    for q in spread clustered nothing; do
        for mode in cold warm; do
            for tool in $TOOLS; do run "$tool" "$q" "$mode"; done
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
echo "medians of $REPS runs, tools alternated, cold = sync + drop_caches before the run (stenoread: the server started again first), warm = the same query run just before$cold_note; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
[[ -z $steno_note ]] || echo "$steno_note"
echo "| query | packets | tcpdump -r cold / warm s | linecap extract cold / warm s | tcpdump ÷ extract cold / warm | stenoread cold / warm s | stenoread ÷ extract cold / warm | bytes read ÷ returned: parsed by extract / from disk, cold | answers |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for q in spread clustered nothing; do
    tc=$(median <"$WORK/tcpdump-$q-cold") tw=$(median <"$WORK/tcpdump-$q-warm")
    ec=$(median <"$WORK/extract-$q-cold") ew=$(median <"$WORK/extract-$q-warm")
    returned=$(stat -c %s "$WORK/extract-$q.pcap")
    parsed=$(sed -n 's/.* packets \/ \([0-9.]*\) MiB examined.*/\1/p' "$WORK/extract-$q.log" | awk '{ printf "%.0f", $1 * 1048576 }')
    disk=$(median <"$WORK/extract-$q-disk" | cut -d. -f1)  # bytes: whole
    # Of the disk bytes, the capture files' share: less what the query matching nothing
    # read (the programs, libraries and the indexes, read cold as well).
    base=$(median <"$WORK/extract-nothing-disk" | cut -d. -f1)
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
    st="-" sr="-"
    if ((STENO)); then
        sc=$(median <"$WORK/steno-$q-cold") sw=$(median <"$WORK/steno-$q-warm")
        st="$sc / $sw" sr="$(ratio2 "$sc" "$ec") / $(ratio2 "$sw" "$ew")"
        # Frame by frame, in order: stenotype's timestamps are the replay's.
        if "$PY" "$SRC/tests/tools/pcap_compare.py" headers "$WORK/extract-$q.pcap" "$WORK/steno-$q.pcap" >"$WORK/scmp" 2>&1; then
            same+="; stenoread's the same frames in the same order"
        else
            same+="; stenoread's DIFFER: $(head -c 200 "$WORK/scmp")"
        fi
    fi
    echo "| $q | $n | $tc / $tw | $ec / $ew | $(ratio "$tc" "$ec") / $(ratio "$tw" "$ew") | $st | $sr | $rr | $same |"
done
echo ""
echo "what extract read (-v): "
for q in spread clustered nothing; do echo "  $q: $(sed -n 's/^linecap: \([0-9]* packets written.*\)/\1/p' "$WORK/extract-$q.log")"; done
