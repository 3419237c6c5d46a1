# shellcheck shell=bash
# shellcheck disable=SC2034  # SENT, REPLAY_PID, ... are read by the tests
# Helpers shared by the live-daemon metrics tests in this directory (sourced after
# tests/lib/common.sh). See README.md here for what the tests prove and why.

ACCOUNTING="$LINECAP_SRC/tests/metrics/integration/accounting.py"

# accounting SUBCOMMAND ARGS...: accounting.py (wait-drained, in-flight, check).
accounting() { python3 "$ACCOUNTING" "$@"; }

# kernel_counters FILE: the veth pair's counters that decide where a packet tcpreplay sent
# went before linecapd could see it, as "name=value" words:
#   peer_tx_packets, peer_tx_dropped  the sending end in $NS: tx_dropped counts frames veth
#                                     could not queue towards the capture end (before XDP)
#   cap_rx_packets, cap_rx_dropped    the capture end: every frame that arrived (XDP ran on
#                                     it), and those the XDP redirect into the AF_XDP socket
#                                     failed to deliver (socket rx ring full or fill ring
#                                     empty: veth native XDP counts them as rx drops)
kernel_counters() {
    local file=${1:?kernel_counters FILE} s=/sys/class/net
    {
        printf 'peer_tx_packets=%s ' "$(ns_exec cat "$s/$PEER_IF/statistics/tx_packets")"
        printf 'peer_tx_dropped=%s ' "$(ns_exec cat "$s/$PEER_IF/statistics/tx_dropped")"
        printf 'cap_rx_packets=%s ' "$(cat "$s/$CAP_IF/statistics/rx_packets")"
        printf 'cap_rx_dropped=%s ' "$(cat "$s/$CAP_IF/statistics/rx_dropped")"
        # A packet socket on the capture side sees what leaves it too: nothing should.
        printf 'cap_tx_packets=%s\n' "$(cat "$s/$CAP_IF/statistics/tx_packets")"
    } >"$file"
    log "kernel counters ($(basename "$file")): $(cat "$file")"
}

# cap_rx_dropped: the capture veth's rx_dropped now.
cap_rx_dropped() { cat "/sys/class/net/$CAP_IF/statistics/rx_dropped"; }

# xdp_mode: "native" or "generic" (how the XDP program sits on $CAP_IF), for the log.
xdp_mode() {
    local link
    link=$(ip -d link show dev "$CAP_IF")
    case $link in
        *" xdpgeneric "* | *"xdpgeneric/"*) echo generic ;;
        *" xdp "* | *"xdp/"* | *"prog/xdp"*) echo native ;;
        *) echo none ;;
    esac
}

# afxdp_config FILE OUTDIR [SECTION.KEY=VALUE...]: a one-port net_af_xdp config on $CAP_IF
# (write_config, with those settings), metrics on $METRICS_LISTEN (set when empty).
#
# rx_descriptors is 4096 everywhere: DPDK 22.11's af_xdp PMD keeps 2048 frames on the fill
# ring, so with a larger socket rx ring an overrun always shows up as "fill ring empty"
# (XDP_STATISTICS.rx_fill_ring_empty_descs: xsk_fill_empty). With 2048 or fewer
# descriptors the rx ring fills first (rx_ring_full: xsk_ring_full, which DPDK 22.11 does
# not read; linecapd reads it from the socket, dpdk/xdp_socket.hpp).
afxdp_config() {
    local file=$1 outdir=$2
    shift 2
    write_config "$file" "net_af_xdp0,iface=$CAP_IF,start_queue=0,queue_count=1" "$outdir" \
        port.rx_descriptors=4096 "$@"
}

# start_capture CONFIG: start linecapd and wait until it polls and serves /metrics.
start_capture() {
    start_linecapd "$1"
    wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 120
    wait_for_linecapd "http_get http://$METRICS_LISTEN/metrics 10" 60
    log "linecapd polling $CAP_IF (XDP $(xdp_mode)), metrics on $METRICS_LISTEN"
}

# replay_bg PCAP PPS [LOOPS]: replay_into_ns in the background; REPLAY_PID is its pid and
# $TEST_TMPDIR/sent.count receives the count once it is done (collect with replay_wait).
# Call it in the test's main shell.
replay_bg() {
    rm -f "$TEST_TMPDIR/sent.count"
    (replay_into_ns "$@" >"$TEST_TMPDIR/sent.count.tmp" && mv "$TEST_TMPDIR/sent.count.tmp" "$TEST_TMPDIR/sent.count") &
    REPLAY_PID=$!
    on_exit "kill $REPLAY_PID 2>/dev/null || true"
}

# replay_wait: wait for replay_bg's tcpreplay to finish and set SENT to the packets it sent.
# Call it in the test's main shell (not in $(...): only the parent can wait for it).
replay_wait() {
    local rc=0
    wait "$REPLAY_PID" || rc=$?
    if ((rc != 0)) || [[ ! -s $TEST_TMPDIR/sent.count ]]; then
        fail "tcpreplay failed (status $rc): $(tail -n 5 "$TEST_TMPDIR/tcpreplay.log" 2>/dev/null)"
    fi
    SENT=$(cat "$TEST_TMPDIR/sent.count")
}

# replay_paced PCAP CHUNK PPS UNTIL [LOOPS] [HOOK]: replay PCAP (LOOPS times) in chunks of
# CHUNK packets, one tcpreplay per chunk at PPS, and before each next chunk wait until
# linecapd has taken in the previous ones:
#   UNTIL=received   linecap_port_received_packets_total >= packets sent so far
#   UNTIL=accounted  written + filtered + dropped >= packets sent so far (all blocks written)
# Sets SENT (the sum of tcpreplay's counts). This is flow control by observation: with a
# chunk no larger than the AF_XDP fill ring (2048 frames) nothing can overrun however little
# CPU the daemon gets on a loaded machine, and with UNTIL=accounted and a chunk smaller than
# the write blocks nothing can find the writer without a free block either. HOOK, when
# given, is eval'd after the first chunk has been sent (e.g. to scrape mid-capture).
replay_paced() {
    local pcap=$1 chunk=$2 pps=$3 until=$4 loops=${5:-1} hook=${6:-} dir="$TEST_TMPDIR/chunks"
    local url="http://$METRICS_LISTEN/metrics" total=0 n f l chunks=()
    [[ $until == received || $until == accounted ]] || fail "replay_paced: UNTIL must be received or accounted"
    need_cmd editcap
    rm -rf "$dir"
    mkdir "$dir"
    editcap -F nsecpcap -c "$chunk" "$pcap" "$dir/chunk.pcap"
    chunks=("$dir"/chunk_*.pcap)
    for ((l = 1; l <= loops; l++)); do
        for f in "${chunks[@]}"; do
            n=$(replay_into_ns "$f" "$pps") || fail "tcpreplay failed on $f"
            total=$((total + n))
            if [[ -n $hook ]]; then
                eval "$hook"
                hook=
            fi
            accounting wait-for "$url" "$until" --at-least "$total" --timeout 120 --pid "$LINECAPD_PID" \
                || fail "linecapd did not take in the chunks sent so far ($total packets)"
        done
    done
    log "replay_paced: $total packets in $((${#chunks[@]} * loops)) chunks of <= $chunk at $pps pps"
    SENT=$total
}

# scrape_to FILE: one scrape of the daemon's /metrics into FILE.
# A generous timeout: on a loaded machine the endpoint can take seconds to answer.
scrape_to() { http_get "http://$METRICS_LISTEN/metrics" 30 >"$1" || fail "cannot scrape http://$METRICS_LISTEN/metrics"; }
