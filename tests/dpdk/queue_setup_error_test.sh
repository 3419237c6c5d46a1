#!/usr/bin/env bash
# A device that rejects its rx queue setup gets an error a user can act on: net_pcap
# with infinite_rx copies its whole file into mbufs when the queue is set up; with a pool too
# small for that, linecapd must exit 78 naming the cause (infinite_rx, the pool's mbufs) and the
# key to change (capture.mbufs), not only "rte_eth_rx_queue_setup: Invalid argument (-22)".
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_linecapd
make_tmpdir

# 8192 packets in the file, a pool of 4095 mbufs (the smallest capture.mbufs takes is 1024).
gen_pcap --count 8192 --size 64 --out "$TEST_TMPDIR/src.pcap"
mkdir "$TEST_TMPDIR/out"
cat >"$TEST_TMPDIR/linecap.yaml" <<YAML
eal:
  lcores: "0-1"
  hugepages: false
ports:
  - name: p0
    device: "net_pcap0,rx_pcap=$TEST_TMPDIR/src.pcap,infinite_rx=1"
    rx_descriptors: 1024
capture:
  mbufs: 4095
output:
  directory: "$TEST_TMPDIR/out"
metrics:
  enabled: false
YAML
rc=0
"$LINECAPD" --config "$TEST_TMPDIR/linecap.yaml" >"$TEST_TMPDIR/log" 2>&1 || rc=$?
show_on_failure "$TEST_TMPDIR/log"
((rc == 78)) || fail "linecapd exited $rc, expected 78 (configuration error)"
line=$(grep 'rte_eth_rx_queue_setup' "$TEST_TMPDIR/log" | tail -n 1)
[[ -n $line ]] || fail "no rte_eth_rx_queue_setup error in the log"
for want in "port p0" "rx queue 0" "infinite_rx" "4095 mbufs" "capture.mbufs is 4095" "set capture.mbufs to at least"; do
    [[ $line == *"$want"* ]] || fail "the error lacks '$want': $line"
done
log "error: $line"
