#!/usr/bin/env bash
# capture.timestamps end to end through net_pcap, which hands each packet the time of its
# record in the replayed file (DPDK 22.11: microseconds since the epoch in the mbuf's rx
# timestamp field; dpdk/rx_timestamp.hpp):
#   1. auto, pcap and pcapng output: two queues, one replaying a microsecond pcap whose
#      packets are 1.000123 s apart (so the capture crosses wall-clock rotation
#      boundaries of the file's time), one a nanosecond pcap 1237 ns apart (no two packets
#      of a burst share a stamp). Every written timestamp equals the input's, record by
#      record (the ns file's cut to the microseconds net_pcap delivers), and every file
#      of the 1 s rotation holds exactly the packets of its own second.
#   2. tsc: the same input gets the daemon's own time (between its start and stop), not
#      the file's.
#   3. port on a port without per-packet stamps (net_null) is refused at start, naming
#      the port and its driver.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_hugepages 256
need_cmd mergecap
make_tmpdir

start_ns=1700000000400000000  # 0.4 s past a second: the first file ends after 0.6 s
gen_pcap --count 5 --usec --start-ns "$start_ns" --interval-ns 1000123000 --seed 31 --out "$TEST_TMPDIR/us.pcap"
gen_pcap --count 3000 --mix --start-ns $((start_ns + 777)) --interval-ns 1237 --seed 32 --out "$TEST_TMPDIR/ns.pcap"
# What net_pcap delivers of the ns file: the same packets, stamps cut to microseconds.
gen_pcap --count 3000 --mix --usec --start-ns $((start_ns + 777)) --interval-ns 1237 --seed 32 --out "$TEST_TMPDIR/ns-as-us.pcap"
total=3005

# run NAME FORMAT TIMESTAMPS: one daemon run over both files until every packet arrived.
run() {
    local name=$1 format=$2 timestamps=$3
    mkdir "$TEST_TMPDIR/$name"
    write_config "$TEST_TMPDIR/$name.yaml" \
        "net_pcap0,rx_pcap=$TEST_TMPDIR/us.pcap,rx_pcap=$TEST_TMPDIR/ns.pcap" "$TEST_TMPDIR/$name" \
        port.rx_queues=2 capture.timestamps="$timestamps" output.format="$format" \
        output.rotate.size_mb=64 output.rotate.interval_s=1 output.index=false output.scrub.enabled=false
    RUN_START_NS=$(date +%s%N)
    start_linecapd "$TEST_TMPDIR/$name.yaml"
    wait_for_linecapd "(( \$(metric_sum http://$METRICS_LISTEN/metrics linecap_rx_packets_total) >= $total ))" 60 \
        || fail "$name: the workers did not receive $total packets"
    stop_linecapd || fail "$name: linecapd exited $LINECAPD_RC"
    RUN_STOP_NS=$(date +%s%N)
    cp "$LINECAPD_LOG" "$TEST_TMPDIR/$name.log"
    : >"$LINECAPD_LOG"
}

# queue_files NAME Q: the run's finished files of queue Q, in name (= time) order.
queue_files() { ls "$TEST_TMPDIR/$1"/*-p0-q"$2".pcap* | grep -v '\.manifest$\|\.idx$'; }

check_exact() {
    local name=$1
    grep -q "port p0: timestamps per packet from the replayed file" "$TEST_TMPDIR/$name.log" \
        || fail "$name: the log does not say the port's stamps are used: $(grep 'timestamps' "$TEST_TMPDIR/$name.log")"
    mergecap -a -F nsecpcap -w "$TEST_TMPDIR/$name.q0.pcap" $(queue_files "$name" 0)
    mergecap -a -F nsecpcap -w "$TEST_TMPDIR/$name.q1.pcap" $(queue_files "$name" 1)
    pcap_compare headers --ts "$TEST_TMPDIR/us.pcap" "$TEST_TMPDIR/$name.q0.pcap" \
        || fail "$name: queue 0 (µs input) timestamps differ from the input's"
    pcap_compare headers --ts "$TEST_TMPDIR/ns-as-us.pcap" "$TEST_TMPDIR/$name.q1.pcap" \
        || fail "$name: queue 1 (ns input) timestamps differ from the input's (cut to µs)"
    # Rotation on the packets' own time: five packets 1.000123 s apart from x.4 s fall into
    # five seconds, one file each, each file holding only its own second.
    local files f
    mapfile -t files < <(queue_files "$name" 0)
    ((${#files[@]} == 5)) || fail "$name: expected 5 files of queue 0 (one per second of file time), got ${#files[@]}"
    for f in "${files[@]}"; do
        local sec
        sec=$(pcap_compare list "$f" | sed -n 's/.* ts=\([0-9]*\)\..*/\1/p' | sort -u)
        [[ $(wc -l <<<"$sec") == 1 ]] || fail "$name: $f holds packets of more than one second: $sec"
    done
    # The ns queue (3.7 ms of file time from x.400000777 s) stays in one file.
    [[ $(queue_files "$name" 1 | wc -l) == 1 ]] || fail "$name: queue 1 was split: $(queue_files "$name" 1)"
    log "$name: every timestamp as in the input, files cut at the seconds of the file's time"
}

run auto-pcap pcap auto
check_exact auto-pcap
run auto-pcapng pcapng auto
check_exact auto-pcapng

run tsc pcap tsc
grep -q "port p0: timestamps TSC per burst (capture.timestamps: tsc)" "$TEST_TMPDIR/tsc.log" \
    || fail "tsc: the log does not say the TSC is used"
pcap_compare validate --monotonic --ts-within "$RUN_START_NS" "$RUN_STOP_NS" "$TEST_TMPDIR/tsc" \
    || fail "tsc: timestamps are not the daemon's own (between its start and stop)"
pcap_compare count --expect "$total" "$TEST_TMPDIR/tsc" >/dev/null || fail "tsc: not every packet written"

# 3. port where the port has no per-packet stamps: refused before capture starts.
write_config "$TEST_TMPDIR/null.yaml" "net_null0" "$TEST_TMPDIR/null" capture.timestamps=port
mkdir "$TEST_TMPDIR/null"
set +e
"$LINECAPD" --config "$TEST_TMPDIR/null.yaml" >"$TEST_TMPDIR/null.log" 2>&1
rc=$?
set -e
((rc == 78)) || fail "timestamps: port on net_null exited $rc, expected 78: $(tail -3 "$TEST_TMPDIR/null.log")"
grep -q "capture.timestamps: port: port p0: net_null has no per-packet rx timestamp" "$TEST_TMPDIR/null.log" \
    || fail "the refusal does not name the port and driver: $(tail -3 "$TEST_TMPDIR/null.log")"
log "OK: port stamps exact (pcap, pcapng), tsc stamps the daemon's, port refused on net_null"
