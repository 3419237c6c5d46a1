#!/usr/bin/env bash
# capture.flow_cap and capture.dedup end to end: net_pcap replays a generated pcap (many
# flows, both directions, IPv4/IPv6/VLAN/ARP/ICMP) on one rx queue, and the files must be
# exactly what an offline reference computes from the input (tests/tools/policy_reference.py,
# its own pcap reader and flow parse):
#   1. flow cap by bytes, cut to snaplen_after, only for the cap's filter ("tcp"): record by
#      record the expected caplen, length and bytes; per flow the bytes kept and packets
#      cut; the summary, manifest and metrics count the cut packets.
#   2. flow cap by packets, then not written: the same checks, and the packets the cap kept
#      out are counted as such (not as drops, not as filtered).
#   3. dedup: the input with a copy of every 7th packet, right after it (compared in the
#      same burst) or, every other one, 100 packets later (compared with the original's
#      record in the write block); every other copy with another TTL and IPv4 header
#      checksum, or IPv6 hop limit. The files equal the input without the copies, in order,
#      and exactly the injected number is counted. In the smallest write blocks (64 KiB),
#      so that many bursts fill a block (the worker's packet-by-packet path) and many
#      originals are in blocks already handed to the writer.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_hugepages 256
make_tmpdir
REF="$LINECAP_SRC/tests/tools/policy_reference.py"

gen_pcap --count 3000 --mix --both-directions --flows 40 --seed 21 --out "$TEST_TMPDIR/in.pcap"
total=3000

# run NAME EXTRA_CAPTURE_YAML INPUT PACKETS [BLOCK_KB]: one daemon run over INPUT, until
# its one worker received PACKETS packets; the files end in $TEST_TMPDIR/NAME, the log in
# $TEST_TMPDIR/NAME.log.
run() {
    local name=$1 capture=$2 input=$3 packets=$4 block_kb=${5:-256}
    mkdir "$TEST_TMPDIR/$name"
    METRICS_LISTEN=127.0.0.1:$(free_tcp_port)
    cat >"$TEST_TMPDIR/$name.yaml" <<YAML
eal:
  lcores: "0-1"
ports:
  - name: p0
    device: "net_pcap0,rx_pcap=$input"
    rx_descriptors: 1024
capture:
$capture
output:
  directory: "$TEST_TMPDIR/$name"
  format: pcapng
  blocks_per_queue: 64
  block_size_kb: $block_kb
  rotate: { size_mb: 1, interval_s: 0 }
  # Not under test here; their idle-priority threads would only slow the stop on a
  # loaded machine.
  index: false
  scrub: { enabled: false }
metrics:
  enabled: true
  listen: "$METRICS_LISTEN"
YAML
    start_linecapd "$TEST_TMPDIR/$name.yaml"
    wait_for_linecapd "(( \$(metric_sum http://$METRICS_LISTEN/metrics linecap_rx_packets_total) >= $packets ))" 60 \
        || fail "$name: the worker did not receive $packets packets"
    stop_linecapd || fail "$name: linecapd exited $LINECAPD_RC"
    cp "$LINECAPD_LOG" "$TEST_TMPDIR/$name.log"
    mergecap -a -F nsecpcap -w "$TEST_TMPDIR/$name.out.pcap" "$TEST_TMPDIR/$name"/*.pcapng
}

summary_of() { grep 'packets reached the port' "$TEST_TMPDIR/$1.log" | tail -1; }

# manifest_total NAME EXPR: the sum over the run's manifests of a jq-like python expression
# on each manifest `m`.
manifest_total() {
    python3 - "$TEST_TMPDIR/$1" "$2" <<'PY'
import glob, json, sys
total = 0
for path in glob.glob(sys.argv[1] + "/*.manifest"):
    m = json.load(open(path))
    total += eval(sys.argv[2], {"m": m})
print(total)
PY
}

check_flowcap() {
    local name=$1
    shift
    python3 "$REF" flowcap "$TEST_TMPDIR/in.pcap" "$TEST_TMPDIR/$name.expected.pcap" "$@" >"$TEST_TMPDIR/$name.expected.json"
    python3 "$REF" stats "$TEST_TMPDIR/$name.out.pcap" >"$TEST_TMPDIR/$name.got.json"
    pcap_compare headers "$TEST_TMPDIR/$name.expected.pcap" "$TEST_TMPDIR/$name.out.pcap" \
        || fail "$name: the files differ from the reference record by record"
    python3 - "$TEST_TMPDIR/$name.expected.json" "$TEST_TMPDIR/$name.got.json" <<'PY' || fail "$name: per-flow counts differ"
import json, sys
want, got = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
bad = [k for k in sorted(set(want["flows"]) | set(got["flows"])) if want["flows"].get(k) != got["flows"].get(k)]
for k in bad[:10]:
    print(f"flow {k}: expected [kept bytes, cut] {want['flows'].get(k)}, got {got['flows'].get(k)}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    jq_cut=$(json_field "$TEST_TMPDIR/$name.expected.json" cut)
    jq_dropped=$(json_field "$TEST_TMPDIR/$name.expected.json" dropped)
    flows=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["flows"]))' "$TEST_TMPDIR/$name.expected.json")
    ((jq_cut + jq_dropped > 0)) || fail "$name: the reference caps nothing; the test would prove nothing"
    local written=$((total - jq_dropped))
    summary_of "$name" | grep -q "$total packets reached the port, $written written, 0 filtered, dropped: .* writer_full=0 " \
        || fail "$name: summary: $(summary_of "$name")"
    if ((jq_dropped > 0)); then
        summary_of "$name" | grep -q "also not written by policy: flow_cap=$jq_dropped dedup=0" \
            || fail "$name: summary does not count $jq_dropped capped packets: $(summary_of "$name")"
    fi
    [[ $(manifest_total "$name" 'm["flow_cap"]["cut"]') == "$jq_cut" ]] || fail "$name: manifests' flow_cap.cut != $jq_cut"
    [[ $(manifest_total "$name" 'm["flow_cap"]["dropped"]') == "$jq_dropped" ]] || fail "$name: manifests' flow_cap.dropped != $jq_dropped"
    [[ $(manifest_total "$name" 'm["received"] - m["packets"] - m["drops"] - m["filtered"] - m["flow_cap"]["dropped"]') == 0 ]] \
        || fail "$name: a manifest's received is not packets + drops + filtered + flow_cap.dropped"
    log "$name: $flows flows, $jq_cut cut, $jq_dropped not written, as the reference says"
}

need_cmd mergecap
# 1. By bytes, cut, TCP only.
run bytes '  flow_cap:
    enabled: true
    filter: "tcp"
    bytes: 6000
    snaplen_after: 64' "$TEST_TMPDIR/in.pcap" "$total"
check_flowcap bytes --bytes 6000 --snaplen-after 64 --proto 6
grep -q "flow cap on (6000 bytes per flow, then 64 bytes per packet, filter 'tcp')" \
    <(strings "$TEST_TMPDIR"/bytes/*.pcapng) || fail "bytes: the pcapng statistics do not say the cap was on"

# 2. By packets, then not written, every packet.
run packets '  flow_cap:
    enabled: true
    packets: 5
    snaplen_after: 0' "$TEST_TMPDIR/in.pcap" "$total"
check_flowcap packets --packets 5 --snaplen-after 0

# 3. Dedup. A 1 s window: the copies follow their originals at once, and a loaded machine
# must not make the test depend on the worker never pausing for a millisecond.
copies=$(python3 "$REF" dupes "$TEST_TMPDIR/in.pcap" "$TEST_TMPDIR/dupes.pcap" --every 7 --later 100 --seed 5)
run dedup '  dedup:
    enabled: true
    window_us: 1000000' "$TEST_TMPDIR/dupes.pcap" $((total + copies)) 64
pcap_compare same-order "$TEST_TMPDIR/in.pcap" "$TEST_TMPDIR/dedup.out.pcap" \
    || fail "dedup: the files are not the input without its injected copies"
summary_of dedup | grep -q "$((total + copies)) packets reached the port, $total written, 0 filtered, .*also not written by policy: flow_cap=0 dedup=$copies\$" \
    || fail "dedup: summary does not count exactly $copies copies: $(summary_of dedup)"
[[ $(manifest_total dedup 'm["dedup"]["suppressed"]') == "$copies" ]] || fail "dedup: manifests' dedup.suppressed != $copies"
log "OK: flow caps as the offline reference computes them; dedup removed exactly the $copies injected copies"
