#!/usr/bin/env bash
# Rotation exact to the packet: with live traffic at 10 kpps and
# rotate.interval_s: 1, every finished file holds only packets of its one 1-s window —
# none stamped at or after the boundary (the worker used to notice the boundary at its
# millisecond housekeeping, so up to ~10 packets per boundary landed in the file before).
# Several boundaries pass under load, and every packet sent is in some file.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/storage/storage_lib.sh"
need_root
need_cmd tcpreplay
need_hugepages 256
make_tmpdir
veth_pair exact
out="$TEST_TMPDIR/out"
mkdir "$out"
gen_pcap --count 50000 --size 100 --seed 82 --out "$TEST_TMPDIR/steady.pcap"
storage_config "$TEST_TMPDIR/linecap.yaml" "$(af_packet_device 1)" 1 "$out" output.block_size_kb=64 \
    output.flush_interval_ms=10 output.rotate.size_mb=0 output.rotate.interval_s=1

start_linecapd "$TEST_TMPDIR/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 60
sent=$(replay_into_ns "$TEST_TMPDIR/steady.pcap" 10000)   # 5 s: 4 or 5 boundaries
((sent == 50000)) || fail "tcpreplay sent $sent of 50000"
wait_for_linecapd "(( \$(metric_sum http://$METRICS_LISTEN/metrics linecap_rx_packets_total) >= $sent ))" 20 \
    || fail "the daemon did not receive every packet"
# The last window's file is finished at its boundary, traffic or not; stopped before it,
# that file would end early (finished by the stop, not by the interval) and fail the
# check below. So the stop waits for that boundary: every packet in a finished file.
wait_for_linecapd "(( \$(pcap_compare count --quiet '$out') == $sent ))" 20
stop_linecapd || fail "linecapd exited $LINECAPD_RC"
files=$(count_finished "$out")
((files >= 4)) || fail "$files files for 5 s of traffic at interval_s 1"
# Finished within 3 s of the boundary: generous for a loaded machine; exactness is the
# "packets span two intervals" check.
storage_check interval "$out" 1 3 >"$TEST_TMPDIR/interval.out" || fail "$(cat "$TEST_TMPDIR/interval.out")"
got=$(pcap_compare count --quiet "$out")
((got == sent)) || fail "$got packets in the files, $sent sent"
log "OK: $files files, every packet inside its file's 1-s window, $got of $sent packets"
