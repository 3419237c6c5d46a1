#!/usr/bin/env bash
# Retrieval API benchmark (not a test; needs root, hugepages, bpffs, tcpreplay; -Dbench=true).
# `bench/run.sh api` builds what it needs and runs this. Three parts, one report:
#
#  1. One conversation from a >= 10 GB store (bench/store/store_gen: 2 ports x 2 queues,
#     256 MiB files, indexed): time to first byte and total time over the API (curl with
#     the bench's bearer token, `linecap serve` on loopback) vs `linecap extract -o -` vs
#     `tcpdump -V FILES -w -`, and Debian's stenoread (POST /query over TLS with a client
#     certificate, as Security Onion asks; when stenographer-client is installed), all timed
#     the same way (ttfb.py). Cold means the same for
#     every path: `sync; echo 3 > /proc/sys/vm/drop_caches` right before the run; warm is
#     the run right after it. Scheduling is part of what is compared: `linecap serve` puts
#     every query at idle CPU and I/O priority (doc/api.md), so the API is measured as
#     shipped AND with its threads moved to normal priority, and extract at normal AND
#     under `chrt --idle 0 ionice -c3`: like is compared with like, and the table shows
#     what the idle classes cost on this machine. The answers must hold the conversation's
#     packets (the API's byte-identical to extract's).
#  2. Capture rate with and without four streaming queries, same run: bench/api/
#     capture_rate.py (a fixed offered rate into linecapd over a veth, windows alternating
#     without / with four clients streaming whole-store answers, ROUNDS of each; medians,
#     written packets/s, drops, the API's bytes/s).
#  3. One audit record (a complete /api/v1/packets answer, naming the token).
#
# The store is generated once and kept outside the tree, keyed by the generator's sources
# and its arguments: $BENCH_CACHE/store-<key> (default /var/tmp/linecap-api-bench); a
# rerun reuses it (the report says so). Delete the directory to reclaim the space.
#
# Every step has a time limit and fails loudly when it runs over (exit 1, naming the
# step); the whole run is bounded by BENCH_TIMEOUT; whatever it started is stopped and its
# scratch files removed on every exit (the cached store stays).
#
#   BENCH_GB=10 CONV_REPS=3 ROUNDS=3 WINDOW_S=10 CAPTURE_PPS=20000 bench/api/run.sh [BUILD_DIR]
#   BENCH_PARTS=conversation,capture (default both)   BENCH_TCPDUMP=cold|both|no (cold)
#   BENCH_CACHE=DIR   BENCH_RESULTS=DIR (default bench/results: api.txt, api-capture.json)
#   BENCH_TIMEOUT=S (whole run, default 7200)   BENCH_STEP_TIMEOUT=S (one retrieval, 1800)
#   BENCH_DROP_CACHES=0: no page-cache drop before the "cold" runs (the smoke test: each
#   drop takes seconds on a busy machine; the report then says NOT COLD)
#   BENCH_EVIDENCE=DIR: a copy of the report and the audit record
#   LINECAP, LINECAPD, STORE_GEN: the programs (default: BUILD_DIR's)
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$SRC/build}
LINECAP=${LINECAP:-$BUILD/src/linecap}
LINECAPD=${LINECAPD:-$BUILD/src/linecapd}
STORE_GEN=${STORE_GEN:-$BUILD/bench/store/store_gen}
GB=${BENCH_GB:-10}
ROUNDS=${ROUNDS:-3}
WINDOW_S=${WINDOW_S:-10}
PPS=${CAPTURE_PPS:-20000}
CONV_REPS=${CONV_REPS:-3}
DROP_CACHES=${BENCH_DROP_CACHES:-1}
PARTS=${BENCH_PARTS:-conversation,capture}
TCPDUMP_RUNS=${BENCH_TCPDUMP:-cold}
CACHE=${BENCH_CACHE:-/var/tmp/linecap-api-bench}
RESULTS=${BENCH_RESULTS:-$SRC/bench/results}
EVIDENCE=${BENCH_EVIDENCE:-}
TOTAL_LIMIT=${BENCH_TIMEOUT:-7200}
STEP_LIMIT=${BENCH_STEP_TIMEOUT:-1800}
export LINECAPD
# The system Python: a pyenv shim first on PATH costs seconds per start on a busy machine.
PY=python3
[[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3

die() { echo "bench/api/run.sh: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "needs root (drop_caches, veth, hugepages)"
for b in "$LINECAP" "$LINECAPD" "$STORE_GEN"; do [[ -x $b ]] || die "missing $b (meson -Dbench=true, build)"; done
for c in curl tcpdump tcpreplay python3 timeout flock chrt ionice; do
    command -v $c >/dev/null || die "needs $c (scripts/install-deps.sh)"
done

# --- cleanup on every exit, a bound on the whole run ------------------------------------------
WORK=$(mktemp -d /tmp/lc-api-bench.XXXXXX)
CAPDIR=
SERVE_PID=
STENO_SERVE_PID=
WATCHDOG_PID=
GEN_TMP=
cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    set +e
    [[ -z $WATCHDOG_PID ]] || kill "$WATCHDOG_PID" 2>/dev/null
    stop_serve
    if [[ -n $STENO_SERVE_PID ]]; then SERVE_PID=$STENO_SERVE_PID; stop_serve; fi
    [[ -z $GEN_TMP ]] || rm -rf -- "$GEN_TMP"
    [[ -z $CAPDIR ]] || rm -rf -- "$CAPDIR"
    rm -rf -- "$WORK"
    ((rc == 0)) || echo "bench/api/run.sh: failed (exit $rc); the report so far is in ${OUT:-nowhere}" >&2
    exit "$rc"
}
stop_serve() {
    [[ -n $SERVE_PID ]] || return 0
    kill -TERM "$SERVE_PID" 2>/dev/null
    timeout 20 tail --pid="$SERVE_PID" -f /dev/null || kill -KILL "$SERVE_PID" 2>/dev/null
    wait "$SERVE_PID" 2>/dev/null
    SERVE_PID=
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'echo "bench/api/run.sh: TIMEOUT: the whole run took more than $TOTAL_LIMIT s (BENCH_TIMEOUT)" >&2; exit 1' USR1
trap 'exit 143' TERM HUP
# The whole run's bound, checked when the current step (itself bounded) returns.
(
    trap 'kill $sp 2>/dev/null; exit 0' TERM
    sleep "$TOTAL_LIMIT" &
    sp=$!
    wait $sp && kill -USR1 $$
) >/dev/null 2>&1 &
WATCHDOG_PID=$!

# limited SECONDS WHAT CMD...: runs CMD; past SECONDS it is killed and the run fails, naming WHAT.
limited() {
    local s=$1 what=$2 rc=0
    shift 2
    # --foreground: Ctrl-C reaches the step; the Python steps stop what they started on SIGTERM.
    timeout --foreground -k 30 "$s" "$@" || rc=$?
    ((rc != 124 && rc != 137)) || die "TIMEOUT: $what did not end within $s s"
    return "$rc"
}

mkdir -p "$RESULTS"
[[ -z $EVIDENCE ]] || mkdir -p "$EVIDENCE"
OUT=$RESULTS/api.txt
: >"$OUT"
say() { echo "$*" | tee -a "$OUT"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
drop_caches() {
    ((DROP_CACHES)) || return 0
    limited 600 "sync before dropping the page cache" sync
    echo 3 >/proc/sys/vm/drop_caches
}
count() { "$PY" "$SRC/tests/tools/pcap_compare.py" count "$1" | sed -n 's/.*: \([0-9]*\) packets, .*/\1/p'; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }'; }

say "# linecap retrieval API benchmark, $(date -u +%FT%TZ), $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo '?')"
say "machine: $(nproc) vCPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), shared with other work; load average at the start $(load)"

# --- the store: generated once per generator version, kept in $CACHE ---------------------------
# The key: the generator's sources (and what it writes through) and its arguments.
GEN_ARGS=(--gb "$GB" --rotate-mb 256 --ports 2 --queues 2)
KEY=$(cat "$SRC/bench/store/gen_store.cpp" "$SRC/bench/xorshift.hpp" "$SRC/src/archive/layout.cpp" \
          "$SRC/src/format/pcap_format.hpp" <(echo "${GEN_ARGS[*]}") | sha256sum | cut -c1-16)
DIR=$CACHE/store-${GB}GB-$KEY
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
limited 60 "waiting for another run's use of $CACHE (lock)" flock 9 || die "cannot lock $CACHE/.lock"
t0=$(date +%s.%N)
if [[ -f $DIR/.lc-api-bench ]]; then
    how="cached in $DIR (generator key $KEY), reused"
else
    rm -rf -- "$DIR"
    need_kb=$(awk -v gb="$GB" 'BEGIN { printf "%.0f", gb * 1.1e6 + 1e5 }')
    avail_kb=$(df -Pk "$CACHE" | awk 'NR == 2 { print $4 }')
    ((avail_kb > need_kb)) || die "not enough space in $CACHE: $((avail_kb / 1048576)) GiB free, ${GB} GB store (set BENCH_CACHE)"
    GEN_TMP=$DIR.part-$$
    limited "$STEP_LIMIT" "store_gen" "$STORE_GEN" --out "$GEN_TMP" "${GEN_ARGS[@]}" >"$WORK/store.env"
    mv "$WORK/store.env" "$GEN_TMP/.lc-api-bench"
    mv -T "$GEN_TMP" "$DIR"
    GEN_TMP=
    how="generated into $DIR (generator key $KEY) in $(elapsed "$t0") s; kept for the next run"
fi
# shellcheck disable=SC1091
source "$DIR/.lc-api-bench"
t1=$(date +%s.%N)
limited "$STEP_LIMIT" "linecap index" "$LINECAP" index --dir "$DIR" --jobs 2 2>/dev/null
say "store: $(ls "$DIR"/*.pcap | wc -l) files, $STORE_BYTES bytes, $STORE_PACKETS packets; $how; indexed (or checked) in $(elapsed "$t1") s"
say "conversation: $CONV_FILTER ($CONV_PACKETS packets)"
ls "$DIR"/*.pcap >"$WORK/files.txt"

# --- linecap serve on loopback, authenticated with a bearer token (doc/api.md) -----------------
TOKEN_NAME=bench-analyst
printf '# bench/api/run.sh\n%s %s\n' "$TOKEN_NAME" "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$WORK/tokens"
chmod 600 "$WORK/tokens"
printf 'Authorization: Bearer %s\n' "$(awk '!/^#/ { print $2 }' "$WORK/tokens")" >"$WORK/auth.header"
cat >"$WORK/api.yaml" <<YAML
ports:
  - name: bench
    device: "net_null0"
output:
  directory: "$DIR"
metrics:
  listen: "127.0.0.1:1"   # no linecapd beside this serve: /api/v1/status says so at once
api:
  listen: "127.0.0.1:$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  tokens_file: "$WORK/tokens"
  audit_log: "$WORK/audit.log"
  max_queries: 8
  max_bytes: 64GiB
  max_duration: 1h
YAML
start_serve() {
    "$LINECAP" serve --config "$WORK/api.yaml" 2>>"$WORK/serve.log" &
    SERVE_PID=$!
    local _
    for _ in $(seq 200); do
        URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$WORK/serve.log" | tail -1)
        [[ -z $URL ]] || return 0
        kill -0 "$SERVE_PID" 2>/dev/null || die "linecap serve exited: $(cat "$WORK/serve.log")"
        sleep 0.1
    done
    die "TIMEOUT: linecap serve did not say where it listens within 20 s: $(cat "$WORK/serve.log")"
}
# serve_priority normal|idle: every thread of serve (the HTTP pool; a query's thread is
# started by one of them and inherits it) into that CPU and I/O class.
serve_priority() {
    local tids
    tids=$(ls /proc/"$SERVE_PID"/task)
    # shellcheck disable=SC2086  # one word per thread id
    if [[ $1 == normal ]]; then chrt -a -o -p 0 "$SERVE_PID" && ionice -c2 -n4 -p $tids
    else chrt -a -i -p 0 "$SERVE_PID" && ionice -c3 -p $tids; fi >/dev/null
}
start_serve

# --- stenoread's server: the same store over TLS with client certificates ------------------------
# Debian's stenoread (stenographer-client) as Security Onion runs it: POST /query over HTTPS
# with the client certificate its config names (doc/stenographer.md), answered by a second
# `linecap serve` over the same store, as shipped.
if command -v stenoread >/dev/null; then
    fail() { die "$*"; }  # for api_pki
    # shellcheck source=../../tests/api/api_lib.sh
    source "$SRC/tests/api/api_lib.sh"
    mkdir "$WORK/pki"
    api_pki "$WORK/pki"
    steno_port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    sed -e "s|^  listen: .*|  listen: \"127.0.0.1:$steno_port\"|" "$WORK/api.yaml" >"$WORK/api-tls.yaml"
    printf '  tls_cert: "%s"\n  tls_key: "%s"\n  tls_client_ca: "%s"\n' \
        "$WORK/pki/server.pem" "$WORK/pki/server.key" "$WORK/pki/ca.pem" >>"$WORK/api-tls.yaml"
    "$LINECAP" serve --config "$WORK/api-tls.yaml" 2>>"$WORK/serve-tls.log" &
    STENO_SERVE_PID=$!
    for _ in $(seq 200); do
        grep -q 'listening on https:' "$WORK/serve-tls.log" && break
        kill -0 "$STENO_SERVE_PID" 2>/dev/null || die "linecap serve (TLS) exited: $(cat "$WORK/serve-tls.log")"
        sleep 0.1
    done
    grep -q 'listening on https:' "$WORK/serve-tls.log" || die "TIMEOUT: linecap serve (TLS) did not listen within 20 s"
    mkdir -m 750 "$WORK/steno-certs"
    cp "$WORK/pki/client.pem" "$WORK/steno-certs/client_cert.pem"
    install -m 600 "$WORK/pki/client.key" "$WORK/steno-certs/client_key.pem"
    cp "$WORK/pki/ca.pem" "$WORK/steno-certs/ca_cert.pem"
    printf '{"Host": "127.0.0.1", "Port": %s, "CertPath": "%s"}\n' "$steno_port" "$WORK/steno-certs" >"$WORK/steno.conf"
fi

# --- 1: one conversation -------------------------------------------------------------------------
# shellcheck disable=SC2034  # the *_cmd arrays are read through the nameref `cmd`
if [[ ,$PARTS, == *,conversation,* ]]; then
    enc=$("$PY" -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$CONV_FILTER")
    api_cmd=(curl -sS --fail -H @"$WORK/auth.header" --max-time "$STEP_LIMIT" "$URL/api/v1/packets?filter=$enc")
    api_normal_cmd=("${api_cmd[@]}")
    extract_cmd=("$LINECAP" extract --dir "$DIR" --filter "$CONV_FILTER" -o -)
    extract_idle_cmd=(chrt --idle 0 ionice -c3 "${extract_cmd[@]}")
    # -Z root: tcpdump opens the second and later files of -V after dropping privileges.
    tcpdump_cmd=(tcpdump -q -Z root -V "$WORK/files.txt" -w - "$CONV_FILTER")
    # The conversation in Stenographer's language ("tcp port P" is "port P and tcp"); its
    # tcpdump writes the answer to stdout.
    steno_cmd=(env STENOGRAPHER_CONFIG="$WORK/steno.conf" stenoread "${CONV_FILTER/tcp port/port} and tcp" -w -)
    declare -A label=(
        [api]="API as shipped (curl; serve at idle CPU + I/O)"
        [api_normal]="API, serve's threads at normal priority"
        [extract]="linecap extract -o - (normal)"
        [extract_idle]="linecap extract under chrt --idle 0 ionice -c3"
        [tcpdump]="tcpdump -V FILES -w - (normal)"
        [steno]="stenoread (Debian's; POST /query over TLS, serve as shipped)"
    )
    QUICK="api api_normal extract extract_idle"
    [[ -z $STENO_SERVE_PID ]] || QUICK+=" steno"
    PATHS=$QUICK
    [[ $TCPDUMP_RUNS == no ]] || PATHS+=" tcpdump"
    # time_path NAME: one cold and (unless tcpdump) one warm run; appends "cold_ttfb cold_total
    # warm_ttfb warm_total" to $WORK/NAME.times.
    time_path() {
        local name=$1 c w
        declare -n cmd="${name}_cmd"
        [[ $name != api_normal ]] || serve_priority normal
        drop_caches
        limited "$STEP_LIMIT" "$name (cold)" "$PY" "$SRC/bench/api/ttfb.py" "$WORK/$name.pcap" "${cmd[@]}" >"$WORK/t"
        c=$(cut -d' ' -f1-2 "$WORK/t")
        w="- -"  # tcpdump reads all of the store each time: warm only when asked (minutes)
        if [[ $name != tcpdump || $TCPDUMP_RUNS == both ]]; then
            limited "$STEP_LIMIT" "$name (warm)" "$PY" "$SRC/bench/api/ttfb.py" "$WORK/$name.pcap" "${cmd[@]}" >"$WORK/t"
            w=$(cut -d' ' -f1-2 "$WORK/t")
        fi
        [[ $name != api_normal ]] || serve_priority idle
        echo "$c $w" >>"$WORK/$name.times"
        count "$WORK/$name.pcap" >"$WORK/$name.count"
        [[ $(<"$WORK/$name.count") == "$CONV_PACKETS" ]] \
            || die "$name: $(<"$WORK/$name.count") packets, the conversation has $CONV_PACKETS"
    }
    # column FILE N: the median of column N ("-" stays "-"), and for several runs its range.
    column() {
        sort -g -k"$2,$2" "$1" | awk -v k="$2" '{ v[NR] = $k } END {
            if (v[1] == "-") { print "-"; exit }
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            if (NR == 1) printf "%.2f\n", m; else printf "%.2f (%.2f-%.2f)\n", m, v[1], v[NR] }'
    }
    # Rounds of the quick paths interleaved (A B C D A B C D ...), so that the machine's
    # changing load falls on all of them alike; tcpdump (minutes) once, last.
    for ((rep = 1; rep <= CONV_REPS; rep++)); do
        for name in $QUICK; do time_path "$name"; done
    done
    [[ $TCPDUMP_RUNS == no ]] || time_path tcpdump
    say ""
    say "## one conversation from the ${GB} GB store: seconds to the first byte / to the end"
    if ((DROP_CACHES)); then
        say "cold = sync + drop_caches right before the run, for every path; warm = the run right after it;"
    else
        say "NOT COLD (BENCH_DROP_CACHES=0: the page cache was not dropped); warm = the run right after it;"
    fi
    say "median of $CONV_REPS interleaved runs (range) for every path but tcpdump (once); load average $(load)"
    say "| path | cold ttfb | cold total | warm ttfb | warm total | packets |"
    say "| --- | --- | --- | --- | --- | --- |"
    for name in $PATHS; do
        say "| ${label[$name]} | $(column "$WORK/$name.times" 1) | $(column "$WORK/$name.times" 2) | $(column "$WORK/$name.times" 3) | $(column "$WORK/$name.times" 4) | $(<"$WORK/$name.count") |"
    done
    cmp -s "$WORK/api.pcap" "$WORK/extract.pcap" || die "the API's answer differs from linecap extract's"
    cmp -s "$WORK/api_normal.pcap" "$WORK/extract.pcap" || die "the API's answer (normal priority) differs from linecap extract's"
    say "every answer holds the conversation's $CONV_PACKETS packets; the API's is byte-identical to linecap extract's"
    if [[ -n $STENO_SERVE_PID ]]; then
        ratio() { awk -v a="$(column "$WORK/$1.times" "$3" | cut -d' ' -f1)" -v b="$(column "$WORK/$2.times" "$3" | cut -d' ' -f1)" \
            'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
        say "stenoread ÷ linecap extract, total: cold $(ratio steno extract 2), warm $(ratio steno extract 4)"
    else
        say "stenoread: not installed (stenographer-client), not measured"
    fi
    # What the query reads: the API and the CLI call the same extract(), with the same plan.
    limited "$STEP_LIMIT" "linecap extract -v" "$LINECAP" extract -v --dir "$DIR" --filter "$CONV_FILTER" -o - \
        2>"$WORK/plan.txt" >/dev/null
    say "what the query reads (linecap extract -v; the API's extract() makes the same plan): $(sed -n 's/^linecap: \([0-9]* packets written.*\)/\1/p' "$WORK/plan.txt")"
    say "indexes: $(find "$DIR" -maxdepth 1 -name '*.idx' | wc -l) files, $(find "$DIR" -maxdepth 1 -name '*.idx' -printf '%s\n' | awk '{ s += $1 } END { printf "%.1f", s / 1048576 }') MiB"
    say "(extract and the API write through a 1 MiB buffer, tcpdump -w - through stdio's: the first byte of"
    say " a small answer comes at its end on every path)"
fi

# --- 2: capture rate with and without four streaming queries ------------------------------------
if [[ ,$PARTS, == *,capture,* ]]; then
    say ""
    say "## capture rate with and without 4 streaming API queries (same run, windows alternating without/with)"
    say "linecapd: net_af_xdp on a veth, documented live settings, files into tmpfs; offered: tcpreplay $PPS pkt/s of"
    say "512-byte frames; each query: GET /api/v1/packets (the whole ${GB} GB store), read by a client (normal priority),"
    say "asked again when it ends; serve as shipped (idle CPU + I/O); ${ROUNDS} rounds of ${WINDOW_S} s windows"
    CAPDIR=$(mktemp -d /dev/shm/lc-api-bench-cap.XXXXXX)
    mkdir -p "$CAPDIR/work"
    rc=0
    limited $((ROUNDS * 2 * (${WINDOW_S%.*} + 120) + 240)) "the capture-rate part" \
        "$PY" "$SRC/bench/api/capture_rate.py" --api "$URL" --token-file "$WORK/tokens" --out-dir "$CAPDIR" \
        --workdir "$CAPDIR/work" --rounds "$ROUNDS" --window "$WINDOW_S" --pps "$PPS" \
        --json "$RESULTS/api-capture.json" | tee -a "$OUT" || rc=$?
    grep -E "summary|reached the port|dropped" "$CAPDIR/work/linecapd.log" 2>/dev/null | tail -3 | sed 's/^/linecapd: /' | tee -a "$OUT"
    ((rc == 0)) || die "the capture-rate part failed (exit $rc)"
fi

# --- 3: one audit record --------------------------------------------------------------------------
say ""
say "## one audit record"
record=$(grep '"request":"/api/v1/packets' "$WORK/audit.log" | grep -m1 '"outcome":"complete"' || true)
[[ -n $record ]] || record=$(grep -m1 '"request":"/api/v1/packets' "$WORK/audit.log" || true)
[[ -n $record ]] || die "no /api/v1/packets record in the audit log"
say "$record"
[[ $record == *'"who":"token:'"$TOKEN_NAME"'"'* ]] || die "the audit record does not name the client (token:$TOKEN_NAME)"
say ""
say "load average at the end: $(load)"
if [[ -n $EVIDENCE ]]; then
    printf '%s\n' "$record" >"$EVIDENCE/audit-record.json"
    cp "$OUT" "$EVIDENCE/api-bench.txt"
fi
