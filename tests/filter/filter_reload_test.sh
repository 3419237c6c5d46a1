#!/usr/bin/env bash
# SIGHUP reloads the capture filter and snap length without stopping the port and without
# losing packets. Live traffic: tcpreplay in a network namespace into a veth pair,
# captured with net_af_packet (one queue, so the order is the wire order).
#
#   phase 1  filter A, whole packets; send X       files == tcpdump -r X 'A'
#   HUP      filter B, snaplen 128 ("filter now" logged, files rotate)
#   phase 2  send Y                                files == editcap -s 128 (tcpdump -r Y 'B')
#                                                  and == a live `tcpdump -i veth -s 128 'B'`
#                                                  (untagged frames: see below)
#   HUP      invalid filter: "reload rejected", libpcap's message, the old filter stays
#   phase 3  send Z                                still filtered by B at 128 bytes
#   phase 4  send W at 500 pps and HUP to filter C, whole packets, while it flows:
#            output of Z+W == [B-kept packets before some k, cut at 128] ++ [C-kept from k
#            on, whole], for one switch point k inside W: filter and snap length change
#            together between two bursts, no packet lost or written twice
#   SIGTERM  exit 0; summary: every packet sent reached the port, none dropped,
#            written + filtered = reached
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/filter/filter_lib.sh"
need_root
need_linecapd
need_cmd tcpdump editcap tcpreplay
need_hugepages 256
make_tmpdir
veth_pair filter-reload

in=$TEST_TMPDIR/in
out=$TEST_TMPDIR/out
mkdir -p "$in" "$out" "$TEST_TMPDIR"/phase{1,2}

FILTER_A="udp or arp"
FILTER_B="tcp[tcpflags] & (tcp-syn|tcp-rst) != 0 or vlan 100"
FILTER_BAD="tcp port"
FILTER_C="ip6 or icmp or (vlan and udp)"

# Over a veth into net_af_packet two kinds of frames do not arrive as sent, filter or not:
# IPv4 fragments (the PMD's PACKET_FANOUT_FLAG_DEFRAG makes the kernel reassemble them)
# and 802.1ad (0x88a8) outer tags (the kernel strips them, the PMD re-inserts 0x8100).
# Those are covered by the net_pcap tests; here they are left out.
craft_pcap --max-size 1514 --out "$in/craft-all.pcap"
tcpdump -r "$in/craft-all.pcap" -w "$in/craft.pcap" 'not (ip[6:2] & 0x3fff != 0) and not ether proto 0x88a8' 2>/dev/null
for p in "X 41 1200" "Y 42 1200" "Z 43 800" "W 44 3000"; do
    read -r name seed count <<<"$p"
    gen_pcap --count "$count" --mix --tcp-flags --both-directions --flows 300 --seed "$seed" \
        --out "$in/$name-mix.pcap"
    craft=("$in/craft.pcap")
    [[ $name != W ]] || craft=()
    cat_pcaps "$in/$name.pcap" "$in/$name-mix.pcap" "${craft[@]}"
done
# Z+W is one stream for phase 4 (every frame in it unique: the craft frames are in Z only).
cat_pcaps "$in/ZW.pcap" "$in/Z.pcap" "$in/W.pcap"

write_cfg() {  # FILTER SNAPLEN
    write_config "$TEST_TMPDIR/linecap.yaml" "net_af_packet0,iface=$CAP_IF,qpairs=1,blocksz=4096,framesz=2048,framecnt=8192" \
        "$out" port.name=r0 port.rx_queues=1 port.rx_descriptors=1024 port.filter="$1" port.snaplen="$2" \
        output.blocks_per_queue=8 output.block_size_kb=256 output.rotate.size_mb=1024 output.rotate.interval_s=0 \
        output.manifest=false
}

METRICS_LISTEN=127.0.0.1:$(free_tcp_port)
URL=http://$METRICS_LISTEN/metrics
write_cfg "$FILTER_A" 262144
start_linecapd "$TEST_TMPDIR/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG' && http_get $URL" 30
pid_at_start=$LINECAPD_PID

metric() { metric_sum "$URL" "$1"; }
# settled N: the port received at least N packets and every one of them is written or
# filtered (metrics are collected once a second).
settled() {
    local rx
    rx=$(metric linecap_rx_packets_total) || return 1
    ((rx >= $1)) && (($(metric linecap_written_packets_total) + $(metric linecap_filtered_packets_total) == rx))
}
# rotated: the files of the phase that just ended are finished (no in-progress file).
rotated() {
    shopt -s nullglob
    local parts=("$out"/.*.part) done=("$out"/*.pcap)
    shopt -u nullglob
    ((${#parts[@]} == 0 && ${#done[@]} >= 1))
}
counters() {
    echo "rx $(metric linecap_rx_packets_total), written $(metric linecap_written_packets_total)," \
        "filtered $(metric linecap_filtered_packets_total), dropped $(metric linecap_dropped_packets_total)"
}
settle() {  # PHASE: wait until everything sent so far is written or filtered
    linecapd_running || fail "linecapd is not running"
    wait_for "settled $total_sent" 30 || fail "$1: capture incomplete: $(counters); $total_sent sent"
}
send() {  # FILE: replay at a modest rate, check that all of it went out
    local n sent
    n=$(records "$1")
    sent=$(replay_into_ns "$1" 4000)
    ((sent == n)) || fail "tcpreplay sent $sent of $n packets of $1"
    total_sent=$((total_sent + n))
}
total_sent=0

# ---- phase 1: filter A ------------------------------------------------------------------
log "phase 1: filter '$FILTER_A'"
send "$in/X.pcap"
settle "phase 1"

# ---- HUP: filter B, snap length 128 -------------------------------------------------------
log "SIGHUP: filter '$FILTER_B', snaplen 128"
write_cfg "$FILTER_B" 128
kill -HUP "$LINECAPD_PID"
wait_for_linecapd "grep -qF \"port r0: filter now '$FILTER_B', snaplen 128\" '$LINECAPD_LOG'" 20 \
    || fail "reload to filter B not logged"
wait_for_linecapd rotated 20 || fail "phase-1 files not rotated after SIGHUP"
mv "$out"/*.pcap "$TEST_TMPDIR/phase1/"

tcpdump -r "$in/X.pcap" -w "$TEST_TMPDIR/exp1.pcap" "$FILTER_A" 2>/dev/null
cat_pcaps "$TEST_TMPDIR/got1.pcap" "$TEST_TMPDIR"/phase1/*.pcap
pcap_compare same-order "$TEST_TMPDIR/exp1.pcap" "$TEST_TMPDIR/got1.pcap" || fail "phase 1 differs from tcpdump -r X '$FILTER_A'"

# ---- phase 2: filter B at 128 bytes, with a live tcpdump -s 128 next to it ----------------
tcpdump -i "$CAP_IF" -U -n -s 128 -w "$TEST_TMPDIR/live2.pcap" "$FILTER_B" 2>"$TEST_TMPDIR/tcpdump.log" &
tcpdump_pid=$!
on_exit "kill $tcpdump_pid 2>/dev/null || true"
wait_for "grep -q 'listening on' '$TEST_TMPDIR/tcpdump.log'" 10 || fail "tcpdump did not start: $(cat "$TEST_TMPDIR/tcpdump.log")"
send "$in/Y.pcap"
settle "phase 2"
tcpdump -r "$in/Y.pcap" -w "$TEST_TMPDIR/sel2.pcap" "$FILTER_B" 2>/dev/null
editcap -F nsecpcap -s 128 "$TEST_TMPDIR/sel2.pcap" "$TEST_TMPDIR/exp2.pcap"
kept2=$(records "$TEST_TMPDIR/exp2.pcap")
wait_for "(( \$(records '$TEST_TMPDIR/live2.pcap') >= $kept2 ))" 10 || log "live tcpdump holds $(records "$TEST_TMPDIR/live2.pcap") of $kept2"
kill -INT "$tcpdump_pid"
wait "$tcpdump_pid" || true

# ---- HUP: an invalid filter is rejected, B stays ------------------------------------------
log "SIGHUP: invalid filter '$FILTER_BAD'"
write_cfg "$FILTER_BAD" 262144
kill -HUP "$LINECAPD_PID"
wait_for_linecapd "grep -q 'reload rejected' '$LINECAPD_LOG'" 20 || fail "invalid filter: no 'reload rejected' logged"
rejected=$(grep 'reload rejected' "$LINECAPD_LOG" | tail -n 1)
[[ $rejected == *"'$FILTER_BAD'"* && $rejected == *"syntax error"* ]] \
    || fail "the rejection should quote the expression and libpcap's message: $rejected"
wait_for_linecapd rotated 20 || fail "phase-2 files not rotated after SIGHUP"
mv "$out"/*.pcap "$TEST_TMPDIR/phase2/"

cat_pcaps "$TEST_TMPDIR/got2.pcap" "$TEST_TMPDIR"/phase2/*.pcap
pcap_compare headers "$TEST_TMPDIR/exp2.pcap" "$TEST_TMPDIR/got2.pcap" \
    || fail "phase 2 differs from editcap -s 128 of tcpdump -r Y '$FILTER_B'"
# A live capture is compared on untagged frames only: the veth hands 802.1Q tags to the
# kernel out of band, so tcpdump's kernel filter sees tagged frames without their tag
# (live `tcp` matches a tagged TCP frame, `tcp` on a file does not). linecapd filters the
# frame as it is on the wire, like tcpdump -r. Untagged, both must agree byte for byte.
tcpdump -r "$TEST_TMPDIR/live2.pcap" -w "$TEST_TMPDIR/live2-untagged.pcap" 'not vlan' 2>/dev/null
tcpdump -r "$TEST_TMPDIR/got2.pcap" -w "$TEST_TMPDIR/got2-untagged.pcap" 'not vlan' 2>/dev/null
(($(records "$TEST_TMPDIR/got2-untagged.pcap") > 100)) || fail "phase 2: too few untagged frames to compare"
pcap_compare headers "$TEST_TMPDIR/live2-untagged.pcap" "$TEST_TMPDIR/got2-untagged.pcap" \
    || fail "phase 2 differs from a live tcpdump -s 128 '$FILTER_B' on the same veth"

# ---- phases 3 and 4: Z under B, then W with a reload to C while it flows ------------------
log "phase 3: Z under the old filter"
send "$in/Z.pcap"
settle "phase 3"

log "phase 4: W at 500 pps, SIGHUP to '$FILTER_C' while it flows"
write_cfg "$FILTER_C" 262144
w_count=$(records "$in/W.pcap")
# Reload once the daemon has taken a sixth of W (its own count: the veth's counters move
# when the peer sends, and on a busy machine the kernel may hand the frames over to the
# capture socket a second later). W lasts 6 s, so the switch lands mid-stream.
# shellcheck disable=SC2034  # read by the wait_for condition below
before_w=$(metric linecap_rx_packets_total)
replay_into_ns "$in/W.pcap" 500 >"$TEST_TMPDIR/w_sent" &
replay_pid=$!
on_exit "kill $replay_pid 2>/dev/null || true"
wait_for "(( \$(metric linecap_rx_packets_total) >= before_w + w_count / 6 ))" 20 || fail "W does not arrive"
kill -HUP "$LINECAPD_PID"
wait_for_linecapd "grep -qF \"port r0: filter now '$FILTER_C', snaplen 262144\" '$LINECAPD_LOG'" 20 \
    || fail "reload to filter C not logged"
wait "$replay_pid" || fail "tcpreplay of W failed"
[[ $(cat "$TEST_TMPDIR/w_sent") == "$w_count" ]] || fail "tcpreplay sent $(cat "$TEST_TMPDIR/w_sent") of $w_count packets of W"
total_sent=$((total_sent + w_count))
settle "phase 4"

{ linecapd_running && [[ $LINECAPD_PID == "$pid_at_start" ]]; } || fail "the daemon is not the one started"
(($(grep -c 'starting with' "$LINECAPD_LOG") == 1)) || fail "the daemon restarted"
stop_linecapd || fail "linecapd exited $LINECAPD_RC after the reloads"

# Phase 3 files (Z, then W until the switch) and phase 4 files (W after it), in order.
shopt -s nullglob
rest=("$out"/*.pcap)
shopt -u nullglob
cat_pcaps "$TEST_TMPDIR/got34.pcap" "${rest[@]}"
tcpdump -r "$in/ZW.pcap" -w "$TEST_TMPDIR/selB.pcap" "$FILTER_B" 2>/dev/null
tcpdump -r "$in/ZW.pcap" -w "$TEST_TMPDIR/selC.pcap" "$FILTER_C" 2>/dev/null
check_switch "$in/ZW.pcap" "$TEST_TMPDIR/selB.pcap" 128 "$TEST_TMPDIR/selC.pcap" 262144 \
    "$TEST_TMPDIR/got34.pcap" "$(records "$in/Z.pcap")" || fail "phases 3-4: not one clean switch from B to C"

summary=$(summary_of r0)
reached=$(summary_number r0 reached)
written=$(summary_number r0 written)
filtered=$(summary_number r0 filtered)
((reached >= total_sent)) || fail "only $reached of $total_sent packets sent reached the port: $summary"
[[ $summary == *"nic_missed=0 nic_error=0 no_mbuf=0 xsk_fill_empty=0 xsk_ring_full=0 writer_full=0 write_error=0 disk_full=0"* ]] \
    || fail "drops during the reloads: $summary"
((written + filtered == reached)) || fail "written + filtered != reached: $summary"
log "OK: 3 reloads (2 applied, 1 rejected) without a restart or a lost packet; $summary"
