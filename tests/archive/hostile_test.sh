#!/usr/bin/env bash
# The object-store client against a hostile S3 endpoint (tests/archive/hostile_s3.py on
# loopback; no Ceph needed):
#  1. `linecap extract --archive` against each of its modes (endless listing, endless
#     entries, endless <Key>, a 64 MiB listing, truncated XML, a million-deep nesting,
#     billion laughs, a non-numeric and an overflowing <Size>, an endless 500, a trickle
#     below the low-speed bound): exit 1 (no abort, no signal) within its time bound, max
#     RSS under 512 MiB, ONE line on stderr naming the endpoint, no control character in
#     it, nothing written at -o;
#  2. `linecap serve --archive` at the endpoint: a query while the endpoint is hostile is
#     refused, and /api/v1/status and /metrics still answer;
#  3. linecapd's archiver (output.archive, net_pcap) at the endpoint answering the PUT of
#     linecap-store.json without end, then every request with an endless 500: the daemon
#     keeps capturing and exits 0, the errors are counted in
#     linecap_archive_upload_errors_total, every packet is accounted for, the local
#     files stay and none is marked archived.
TEST_NAME=archive-hostile
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_root
need_cmd python3 curl
need_linecapd
need_hugepages 256
[[ -x /usr/bin/time ]] || skip "/usr/bin/time (GNU time) is not installed"
LINECAP=${LINECAP:-$LINECAP_BUILD/src/linecap}
[[ -x $LINECAP ]] || skip "linecap binary not found at $LINECAP"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
make_tmpdir
T=$TEST_TMPDIR

printf '[default]\naws_access_key_id = hostile\naws_secret_access_key = hostile\n' >"$T/credentials"
chmod 600 "$T/credentials"
echo valid >"$T/mode"
python3 "$HERE/hostile_s3.py" --port-file "$T/port" --mode-file "$T/mode" --prefix hostile 2>"$T/hostile.log" &
HOSTILE_PID=$!
on_exit "kill $HOSTILE_PID 2>/dev/null; wait $HOSTILE_PID 2>/dev/null || true"
show_on_failure "$T/hostile.log"
wait_for "[[ -s '$T/port' ]] || ! kill -0 $HOSTILE_PID 2>/dev/null" 10 || fail "the hostile endpoint did not start"
kill -0 "$HOSTILE_PID" 2>/dev/null || fail "the hostile endpoint exited: $(cat "$T/hostile.log")"
ENDPOINT=http://127.0.0.1:$(cat "$T/port")
ACCESS=(--archive s3://linecap/hostile --endpoint "$ENDPOINT" --credentials "$T/credentials")
mode() { echo "$1" >"$T/mode"; }

# --- 1. extract against each mode ----------------------------------------------------------
cases=(
    "endless-listing|10|answer longer than 16 MiB"
    "endless-entries|10|answer lists more than 10000 entries"
    "endless-key|10|<Key> longer than 64 KiB"
    "huge-listing|10|answer longer than 16 MiB"
    "truncated|10|answer is not XML: "
    "deep|10|answer nests elements deeper than 16"
    "laughs|10|answer is not XML: limit on input amplification factor"
    "bad-size|10|is not a number of bytes: '12abc'"
    "overflow-size|10|is not a number of bytes: '99999999999999999999999'"
    "endless-error|10|HTTP 500 with an answer longer than 16 MiB"
    "slow|50|no answer from $ENDPOINT: Operation too slow"
)
for c in "${cases[@]}"; do
    IFS='|' read -r name limit want <<<"$c"
    mode "$name"
    rm -f "$T/out.pcap"
    rc=0
    start=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$T/rss" "$LINECAP" extract "${ACCESS[@]}" -o "$T/out.pcap" 2>"$T/stderr" || rc=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    rss_kib=$(tail -1 "$T/rss")
    ((rc == 1)) || fail "$name: exit $rc, expected 1: $(cat "$T/stderr")"
    ((ms < limit * 1000)) || fail "$name: took $ms ms, more than $limit s"
    ((rss_kib < 512 * 1024)) || fail "$name: max RSS $rss_kib KiB, not under 512 MiB"
    (($(wc -l <"$T/stderr") == 1)) || fail "$name: not one line on stderr: $(cat "$T/stderr")"
    grep -qF -- "$ENDPOINT" "$T/stderr" || fail "$name: the endpoint is not named: $(cat "$T/stderr")"
    grep -qF -- "$want" "$T/stderr" || fail "$name: expected '$want': $(cat "$T/stderr")"
    ! LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$T/stderr" || fail "$name: a control character on stderr"
    [[ ! -e $T/out.pcap ]] || fail "$name: $T/out.pcap written"
    log "$name: exit 1 in $ms ms, max RSS $((rss_kib / 1024)) MiB: $(cat "$T/stderr")"
done

# --- 2. serve --archive keeps answering ---------------------------------------------------
# shellcheck source=../api/api_lib.sh
source "$LINECAP_SRC/tests/api/api_lib.sh"
# serve lists the archive at start (valid), keeps a listing for listing_ttl (30 s), then
# lists again (hostile) for the next query; a failed listing is not kept.
mode valid
PORT=$(free_tcp_port)
api_config "$T/api.yaml" "$T/nowhere" "127.0.0.1:$PORT" "$T/audit.log" "unauthenticated: loopback"
start_serve "$T/api.yaml" "" "${ACCESS[@]}" --region us-east-1
query() { curl -s -o "$T/api.out" -w '%{http_code}' -m 20 "http://127.0.0.1:$PORT/api/v1/packets?filter=tcp"; }
for name in endless-listing endless-key endless-error; do
    mode "$name"
    wait_for "[[ \$(query) != 200 ]] || ! kill -0 $SERVE_PID" 60 \
        || fail "serve, $name: the query still answered 200 after the listing's time to live"
    code=$(query) || fail "serve, $name: no answer to the query (curl $?)"
    [[ $code != 200 ]] || fail "serve, $name: the query answered 200 over a hostile listing"
    kill -0 "$SERVE_PID" 2>/dev/null || fail "serve, $name: exited: $(cat "$SERVE_LOG")"
    curl -sf -m 5 -o /dev/null "http://127.0.0.1:$PORT/api/v1/status" || fail "serve, $name: /api/v1/status does not answer"
    curl -sf -m 5 -o /dev/null "http://127.0.0.1:$PORT/metrics" || fail "serve, $name: /metrics does not answer"
    log "serve, $name: the query refused ($code: $(head -c 200 "$T/api.out" | tr -d '\n')), status and metrics answer"
done
stop_serve

# --- 3. the archiver: capture goes on -----------------------------------------------------
M() { echo "http://$METRICS_LISTEN/metrics"; }
metric() { metric_sum "$(M)" "$@"; }
gen_pcap --count 2000 --mix --seed 7 --out "$T/small.pcap"
mkdir -p "$T/capture"
write_config "$T/daemon.yaml" "net_pcap0,rx_pcap=$T/small.pcap" "$T/capture" \
    output.scrub.enabled=false output.archive.url="s3://linecap/hostile" output.archive.endpoint="$ENDPOINT" \
    output.archive.region=us-east-1 output.archive.credentials_file="$T/credentials"
mode endless-put
start_linecapd "$T/daemon.yaml"
wait_for_linecapd "(( \$(metric linecap_rx_packets_total) >= 2000 ))" 60 || fail "archiver: not every packet arrived"
wait_for_linecapd "(( \$(metric linecap_archive_upload_errors_total cause=other) >= 1 ))" 60 \
    || fail "archiver, endless PUT answer: not counted: $(http_get "$(M)" | grep upload_errors)"
mode endless-error
wait_for_linecapd "(( \$(metric linecap_archive_upload_errors_total cause=server) >= 1 ))" 120 \
    || fail "archiver, endless 500: not counted: $(http_get "$(M)" | grep upload_errors)"
linecapd_running || fail "archiver: linecapd exited"
grep -qF "answer longer than 64 KiB where no body was expected" "$LINECAPD_LOG" \
    || fail "archiver: no clear log line for the endless PUT answer: $(grep 'archive:' "$LINECAPD_LOG" | head -3)"
rc=0
stop_linecapd || rc=$?
((rc == 0)) || fail "archiver: linecapd exited $rc"
python3 "$HERE/accounted.py" "$LINECAPD_LOG" 2000 || fail "archiver: the packets do not add up"
ls "$T/capture"/*.pcap >/dev/null 2>&1 || fail "archiver: no local capture file kept"
! ls "$T/capture"/*.archived 2>/dev/null || fail "archiver: a file is marked archived"
log "archiver: capture went on; errors counted: other=$(grep -c '(other); capture goes on' "$LINECAPD_LOG") log lines," \
    "server seen; every packet accounted for; local files kept"
log "ok"
