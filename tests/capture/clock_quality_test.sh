#!/usr/bin/env bash
# The host clock's quality recorded with the evidence. The sync state comes from the test
# double (LINECAP_TEST_CLOCK_STATUS=FILE instead of adjtimex: control/clock_monitor.hpp),
# so the machine's clock is never touched:
#   1. unsynchronised (est. error 16 ms), net_pcap's stamps, pcapng: the metrics say so
#      (linecap_clock_synced 0 with the test double named, the error, the port's source),
#      every manifest's clock object says unsynchronised / port / replayed-file / the
#      error / the test double, and every pcapng file names its source (IDB comment) and
#      the clock's state (ISB comment); linecap stats shows it; linecap extract
#      --require-synced refuses the files, naming one.
#   2. synchronised, capture.timestamps: tsc: manifests say synced and tsc, and extract
#      --require-synced writes every packet.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_hugepages 256
make_tmpdir
LINECAP=${LINECAP:-$LINECAP_BUILD/src/linecap}

gen_pcap --count 2000 --mix --seed 41 --out "$TEST_TMPDIR/in.pcap"
total=2000

# run NAME STATUS_TEXT TIMESTAMPS: one daemon run over in.pcap with the clock status file
# holding STATUS_TEXT; the metrics scrape taken once every packet arrived is NAME.metrics.
run() {
    local name=$1 status=$2 timestamps=$3
    mkdir "$TEST_TMPDIR/$name"
    printf '%s\n' "$status" >"$TEST_TMPDIR/$name.clock"
    write_config "$TEST_TMPDIR/$name.yaml" "net_pcap0,rx_pcap=$TEST_TMPDIR/in.pcap" "$TEST_TMPDIR/$name" \
        capture.timestamps="$timestamps" output.format=pcapng output.index=false output.scrub.enabled=false
    LINECAP_TEST_CLOCK_STATUS="$TEST_TMPDIR/$name.clock" start_linecapd "$TEST_TMPDIR/$name.yaml"
    wait_for_linecapd "(( \$(metric_sum http://$METRICS_LISTEN/metrics linecap_rx_packets_total) >= $total ))" 60 \
        || fail "$name: the worker did not receive $total packets"
    http_get "http://$METRICS_LISTEN/metrics" >"$TEST_TMPDIR/$name.metrics"
    stop_linecapd || fail "$name: linecapd exited $LINECAPD_RC"
    cp "$LINECAPD_LOG" "$TEST_TMPDIR/$name.log"
    : >"$LINECAPD_LOG"
}

# manifests_say NAME KEY VALUE: every manifest of the run has clock[KEY] == VALUE.
manifests_say() {
    python3 - "$TEST_TMPDIR/$1" "$2" "$3" <<'PY'
import glob, json, sys
d, key, want = sys.argv[1:]
paths = sorted(glob.glob(d + "/*.manifest"))
if not paths:
    sys.exit(f"no manifests in {d}")
for p in paths:
    got = json.load(open(p)).get("clock", {}).get(key)
    if str(got) != want:
        sys.exit(f"{p}: clock.{key} is {got!r}, expected {want!r}")
PY
}

# 1. Unsynchronised.
run unsynced "sync unsynchronised
est_error_ns 16000000
max_error_ns 16000000" auto
grep -q "LINECAP_TEST_CLOCK_STATUS: the host clock's sync state is read from the test file" "$TEST_TMPDIR/unsynced.log" \
    || fail "the daemon does not warn that the test double is in use"
double="test-file:$TEST_TMPDIR/unsynced.clock"
grep -qF "linecap_clock_synced{state=\"unsynchronised\",status_source=\"$double\"} 0" "$TEST_TMPDIR/unsynced.metrics" \
    || fail "metrics: $(grep clock_synced "$TEST_TMPDIR/unsynced.metrics")"
grep -q '^linecap_clock_estimated_error_seconds 0.016$' "$TEST_TMPDIR/unsynced.metrics" \
    || fail "metrics: $(grep clock_estimated "$TEST_TMPDIR/unsynced.metrics")"
grep -qF 'linecap_clock_source{port="p0",source="port",port_clock="replayed-file"} 1' "$TEST_TMPDIR/unsynced.metrics" \
    || fail "metrics: $(grep clock_source "$TEST_TMPDIR/unsynced.metrics")"
manifests_say unsynced sync unsynchronised || fail "unsynced: a manifest does not say unsynchronised"
manifests_say unsynced source port || fail "unsynced: a manifest does not say source port"
manifests_say unsynced port_clock replayed-file || fail "unsynced: a manifest does not say replayed-file"
manifests_say unsynced est_error_ns 16000000 || fail "unsynced: a manifest does not carry the estimated error"
manifests_say unsynced status_source "$double" || fail "unsynced: a manifest does not name the test double"
for f in "$TEST_TMPDIR"/unsynced/*.pcapng; do
    text=$(strings "$f")
    grep -q "linecap timestamps: port (replayed-file), UTC" <<<"$text" || fail "$f: no timestamp source in its IDB"
    grep -q "clock: timestamps port (replayed-file), host clock unsynchronised est_error_ns=16000000" <<<"$text" \
        || fail "$f: no clock state in its ISB: $(grep 'clock:' <<<"$text")"
done
"$LINECAP" stats --dir "$TEST_TMPDIR/unsynced" >"$TEST_TMPDIR/unsynced.stats" || fail "linecap stats failed"
grep -q "clock .*unsynchronised" "$TEST_TMPDIR/unsynced.stats" || fail "linecap stats does not show the clock: $(cat "$TEST_TMPDIR/unsynced.stats")"
set +e
"$LINECAP" extract --dir "$TEST_TMPDIR/unsynced" --require-synced -o "$TEST_TMPDIR/refused.pcap" 2>"$TEST_TMPDIR/refused.err"
rc=$?
set -e
((rc != 0)) || fail "extract --require-synced wrote files whose clock was unsynchronised"
grep -q "require-synced: .*unsynchronised" "$TEST_TMPDIR/refused.err" || fail "the refusal does not say why: $(cat "$TEST_TMPDIR/refused.err")"
log "unsynchronised: metrics, manifests, pcapng, stats say so; extract --require-synced refuses"

# 2. Synchronised, TSC stamps.
run synced "sync synced
est_error_ns 250000
max_error_ns 1500000" tsc
grep -qF "linecap_clock_synced{state=\"synced\",status_source=\"test-file:$TEST_TMPDIR/synced.clock\"} 1" "$TEST_TMPDIR/synced.metrics" \
    || fail "metrics: $(grep clock_synced "$TEST_TMPDIR/synced.metrics")"
manifests_say synced sync synced || fail "synced: a manifest does not say synced"
manifests_say synced source tsc || fail "synced: a manifest does not say source tsc"
manifests_say synced max_error_ns 1500000 || fail "synced: a manifest does not carry the maximum error"
"$LINECAP" extract --dir "$TEST_TMPDIR/synced" --require-synced -o "$TEST_TMPDIR/allowed.pcap" \
    || fail "extract --require-synced refused synchronised files"
pcap_compare count --expect "$total" "$TEST_TMPDIR/allowed.pcap" >/dev/null || fail "extract --require-synced lost packets"
log "OK: the clock's state recorded with every file, in the metrics, and enforced by extract --require-synced"
