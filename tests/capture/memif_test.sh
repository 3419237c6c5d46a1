#!/usr/bin/env bash
# A DPDK process as the wire, as when linecap records a mirror of VPP or OVS-DPDK: testpmd
# in txonly mode is the memif server, linecapd the memif client. Every packet testpmd
# reports sent is in the files.
#
# net_memif (DPDK 22.11) hands the client 2 × ring-size zero-filled buffers of the full
# buffer size when it connects, before the server sends anything; they are captured like
# any packet (linecap records what the port delivers) and told apart here by their size.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_cmd dpdk-testpmd stdbuf tshark capinfos
need_hugepages 512
make_tmpdir

frame=64
sock="$TEST_TMPDIR/memif.sock"
mkfifo "$TEST_TMPDIR/testpmd.cmd"
stdbuf -oL -eL dpdk-testpmd -l 0-1 --in-memory --no-pci --file-prefix "lc-memif-$$" \
    --vdev "net_memif0,role=server,socket=$sock" -- \
    -i --forward-mode=txonly --txpkts=$frame --txonly-multi-flow \
    <"$TEST_TMPDIR/testpmd.cmd" >"$TEST_TMPDIR/testpmd.log" 2>&1 &
testpmd_pid=$!
exec 3>"$TEST_TMPDIR/testpmd.cmd"
# --in-memory still makes the (empty) runtime directory of the file prefix.
on_exit "kill $testpmd_pid 2>/dev/null || true; wait $testpmd_pid 2>/dev/null || true; rm -rf /var/run/dpdk/lc-memif-$$"
show_on_failure "$TEST_TMPDIR/testpmd.log"
wait_for "grep -q 'testpmd>' '$TEST_TMPDIR/testpmd.log'" 30 || fail "testpmd did not start"

mkdir "$TEST_TMPDIR/out"
write_config "$TEST_TMPDIR/linecap.yaml" "net_memif0,role=client,socket=$sock,rsize=8" "$TEST_TMPDIR/out" \
    port.name=memif metrics.enabled=false
start_linecapd "$TEST_TMPDIR/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 30 || fail "linecapd did not start polling"

out_bytes() {
    local total=0 f
    for f in "$TEST_TMPDIR"/out/.*.part "$TEST_TMPDIR"/out/*.pcap; do
        [[ -f $f ]] && total=$((total + $(stat -c %s "$f")))
    done
    echo "$total"
}
echo start >&3
wait_for_linecapd "(( \$(out_bytes) > 2000000 ))" 60 || fail "no traffic from testpmd reached the files"
echo stop >&3
echo "show port stats 0" >&3
wait_for "grep -q 'TX-errors' '$TEST_TMPDIR/testpmd.log'" 20 || fail "testpmd did not print its port stats"
sent=$(sed -n 's/.*TX-packets: *\([0-9]*\) *TX-errors.*/\1/p' "$TEST_TMPDIR/testpmd.log" | tail -n 1)
((sent > 0)) || fail "testpmd reports no packet sent"

# Once testpmd stopped, what it sent is in the memif ring or already captured.
count_frames() { tshark -r "$1" -T fields -e frame.len 2>/dev/null | awk -v n="$frame" '$1 == n' | wc -l; }
wait_for_linecapd "(( \$(out_bytes) >= 24 + sent * (16 + frame) ))" 30 || fail "capture short of $sent packets"
stop_linecapd || fail "linecapd exited $LINECAPD_RC"
echo quit >&3
exec 3>&-

written=0 other=0
for f in "$TEST_TMPDIR"/out/*.pcap; do
    n=$(count_frames "$f")
    total=$(capinfos -M -c "$f" | awk '/Number of packets/ {print $NF}')
    written=$((written + n))
    other=$((other + total - n))
done
log "testpmd sent $sent packets of $frame bytes; files hold $written of them (+$other connect-time buffers)"
((written == sent)) || fail "testpmd sent $sent packets, the files hold $written"
((other <= 2 * 256)) || fail "$other unexpected packets beyond the memif connect-time buffers"
grep -q "drop.*writer_full=0 write_error=0 disk_full=0" "$LINECAPD_LOG" || fail "linecapd dropped: $(grep 'reached the port' "$LINECAPD_LOG")"
