#!/usr/bin/env bash
# Retrieval API benchmark (not a test; ~20 min; needs root, hugepages, -Dbench=true):
#
#  1. one conversation from a >= 10 GB store (bench/store/store_gen, 2 ports x 2 queues,
#     256 MiB files, indexed): time to first byte and total time over the API (curl,
#     `linecap serve` on loopback) vs `linecap extract -o -` vs `tcpdump -V FILES -w -`,
#     cold (page cache dropped) and warm; the three answers must hold the same packets
#     (the API's and extract's are byte-identical);
#  2. capture rate with and without four streaming queries, in the same run: linecapd
#     replays a pcap at full speed (net_pcap infinite_rx, 1 worker) into tmpfs; windows of
#     WINDOW_S seconds alternate without / with four API queries streaming large answers
#     from the store to /dev/null; the rate is read from linecapd's metrics; ratios are
#     against the "without" windows of this run;
#  3. one audit record.
# Results: bench/api/results/api.txt (and a copy in $BENCH_EVIDENCE when set).
# The store is deleted at the end (BENCH_KEEP=1 keeps it; BENCH_DIR=an existing store made
# by an earlier run with BENCH_KEEP=1 reuses it).
#   BENCH_GB=10 BENCH_DIR=/var/tmp/lc-api-bench WINDOW_S=10 ROUNDS=3 bench/api/run.sh [BUILD_DIR]
#   BENCH_PARTS=capture (or conversation; default both)   BENCH_TCPDUMP=cold|both|no (cold)
#   LINECAP, LINECAPD, STORE_GEN: the programs (default: BUILD_DIR's)
# Also: bench/run.sh api.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$SRC/build}
LINECAP=${LINECAP:-$BUILD/src/linecap}
LINECAPD=${LINECAPD:-$BUILD/src/linecapd}
STORE_GEN=${STORE_GEN:-$BUILD/bench/store/store_gen}
TTFB="python3 $SRC/bench/api/ttfb.py"
GB=${BENCH_GB:-10}
DIR=${BENCH_DIR:-/var/tmp/lc-api-bench}
WINDOW_S=${WINDOW_S:-10}
ROUNDS=${ROUNDS:-5}
EVIDENCE=${BENCH_EVIDENCE:-}
PARTS=${BENCH_PARTS:-conversation,capture}
RESULTS=$SRC/bench/api/results
for b in "$LINECAP" "$LINECAPD" "$STORE_GEN"; do [[ -x $b ]] || { echo "missing $b (-Dbench=true, build)" >&2; exit 1; }; done
for c in curl tcpdump capinfos python3; do command -v $c >/dev/null || { echo "needs $c" >&2; exit 1; }; done
REUSE=0
if [[ -e $DIR ]]; then
    [[ -f $DIR/.lc-api-bench ]] || { echo "$DIR exists and is not a store of this benchmark; remove it or set BENCH_DIR" >&2; exit 1; }
    REUSE=1
fi
mkdir -p "$RESULTS"
[[ -z $EVIDENCE ]] || mkdir -p "$EVIDENCE"
WORK=$(mktemp -d /tmp/lc-api-bench.XXXXXX)
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    if [[ ${BENCH_KEEP:-0} == 1 || $REUSE == 1 ]]; then echo "kept $DIR"; else rm -rf -- "$DIR"; fi
    rm -rf -- "$WORK"
}
trap cleanup EXIT
OUT=$RESULTS/api.txt
: >"$OUT"
say() { echo "$*" | tee -a "$OUT"; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
count() { capinfos -c -M "$1" 2>/dev/null | awk -F: '/Number of packets/ { gsub(/ /, "", $2); print $2 }'; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

say "# linecap retrieval API benchmark, $(date -u +%FT%TZ)"
say "machine: $(nproc) vCPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), shared with other builds/tests (load average $(cut -d' ' -f1-3 /proc/loadavg))"

# --- the store ---------------------------------------------------------------------------
t0=$(date +%s.%N)
if [[ $REUSE == 1 ]]; then
    source "$DIR/.lc-api-bench"
else
    "$STORE_GEN" --out "$DIR" --gb "$GB" --rotate-mb 256 --ports 2 --queues 2 >"$WORK/store.env"
    eval "$(cat "$WORK/store.env")"
    cp "$WORK/store.env" "$DIR/.lc-api-bench"
fi
"$LINECAP" index --dir "$DIR" --jobs 2 2>/dev/null
say "store: $(ls "$DIR"/*.pcap | wc -l) files, $STORE_BYTES bytes, $STORE_PACKETS packets ($([[ $REUSE == 1 ]] && echo reused || echo generated) + indexed in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.0f", b-a}') s)"
say "conversation: $CONV_FILTER ($CONV_PACKETS packets)"
ls "$DIR"/*.pcap >"$WORK/files.txt"

# --- linecap serve on loopback ------------------------------------------------------------
PORT=$(free_port)
cat >"$WORK/api.yaml" <<YAML
ports:
  - name: bench
    device: "net_null0"
output:
  directory: "$DIR"
api:
  listen: "127.0.0.1:$PORT"
  unauthenticated: loopback
  audit_log: "$WORK/audit.log"
  max_queries: 8
  max_bytes: 64GiB
  max_duration: 1h
YAML
"$LINECAP" serve --config "$WORK/api.yaml" 2>"$WORK/serve.log" &
PIDS+=($!)
for _ in $(seq 100); do grep -q 'listening on' "$WORK/serve.log" && break; sleep 0.1; done
URL=http://127.0.0.1:$PORT

# --- 1: one conversation -------------------------------------------------------------------
if [[ ,$PARTS, == *,conversation,* ]]; then
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$1"; }
api_cmd=(curl -sf "$URL/api/v1/packets?filter=$(enc "$CONV_FILTER")")
extract_cmd=("$LINECAP" extract --dir "$DIR" --filter "$CONV_FILTER" -o -)
tcpdump_cmd=(tcpdump -q -V "$WORK/files.txt" -w - "$CONV_FILTER")
# The API's queries run at idle CPU and I/O priority; so does this run of extract, to
# compare like with like on a busy machine.
extract_idle_cmd=(chrt --idle 0 ionice -c3 "${extract_cmd[@]}")
PATHS="api extract extract_idle"
TCPDUMP_RUNS=${BENCH_TCPDUMP:-cold}
[[ $TCPDUMP_RUNS == no ]] || PATHS+=" tcpdump"
say ""
say "## one conversation from the ${GB} GB store: time to first byte / total (s)"
say "| path | cold ttfb | cold total | warm ttfb | warm total | packets |"
say "| --- | --- | --- | --- | --- | --- |"
for name in $PATHS; do
    declare -n cmd="${name}_cmd"
    drop_caches
    read -r c_ttfb c_total _ < <($TTFB "$WORK/$name.pcap" "${cmd[@]}")
    w_ttfb=- w_total=-  # tcpdump reads all 10 GB each time: warm only when asked (minutes)
    [[ $name == tcpdump && $TCPDUMP_RUNS != both ]] || read -r w_ttfb w_total _ < <($TTFB "$WORK/$name.pcap" "${cmd[@]}")
    say "| $name | $c_ttfb | $c_total | $w_ttfb | $w_total | $(count "$WORK/$name.pcap") |"
done
cmp "$WORK/api.pcap" "$WORK/extract.pcap" && say "API answer byte-identical to linecap extract: yes"
[[ ! -e $WORK/tcpdump.pcap ]] || [[ $(count "$WORK/tcpdump.pcap") != $(count "$WORK/extract.pcap") ]] || say "tcpdump -r: same packet count: yes"
say "(linecap extract and the API write through a 1 MiB buffer, tcpdump -w - through stdio's: the"
say " first byte of a small answer comes at its end for all three)"
fi

# --- 2: capture rate with and without four streaming queries -------------------------------
if [[ ,$PARTS, == *,capture,* ]]; then
say ""
say "## capture rate with and without four streaming API queries (same run)"
CAPDIR=$(mktemp -d /dev/shm/lc-api-bench-cap.XXXXXX)
PIDS_CLEAN="rm -rf $CAPDIR"
trap 'cleanup; rm -rf "$CAPDIR"' EXIT
python3 "$SRC/tests/tools/gen_pcap.py" -q --count 50000 --size 512 --flows 1024 --out "$WORK/src.pcap"
MPORT=$(free_port)
cat >"$WORK/linecapd.yaml" <<YAML
eal:
  lcores: "0-1"
  args: ["--in-memory", "--file-prefix", "lcapibench$$"]
ports:
  - name: bench
    device: "net_pcap0,rx_pcap=$WORK/src.pcap,infinite_rx=1"
    rx_queues: 1
capture:
  mbufs: 70000
output:
  directory: "$CAPDIR"
  rotate: { size_mb: 256, interval_s: 0 }
  manifest: false
  index: false
  retention: { max_bytes: 2GiB }
metrics:
  listen: "127.0.0.1:$MPORT"
YAML
"$LINECAPD" --config "$WORK/linecapd.yaml" >"$WORK/linecapd.log" 2>&1 &
LPID=$!
PIDS+=($LPID)
scrape() { curl -s "http://127.0.0.1:$MPORT/metrics" | awk '$1 ~ /^linecap_(rx_packets_total|written_packets_total)/ { split($1, n, "{"); s[n[1]] += $2 } END { printf "%.0f %.0f\n", s["linecap_rx_packets_total"], s["linecap_written_packets_total"] }'; }
for _ in $(seq 300); do [[ $(scrape | cut -d' ' -f1) -gt 0 ]] 2>/dev/null && break; sleep 0.1; done
sleep 3  # warm-up: the replay and the writer reach their steady rate
window() {  # prints the rx and written packets/s over WINDOW_S
    local a b t0 t1
    read -r ra wa < <(scrape); t0=$(date +%s.%N)
    sleep "$WINDOW_S"
    read -r rb wb < <(scrape); t1=$(date +%s.%N)
    awk -v ra="$ra" -v rb="$rb" -v wa="$wa" -v wb="$wb" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f %.0f\n", (rb-ra)/(b-a), (wb-wa)/(b-a) }'
}
start_queries() {  # four answers of ~all the store, streamed to /dev/null (curl reports the bytes)
    QPIDS=()
    local i
    : >"$WORK/streamed"
    for i in 1 2 3 4; do
        curl -s -o /dev/null -w '%{size_download}\n' "$URL/api/v1/packets?from=$((i * 20))" >>"$WORK/streamed" 2>/dev/null &
        QPIDS+=($!)
    done
}
stop_queries() { local p; for p in "${QPIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done; for p in "${QPIDS[@]}"; do wait "$p" 2>/dev/null || true; done; }
say "| round | without: rx pkt/s | with 4 queries: rx pkt/s | ratio | without: written/s | with: written/s | MB the 4 queries streamed | load (1 min) |"
say "| --- | --- | --- | --- | --- | --- | --- | --- |"
RATIOS=()
for r in $(seq "$ROUNDS"); do
    read -r r0 w0 < <(window)
    start_queries
    sleep 2  # the queries are streaming
    read -r r1 w1 < <(window)
    stop_queries
    ratio=$(awk -v a="$r0" -v b="$r1" 'BEGIN { printf "%.3f", b / a }')
    RATIOS+=("$ratio")
    mb=$(awk '{ s += $1 } END { printf "%.0f", s / 1e6 }' "$WORK/streamed")
    say "| $r | $r0 | $r1 | $ratio | $w0 | $w1 | $mb | $(cut -d' ' -f1 /proc/loadavg) |"
done
say "median ratio with/without: $(printf '%s\n' "${RATIOS[@]}" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')"
kill -TERM "$LPID"; wait "$LPID" || true
grep -E "summary|received|dropped" "$WORK/linecapd.log" | tail -4 | sed 's/^/linecapd: /' | tee -a "$OUT"
fi

# --- 3: one audit record ---------------------------------------------------------------------
say ""
say "## one audit record"
grep -m1 '"request":"/api/v1/packets' "$WORK/audit.log" | tee -a "$OUT" >"$WORK/audit-record.json"
if [[ -n $EVIDENCE ]]; then
    cp "$WORK/audit-record.json" "$EVIDENCE/audit-record.json"
    cp "$OUT" "$EVIDENCE/api-bench.txt"
fi
