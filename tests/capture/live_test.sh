#!/usr/bin/env bash
# Live traffic: tcpreplay from a network namespace into a veth pair, captured through a
# DPDK vdev on the root-namespace end. At a modest fixed rate nothing may be lost: every
# packet sent is in the files, nothing else is, and the daemon's accounting agrees. Another
# interface carries traffic while the daemon starts (DPDK 22.11's net_af_packet sockets take
# every interface's packets until they are bound): none of it may reach the port.
#   live_test.sh af_xdp     net_af_xdp (XDP socket, one queue)
#   live_test.sh af_packet  net_af_packet with qpairs=2 (kernel fanout as RSS stand-in)
source "${LINECAP_SRC:?}/tests/lib/common.sh"
mode=${1:?usage: live_test.sh af_xdp|af_packet}
need_root
need_cmd tcpreplay capinfos
need_hugepages 256
make_tmpdir
veth_pair "live-$mode-other"
other_if=$CAP_IF
veth_pair "live-$mode"

case $mode in
    af_xdp)
        need_bpffs
        device="net_af_xdp0,iface=$CAP_IF,start_queue=0,queue_count=1"
        queues=1
        ;;
    af_packet)
        # A large kernel ring per queue (blocksz × framecnt) absorbs scheduling hiccups of
        # this 2-core machine; the rate below is far under what the path sustains.
        device="net_af_packet0,iface=$CAP_IF,qpairs=2,blocksz=4096,framesz=2048,framecnt=16384"
        queues=2
        ;;
    *) fail "unknown mode $mode" ;;
esac

packets=4000
rate=${LINECAP_LIVE_PPS:-20000}
gen_pcap --count "$packets" --mix --seed 21 --flows 400 --both-directions --out "$TEST_TMPDIR/sent.pcap"
mkdir "$TEST_TMPDIR/out"
cat >"$TEST_TMPDIR/linecap.yaml" <<YAML
eal:
  lcores: "0-1"
ports:
  - name: live
    device: "$device"
    rx_queues: $queues
    rx_descriptors: 2048
output:
  directory: "$TEST_TMPDIR/out"
  blocks_per_queue: 16
  block_size_kb: 256
  rotate: { size_mb: 64, interval_s: 0 }
metrics:
  enabled: false
YAML

# The other interface's traffic leaves its root-namespace end, where a socket bound to no
# interface sees it; it runs until the daemon polls.
gen_pcap --count 1000 --size 200 --seed 22 --out "$TEST_TMPDIR/other.pcap"
tcpreplay -q -i "$other_if" --pps=20000 --loop=0 "$TEST_TMPDIR/other.pcap" >"$TEST_TMPDIR/other.log" 2>&1 &
other_pid=$!
on_exit "kill $other_pid 2>/dev/null || true"
start_linecapd "$TEST_TMPDIR/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 30 || fail "daemon did not start polling"
kill "$other_pid"
wait "$other_pid" 2>/dev/null || true  # ended by the signal
(($(cat "/sys/class/net/$other_if/statistics/tx_packets") > 0)) || fail "the other interface carried nothing"

sent=$(replay_into_ns "$TEST_TMPDIR/sent.pcap" "$rate")
((sent == packets)) || fail "tcpreplay sent $sent of $packets packets"

# Everything sent is on the wire now; the capture is complete once the files hold every
# record: the in-progress files grow by whole blocks at least every flush interval.
expected_bytes=$(($(stat -c %s "$TEST_TMPDIR/sent.pcap") - 24))
captured_bytes() {
    local total=0 f
    for f in "$TEST_TMPDIR"/out/.*.part "$TEST_TMPDIR"/out/*.pcap; do
        [[ -f $f ]] && total=$((total + $(stat -c %s "$f") - 24))
    done
    echo "$total"
}
wait_for_linecapd "(( \$(captured_bytes) >= expected_bytes ))" 30 \
    || log "files hold $(captured_bytes) of $expected_bytes record bytes"
stop_linecapd || fail "linecapd exited $LINECAPD_RC"

pcap_compare multiset "$TEST_TMPDIR/sent.pcap" "$TEST_TMPDIR/out" >"$TEST_TMPDIR/files.cmp" \
    || fail "the files do not hold exactly the packets sent: $(head -n 4 "$TEST_TMPDIR/files.cmp")"
for f in "$TEST_TMPDIR"/out/*.pcap; do capinfos "$f" >/dev/null || fail "capinfos cannot read $f"; done
summary=$(grep 'reached the port' "$LINECAPD_LOG")
[[ $summary == *": $packets packets reached the port,"* ]] || fail "not $packets packets reached the port: $summary"
[[ $summary == *"nic_missed=0 nic_error=0 no_mbuf=0 xsk_fill_empty=0 xsk_ring_full=0 writer_full=0 write_error=0 disk_full=0"* ]] \
    || fail "drops at a modest rate: $summary"
log "OK: $sent packets at $rate pps through $mode, all in the files; $summary"
