#!/usr/bin/env bash
# The live feed (feed.*) with real PCAP-over-IP clients, under live capture at a fixed
# rate: `nc | tcpdump -r -` and `tshark -i TCP@127.0.0.1:PORT` each get every packet the
# capture files hold, while a third consumer connects and stops reading. That one loses
# packets in its own feed only (counted), and capture drops nothing because of it. Then
# the feed over TLS on all addresses: `openssl s_client` with a client certificate gets
# every packet; without one, or with one of another CA, nothing.
# First the configuration's refusals: a non-loopback listen without TLS or
# plaintext_on_network, TLS keys alone, an unknown port, a filter libpcap rejects.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_linecapd
need_cmd nc tcpdump tshark

make_tmpdir
bad="$TEST_TMPDIR/bad.yaml"
refused() {  # refused KEY SETTING...: the configuration is refused with exit 78, naming KEY
    local key=$1 rc=0
    shift
    write_config "$bad" net_null0 "$TEST_TMPDIR" feed.enabled=true "$@"
    "$LINECAPD" --config "$bad" --print-plan >"$TEST_TMPDIR/refusal.out" 2>&1 || rc=$?
    ((rc == 78)) || fail "feed $*: exit $rc, not 78: $(cat "$TEST_TMPDIR/refusal.out")"
    grep -q "$key" "$TEST_TMPDIR/refusal.out" || fail "feed $*: the refusal does not name $key: $(cat "$TEST_TMPDIR/refusal.out")"
}
refused feed.listen 'feed.listen="0.0.0.0:57012"'
refused feed.listen 'feed.listen="10.1.2.3:57012"' feed.plaintext_on_network=false
refused feed.ports 'feed.ports=["nosuchport"]'
refused feed.tls_cert 'feed.tls_cert="/etc/ssl/feed.pem"'
refused feed.tls_client_ca 'feed.tls_client_ca="/etc/ssl/ca.pem"'
refused feed.buffer_bytes 'feed.buffer_bytes="4K"'
write_config "$bad" net_null0 "$TEST_TMPDIR" feed.enabled=true 'feed.listen="0.0.0.0:57012"' \
    feed.plaintext_on_network=true
"$LINECAPD" --config "$bad" --print-plan >/dev/null 2>&1 || fail "plaintext_on_network: true did not allow 0.0.0.0"
rc=0
write_config "$bad" net_null0 "$TEST_TMPDIR" feed.enabled=true 'feed.filter="udp port"'
"$LINECAPD" --config "$bad" --check >"$TEST_TMPDIR/refusal.out" 2>&1 || rc=$?
((rc == 78)) && grep -q "feed.filter" "$TEST_TMPDIR/refusal.out" \
    || fail "a bad feed.filter: exit $rc: $(cat "$TEST_TMPDIR/refusal.out")"
log "refusals: OK"

need_root
need_hugepages 256
need_bpffs
need_cmd tcpreplay openssl
veth_pair feed

packets=${LINECAP_FEED_PACKETS:-30000}
rate=${LINECAP_FEED_PPS:-10000}
gen_pcap --count "$packets" --mix --seed 28 --flows 300 --both-directions --out "$TEST_TMPDIR/sent.pcap"
feed_port=$(free_tcp_port)
mkdir "$TEST_TMPDIR/out"
# A 1 MiB buffer per consumer: the stalled one fills it (and its sockets) within a second
# or two of traffic, so it must drop.
write_config "$TEST_TMPDIR/linecap.yaml" "net_af_xdp0,iface=$CAP_IF,start_queue=0,queue_count=1" \
    "$TEST_TMPDIR/out" port.rx_descriptors=2048 output.block_size_kb=256 output.blocks_per_queue=16 \
    feed.enabled=true "feed.listen=\"127.0.0.1:$feed_port\"" 'feed.buffer_bytes="1M"'
metrics=http://$METRICS_LISTEN/metrics
start_linecapd "$TEST_TMPDIR/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG' && http_get $metrics >/dev/null" 30 \
    || fail "daemon did not start"

# The consumers. Each runs in its own process group, stopped on exit, as an instrument: a
# reader is judged on getting every packet, which holds for one that keeps up (the hunt's
# hogs starved `nc | tcpdump` ~0.5 s at 7 MB/s, past its 1 MiB feed buffer).
consumer() {  # consumer NAME COMMAND: runs COMMAND (a shell pipeline) in the background
    local name=$1
    setsid "${INSTRUMENT[@]}" bash -c "$2" >"$TEST_TMPDIR/$name.log" 2>&1 &
    eval "${name}_pid=$!"
    on_exit "kill -- -$! 2>/dev/null || true"
    show_on_failure "$TEST_TMPDIR/$name.log"
}
consumer nc_reader "nc 127.0.0.1 $feed_port | tcpdump -r - -w '$TEST_TMPDIR/nc.pcap'"
consumer tshark_reader "tshark -i TCP@127.0.0.1:$feed_port -w '$TEST_TMPDIR/tshark.pcapng'"
# Connects, then never reads: sleep does not read its stdin, so the pipe, nc and the
# socket fill up and stay full.
consumer stalled "nc 127.0.0.1 $feed_port | sleep 600"
wait_for "[[ \$(metric_sum $metrics linecap_feed_consumers) -eq 3 ]]" 30 \
    || fail "3 consumers expected, $(metric_sum $metrics linecap_feed_consumers) connected"

sent=$(replay_into_ns "$TEST_TMPDIR/sent.pcap" "$rate")
((sent == packets)) || fail "tcpreplay sent $sent of $packets packets"
wait_for_linecapd "[[ \$(metric_sum $metrics linecap_written_packets_total) -ge $sent ]] && \
    [[ \$(metric_sum $metrics linecap_feed_sent_packets_total) -ge \$((2 * $sent)) ]]" 30 \
    || log "written $(metric_sum $metrics linecap_written_packets_total), feed sent $(metric_sum $metrics linecap_feed_sent_packets_total) of $sent"
feed_dropped=$(metric_sum $metrics linecap_feed_dropped_packets_total)
stop_linecapd || fail "linecapd exited $LINECAPD_RC"

# The daemon closed every consumer at its stop: the readers see the end of their stream.
wait_for "! kill -0 $nc_reader_pid 2>/dev/null" 20 || fail "nc | tcpdump did not end after the daemon stopped"
wait_for "! kill -0 $tshark_reader_pid 2>/dev/null" 20 || fail "tshark did not end after the daemon stopped"

# The files hold exactly the packets sent; so does each reader's copy: each got every
# packet the files hold, and nothing else.
pcap_compare multiset "$TEST_TMPDIR/sent.pcap" "$TEST_TMPDIR/out" || fail "the files do not hold the packets sent"
pcap_compare multiset "$TEST_TMPDIR/sent.pcap" "$TEST_TMPDIR/nc.pcap" || fail "nc | tcpdump did not get the files' packets"
pcap_compare multiset "$TEST_TMPDIR/sent.pcap" "$TEST_TMPDIR/tshark.pcapng" || fail "tshark did not get the files' packets"
summary=$(grep 'reached the port' "$LINECAPD_LOG")
[[ $summary == *"nic_missed=0 nic_error=0 no_mbuf=0 xsk_fill_empty=0 xsk_ring_full=0 writer_full=0 write_error=0 disk_full=0"* ]] \
    || fail "capture dropped packets: $summary"
((feed_dropped > 0)) || fail "the stalled consumer dropped nothing (linecap_feed_dropped_packets_total $feed_dropped)"
# Its drops are its own: one consumer's line says it dropped, the readers' say 0.
grep -Eq "feed: consumer 127\.0\.0\.1:[0-9]+ closed at shutdown: [0-9]+ packets sent, [1-9][0-9]* dropped" "$LINECAPD_LOG" \
    || fail "no consumer logged its drops"
readers=$(grep -Ec "feed: consumer 127\.0\.0\.1:[0-9]+ (closed at shutdown|disconnected): $sent packets sent, 0 dropped" "$LINECAPD_LOG" || true)
((readers == 2)) || fail "$readers consumers logged every packet sent and none dropped, not 2"
grep -q "^.*feed: 3 connections (0 refused), " "$LINECAPD_LOG" || fail "no feed line in the shutdown summary"
log "OK: $sent packets at $rate pps; nc | tcpdump and tshark got them all; the stalled consumer dropped $feed_dropped; $summary"

# TLS: a CA, the server's certificate, a consumer's, and one from a CA the feed does not know.
pki=$TEST_TMPDIR/pki
mkdir "$pki"
certificate() {  # certificate NAME CA: a key and a certificate signed by CA (or self-signed: "")
    local name=$1 ca=$2
    openssl req -new -newkey rsa:2048 -nodes -subj "/CN=$name" -keyout "$pki/$name.key" -out "$pki/$name.csr" 2>/dev/null
    if [[ -z $ca ]]; then
        openssl x509 -req -in "$pki/$name.csr" -signkey "$pki/$name.key" -days 2 -out "$pki/$name.pem" \
            -extfile <(printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=keyCertSign,cRLSign\n') 2>/dev/null
    else
        openssl x509 -req -in "$pki/$name.csr" -CA "$pki/$ca.pem" -CAkey "$pki/$ca.key" -CAcreateserial -days 2 \
            -out "$pki/$name.pem" -extfile <(printf 'subjectAltName=IP:127.0.0.1\n') 2>/dev/null
    fi
}
certificate feed-ca ""
certificate other-ca ""
certificate appliance feed-ca
certificate analyst feed-ca
certificate stranger other-ca
tls_packets=5000
gen_pcap --count "$tls_packets" --mix --seed 29 --flows 100 --out "$TEST_TMPDIR/tls-sent.pcap"
feed_port=$(free_tcp_port)
rm -rf "$TEST_TMPDIR/out" && mkdir "$TEST_TMPDIR/out"
write_config "$TEST_TMPDIR/tls.yaml" "net_af_xdp0,iface=$CAP_IF,start_queue=0,queue_count=1" \
    "$TEST_TMPDIR/out" port.rx_descriptors=2048 output.block_size_kb=256 output.blocks_per_queue=16 \
    feed.enabled=true "feed.listen=\"0.0.0.0:$feed_port\"" "feed.tls_cert=\"$pki/appliance.pem\"" \
    "feed.tls_key=\"$pki/appliance.key\"" "feed.tls_client_ca=\"$pki/feed-ca.pem\""
metrics=http://$METRICS_LISTEN/metrics
start_linecapd "$TEST_TMPDIR/tls.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG' && http_get $metrics >/dev/null" 30 \
    || fail "daemon did not start with TLS"
s_client="openssl s_client -quiet -connect 127.0.0.1:$feed_port -CAfile '$pki/feed-ca.pem'"
consumer tls_reader "$s_client -cert '$pki/analyst.pem' -key '$pki/analyst.key' | tcpdump -r - -w '$TEST_TMPDIR/tls.pcap'"
consumer no_certificate "$s_client > '$TEST_TMPDIR/no_certificate.bytes'"
consumer wrong_ca "$s_client -cert '$pki/stranger.pem' -key '$pki/stranger.key' > '$TEST_TMPDIR/wrong_ca.bytes'"
wait_for_linecapd "grep -q 'feed: consumer 127.0.0.1:[0-9]* connected over TLS, certificate /CN=analyst' '$LINECAPD_LOG'" 20 \
    || fail "the consumer with a certificate was not logged as connected"
wait_for_linecapd "(( \$(grep -c 'failed its TLS handshake' '$LINECAPD_LOG') == 2 ))" 20 \
    || fail "the consumers without a valid certificate were not refused"
sent=$(replay_into_ns "$TEST_TMPDIR/tls-sent.pcap" "$rate")
((sent == tls_packets)) || fail "tcpreplay sent $sent of $tls_packets packets"
wait_for_linecapd "[[ \$(metric_sum $metrics linecap_feed_sent_packets_total) -ge $sent ]]" 30 \
    || log "feed sent $(metric_sum $metrics linecap_feed_sent_packets_total) of $sent over TLS"
stop_linecapd || fail "linecapd exited $LINECAPD_RC"
wait_for "! kill -0 $tls_reader_pid 2>/dev/null" 20 || fail "openssl s_client | tcpdump did not end after the daemon stopped"
pcap_compare multiset "$TEST_TMPDIR/tls-sent.pcap" "$TEST_TMPDIR/out" || fail "the files do not hold the packets sent"
pcap_compare multiset "$TEST_TMPDIR/tls-sent.pcap" "$TEST_TMPDIR/tls.pcap" || fail "the TLS consumer did not get the files' packets"
for refused_consumer in no_certificate wrong_ca; do
    [[ ! -s $TEST_TMPDIR/$refused_consumer.bytes ]] || fail "$refused_consumer got bytes of the feed"
done
log "OK: over TLS on 0.0.0.0 the consumer with a certificate got all $sent packets; without one, or of another CA, nothing"
