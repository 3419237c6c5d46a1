#!/usr/bin/env bash
# Deterministic replay through net_pcap, one input file per rx queue, two workers: the
# output files hold exactly the input packets, byte for byte and in order per queue, and
# capinfos/tshark read every file. Mix: many flows, 60..1514 and jumbo frames up to 9014,
# VLAN-tagged, IPv6, ARP, ICMP.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_cmd capinfos tshark
need_hugepages 256
make_tmpdir

gen_pcap --count 6000 --mix --seed 11 --flows 500 --out "$TEST_TMPDIR/q0.pcap"
gen_pcap --count 4000 --mix --jumbo --seed 12 --flows 300 --out "$TEST_TMPDIR/q1.pcap"
mkdir "$TEST_TMPDIR/out"

# Main lcore + two workers; on a 2-CPU machine the second worker shares CPU 1.
lcores="0-2"
(($(nproc) >= 3)) || lcores="0@0,1@1,2@1"
# 16 MiB of blocks per queue: more than either input file, so the burst that net_pcap
# delivers at memory speed never finds the writer without a free block.
write_config "$TEST_TMPDIR/linecap.yaml" "net_pcap0,rx_pcap=$TEST_TMPDIR/q0.pcap,rx_pcap=$TEST_TMPDIR/q1.pcap" \
    "$TEST_TMPDIR/out" eal.lcores="$lcores" port.name=replay port.rx_queues=2 port.rx_descriptors=1024 port.mtu=9000 \
    output.blocks_per_queue=64 output.block_size_kb=256 output.rotate.size_mb=2 output.rotate.interval_s=0 \
    metrics.enabled=false

start_linecapd "$TEST_TMPDIR/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 30 || fail "daemon did not start polling"
grep -q "worker lcore 1 .* polls replay:0" "$LINECAPD_LOG" && grep -q "worker lcore 2 .* polls replay:1" "$LINECAPD_LOG" \
    || fail "expected one queue per worker: $(grep 'polls' "$LINECAPD_LOG")"
# net_pcap delivers each file once; the capture is complete when the output (finished and
# in-progress files) holds as many bytes as the inputs: same 24-byte header per file and
# the same 16-byte record header + data per packet.
expected=$(($(stat -c %s "$TEST_TMPDIR/q0.pcap") + $(stat -c %s "$TEST_TMPDIR/q1.pcap")))
records_bytes() {
    local total=0 f
    for f in "$TEST_TMPDIR"/out/* "$TEST_TMPDIR"/out/.*.part; do
        [[ -f $f ]] || continue
        total=$((total + $(stat -c %s "$f") - 24))
    done
    echo "$total"
}
wait_for_linecapd "(( \$(records_bytes) >= expected - 48 ))" 60 || fail "capture incomplete: $(records_bytes) of $((expected - 48)) record bytes"
stop_linecapd || fail "linecapd exited $LINECAPD_RC"

shopt -s nullglob
parts=("$TEST_TMPDIR"/out/.*.part)
((${#parts[@]} == 0)) || fail "in-progress files left after SIGTERM: ${parts[*]}"
q0_files=("$TEST_TMPDIR"/out/*-replay-q0.pcap)
q1_files=("$TEST_TMPDIR"/out/*-replay-q1.pcap)
((${#q0_files[@]} >= 2)) || fail "expected size rotation to split queue 0 (2 MiB files), got ${#q0_files[@]} file(s)"

# Files sort by name in time order; concatenated they must equal the input exactly.
need_cmd mergecap
mergecap -a -F nsecpcap -w "$TEST_TMPDIR/out-q0.cat" "${q0_files[@]}"
mergecap -a -F nsecpcap -w "$TEST_TMPDIR/out-q1.cat" "${q1_files[@]}"
pcap_compare same-order "$TEST_TMPDIR/q0.pcap" "$TEST_TMPDIR/out-q0.cat" || fail "queue 0 output differs from its input"
pcap_compare same-order "$TEST_TMPDIR/q1.pcap" "$TEST_TMPDIR/out-q1.cat" || fail "queue 1 output differs from its input"

for f in "$TEST_TMPDIR"/out/*.pcap; do
    capinfos "$f" >/dev/null || fail "capinfos cannot read $f"
    tshark -r "$f" -q >/dev/null 2>"$TEST_TMPDIR/tshark.err" || fail "tshark cannot read $f: $(cat "$TEST_TMPDIR/tshark.err")"
done
grep -q "10000 packets reached the port, 10000 written, 0 filtered" "$LINECAPD_LOG" \
    || fail "summary line does not account for every packet: $(grep 'reached the port' "$LINECAPD_LOG")"
log "OK: ${#q0_files[@]} + ${#q1_files[@]} files, byte-exact per queue"
