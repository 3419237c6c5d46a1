#!/usr/bin/env bash
# Capture filters in the real daemon equal tcpdump's: for every expression below, the
# packets linecapd writes from a replayed pcap are exactly those that
#     tcpdump -r qN.pcap -w expected.pcap '<expr>'
# keeps: same packets, same bytes, same order, per queue. And the port's summary line
# accounts for every packet: reached = input, written = kept, filtered = input - kept.
#
# One daemon run covers all expressions: each expression gets its own port (its own
# net_pcap vdev replaying the same two files, one per rx queue); one worker polls them all.
# Inputs: a generated mix (IPv4/IPv6, TCP/UDP/ICMP/ARP, VLAN, jumbo up to 9014 bytes,
# every TCP flag combination) and craft_pcap.py's edge cases (IP options, fragments,
# QinQ, IPv6 extension headers, TTLs, port-range boundaries, broadcast/multicast, LLC).
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/filter/filter_lib.sh"
need_root
need_linecapd
need_cmd tcpdump
need_hugepages 256
make_tmpdir

EXPRESSIONS=(
    # hosts and nets
    "host 198.18.7.7"
    "src net 198.18.0.0/16 and dst net 198.19.128.0/17"
    "ip6 host 2001:db8::7 or ip6 net 2001:db8:ffff::/48"
    # ports
    "port 53"
    "tcp port 443 or udp port 53"
    "portrange 1000-2000"
    "tcp dst port 80 or udp src port 53"
    # protocols
    "tcp"
    "udp and not port 53"
    "icmp or icmp6 or arp"
    "not port 80 and not arp"
    # VLAN
    "vlan and tcp"
    "vlan 100 and ip"
    "vlan and ip6 and udp"
    # IPv6
    "ip6 and tcp port 443"
    "ip6 and not vlan"
    # TCP flags
    "tcp[tcpflags] & (tcp-syn|tcp-fin) != 0"
    "tcp[13] = 18"
    "tcp[tcpflags] & tcp-rst != 0 and not vlan"
    # byte offsets and lengths
    "ip[8] < 64"
    "ip[6:2] & 0x1fff != 0"
    "ether[12:2] = 0x86dd"
    "udp[8:4] < 500"
    "ether multicast"
    "greater 1000"
    "less 100"
    # a long one
    "(tcp port 80 or tcp port 443 or udp port 53 or udp port 5060) and (net 198.18.0.0/15 or ip6 net 2001:db8::/32) and not ip[6:2] & 0x1fff != 0 and greater 64"
)
((${#EXPRESSIONS[@]} <= 30)) || fail "at most 30 expressions per run (RTE_MAX_ETHPORTS is 32)"

in=$TEST_TMPDIR/in
out=$TEST_TMPDIR/out
exp=$TEST_TMPDIR/expected
mkdir -p "$in" "$out" "$exp"

gen_pcap --count 3000 --mix --jumbo --tcp-flags --both-directions --flows 400 --seed 21 --out "$in/q0.pcap"
craft_pcap --out "$in/craft.pcap"
gen_pcap --count 1500 --mix --tcp-flags --both-directions --flows 150 --seed 22 --out "$in/mix1.pcap"
cat_pcaps "$in/q1.pcap" "$in/craft.pcap" "$in/mix1.pcap"
input_total=$(($(records "$in/q0.pcap") + $(records "$in/q1.pcap")))

# What tcpdump keeps, per expression and queue (counted in one go: python starts slowly
# on a busy machine).
expected_files=()
for i in "${!EXPRESSIONS[@]}"; do
    for q in 0 1; do
        tcpdump -r "$in/q$q.pcap" -w "$exp/f$i-q$q.pcap" "${EXPRESSIONS[i]}" 2>"$TEST_TMPDIR/tcpdump.err" \
            || fail "tcpdump rejects '${EXPRESSIONS[i]}': $(cat "$TEST_TMPDIR/tcpdump.err")"
        expected_files+=("$exp/f$i-q$q.pcap")
    done
done
mapfile -t counts < <(records_each "${expected_files[@]}")
((${#counts[@]} == ${#expected_files[@]})) || fail "could not count the expected files"
expected_total=0
declare -a KEPT
for i in "${!EXPRESSIONS[@]}"; do
    kept=$((counts[2 * i] + counts[2 * i + 1]))
    KEPT[i]=$kept
    expected_total=$((expected_total + kept))
    ((kept > 0 && kept < input_total)) \
        || fail "'${EXPRESSIONS[i]}' keeps $kept of $input_total input packets: pick inputs that make it decide both ways"
done
log "${#EXPRESSIONS[@]} expressions, $input_total packets per port, tcpdump keeps $expected_total in total"

{
    cat <<YAML
eal:
  lcores: "0-1"
ports:
YAML
    for i in "${!EXPRESSIONS[@]}"; do
        # YAML double-quoted scalar: the expressions hold no '"' or '\'.
        cat <<YAML
  - name: f$i
    device: "net_pcap$i,rx_pcap=$in/q0.pcap,rx_pcap=$in/q1.pcap"
    rx_queues: 2
    rx_descriptors: 128
    mtu: 9000
    filter: "${EXPRESSIONS[i]}"
YAML
    done
    cat <<YAML
output:
  directory: "$out"
  blocks_per_queue: 16
  block_size_kb: 256
  rotate: { size_mb: 1024, interval_s: 0 }
  manifest: false
metrics:
  enabled: false
YAML
} >"$TEST_TMPDIR/linecap.yaml"

start_linecapd "$TEST_TMPDIR/linecap.yaml"
# net_pcap replays each file once and then goes quiet: the capture is complete when the
# output (finished and in-progress files) holds as many records as tcpdump kept.
await_records "$out" "$expected_total" 240

failures=0
shopt -s nullglob
for i in "${!EXPRESSIONS[@]}"; do
    e=${EXPRESSIONS[i]}
    for q in 0 1; do
        # rotate.interval_s 0 and 1 GiB files: one file per stream (none if nothing was kept).
        got=("$out"/*"-f$i-q$q.pcap")
        nfiles=${#got[@]}
        if ((nfiles != 1)); then
            stream_output "$out" "f$i" "$q" "$TEST_TMPDIR/got-f$i-q$q.pcap" >/dev/null
            got=("$TEST_TMPDIR/got-f$i-q$q.pcap")
        fi
        if ! pcap_compare same-order "$exp/f$i-q$q.pcap" "${got[0]}" >"$TEST_TMPDIR/cmp.txt" 2>&1; then
            log "MISMATCH '$e' queue $q ($nfiles file(s)): $(tail -n 5 "$TEST_TMPDIR/cmp.txt")"
            failures=$((failures + 1))
        fi
    done
    reached=$(summary_number "f$i" reached)
    written=$(summary_number "f$i" written)
    filtered=$(summary_number "f$i" filtered)
    if [[ $reached != "$input_total" || $written != "${KEPT[i]}" || $filtered != $((input_total - KEPT[i])) ||
        $(summary_of "f$i") != *"nic_missed=0 nic_error=0 no_mbuf=0 xsk_fill_empty=0 xsk_ring_full=0 writer_full=0 write_error=0 disk_full=0"* ]]; then
        log "ACCOUNTING '$e': $(summary_of "f$i") (expected $input_total reached, ${KEPT[i]} written, $((input_total - KEPT[i])) filtered, no drops)"
        failures=$((failures + 1))
    fi
done
((failures == 0)) || fail "$failures mismatch(es) between linecapd and tcpdump"
grep -q "(JIT)" "$LINECAPD_LOG" || fail "no filter ran JIT-compiled"
! grep -q "JIT not available" "$LINECAPD_LOG" || fail "a filter fell back to the interpreter on this machine"
log "OK: ${#EXPRESSIONS[@]} expressions × 2 queues equal tcpdump, packet for packet"
