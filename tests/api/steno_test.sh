#!/usr/bin/env bash
# Debian's stenoread, unchanged, against `linecap serve`'s POST /query: the config and
# certificates it reads are written here as an operator would (/etc/stenographer/config's
# Host, Port and CertPath, via STENOGRAPHER_CONFIG), and its answers — through its own
# tcpdump pipe — are compared with tcpdump -r over the whole store for Security Onion's
# query shapes (host and port, a network, a protocol, absolute and relative times; through
# VLAN tags, as Stenographer reads them), with
# Stenographer's limit headers, and refused for words it does not know, a query that is
# not one, and a certificate from another CA. Every query is audited with its text.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/api/api_lib.sh"
need_cmd stenoread stenocurl jq tcpdump openssl python3
need_linecap
make_tmpdir
api_appliance 3000 ""
api_config "$T/api.yaml" "$STORE" "127.0.0.1:$PORT" "$AUDIT" \
    "${API_TLS[@]}"
start_serve "$T/api.yaml"
show_on_failure "$AUDIT"

# Stenographer's client model: a directory of client_cert.pem, client_key.pem, ca_cert.pem.
mkdir -m 750 "$T/certs"
cp "$T/client.pem" "$T/certs/client_cert.pem"
install -m 600 "$T/client.key" "$T/certs/client_key.pem"
cp "$T/ca.pem" "$T/certs/ca_cert.pem"
printf '{"Host": "127.0.0.1", "Port": %s, "CertPath": "%s"}\n' "$PORT" "$T/certs" >"$T/steno.conf"
export STENOGRAPHER_CONFIG=$T/steno.conf

# The reference: everything, then tcpdump's own filter and editcap's time bounds.
"$LINECAP" extract --dir "$STORE" -o "$T/all.pcap" 2>/dev/null || fail "linecap extract (everything)"
# As Stenographer, a query reads the headers behind up to two VLAN tags: BPF as it applies
# to the frame untagged or behind one or two tags (libpcap's `vlan` shifts what follows).
through_vlan() { printf '(%s) or (vlan and ((%s) or (vlan and (%s))))' "$1" "$1" "$1"; }
reference() {  # reference OUT BPF [EDITCAP_ARGS...]
    local out=$1 bpf
    bpf=$(through_vlan "$2")
    shift 2
    tcpdump -r "$T/all.pcap" -w "$T/ref-f.pcap" "$bpf" 2>/dev/null || fail "tcpdump -r '$bpf'"
    if (($#)); then editcap "$@" "$T/ref-f.pcap" "$out" || fail "editcap $*"; else mv "$T/ref-f.pcap" "$out"; fi
}
steno() {  # steno OUT [stenoread options] QUERY: stenoread writing OUT through its tcpdump
    local out=$1
    shift
    stenoread "$@" -w "$out" 2>"$T/stenoread.err" || return 1
}
same() {  # same GOT WANT WHAT
    local n
    n=$(pcap_compare count "$2" | awk '{ print $2; exit }')
    ((n > 0)) || fail "$3: the reference is empty, the comparison would prove nothing"
    pcap_compare headers "$2" "$1" || fail "$3: stenoread's answer differs from tcpdump -r"
    log "$3: $n packets, as tcpdump -r"
}

# One conversation, as Security Onion asks for it.
read -r SRC SPORT DST DPORT < <(tcpdump -nr "$T/all.pcap" -c 200 'ip and tcp' 2>/dev/null \
    | awk '$2 == "IP" { split($3, a, "."); split($5, b, "."); sub(":", "", b[5]);
                        print a[1]"."a[2]"."a[3]"."a[4], a[5], b[1]"."b[2]"."b[3]"."b[4], b[5]; exit }')
[[ -n $DPORT ]] || fail "no IPv4 TCP conversation found in the store"
steno "$T/conv.pcap" "host $SRC and host $DST and port $SPORT and port $DPORT" || fail "stenoread: $(cat "$T/stenoread.err")"
reference "$T/conv-ref.pcap" "host $SRC and host $DST and port $SPORT and port $DPORT"
same "$T/conv.pcap" "$T/conv-ref.pcap" "host/host/port/port"

NET=${SRC%.*}.0
steno "$T/net.pcap" "net $NET/24 or icmp" || fail "stenoread: $(cat "$T/stenoread.err")"
reference "$T/net-ref.pcap" "net $NET/24 or (ip proto 1)"
same "$T/net.pcap" "$T/net-ref.pcap" "net or icmp"

steno "$T/udp.pcap" "udp && ip proto 17" || fail "stenoread: $(cat "$T/stenoread.err")"
reference "$T/udp-ref.pcap" "ip proto 17 or ip6 proto 17"
same "$T/udp.pcap" "$T/udp-ref.pcap" "udp && ip proto 17"
tagged=$(tcpdump -r "$T/udp.pcap" vlan 2>/dev/null | wc -l)
((tagged > 0)) || fail "no VLAN-tagged packet in the udp answer: the store's tagged traffic is not reached"
log "udp: $tagged of its packets are VLAN-tagged, found through the tags as Stenographer does"

# vlan N: the outer or the inner 802.1Q tag is N (the reference reads the tags itself).
python3 - "$T/all.pcap" "$T/vlan-ref.pcap" >"$T/vlan.id" <<'PY' || fail "no VLAN-tagged packet in the store"
import struct, sys
from linecap_harness import pcap
def tags(data):
    out, off = [], 12
    while len(out) < 2 and len(data) >= off + 4 and struct.unpack_from(">H", data, off)[0] in (0x8100, 0x88A8):
        out.append(struct.unpack_from(">H", data, off + 2)[0] & 0xFFF)
        off += 4
    return out
records = pcap.records(sys.argv[1])
vid = next(t[0] for t in map(lambda r: tags(r.data), records) if t)
pcap.write_pcap(sys.argv[2], [r for r in records if vid in tags(r.data)])
print(vid)
PY
VID=$(<"$T/vlan.id")
steno "$T/vlan.pcap" "vlan $VID" || fail "stenoread vlan: $(cat "$T/stenoread.err")"
same "$T/vlan.pcap" "$T/vlan-ref.pcap" "vlan $VID"

# Absolute times, exact to the nanosecond ([after, before)); the store spans 3 ms from T0.
AFTER=2026-11-30T02:10:00.000500000Z BEFORE=2026-11-30T02:10:00.002000500Z
steno "$T/time.pcap" "tcp and after $AFTER and before $BEFORE" || fail "stenoread: $(cat "$T/stenoread.err")"
reference "$T/time-ref.pcap" "ip proto 6 or ip6 proto 6" -A "2026-11-30 02:10:00.000500000" -B "2026-11-30 02:10:00.002000499"
same "$T/time.pcap" "$T/time-ref.pcap" "tcp between two times"
# Relative times: the whole store is older than a minute ago, none of it younger.
steno "$T/old.pcap" "tcp and before 1m ago" || fail "stenoread: $(cat "$T/stenoread.err")"
reference "$T/old-ref.pcap" "ip proto 6 or ip6 proto 6"
same "$T/old.pcap" "$T/old-ref.pcap" "before 1m ago"
steno "$T/new.pcap" "tcp and after 1m ago" || fail "stenoread: $(cat "$T/stenoread.err")"
pcap_compare count --expect 0 "$T/new.pcap" >/dev/null || fail "after 1m ago returned packets from the past"

# Stenographer's limits.
steno "$T/five.pcap" --limit-packets 5 "tcp" || fail "stenoread --limit-packets: $(cat "$T/stenoread.err")"
pcap_compare count --expect 5 "$T/five.pcap" >/dev/null || fail "--limit-packets 5 did not give 5 packets"
stenocurl /query -d "tcp" --silent --show-error -H "Steno-Limit-Bytes: 4096" -o "$T/small.pcap" \
    || fail "stenocurl with Steno-Limit-Bytes"
size=$(stat -c %s "$T/small.pcap")
((size > 24 && size <= 4096)) || fail "Steno-Limit-Bytes 4096 gave $size bytes"

# Refusals: a word Stenographer does not know, a query that is not one, a bad limit — each
# a 400 naming the problem, and nothing streamed.
refused() {  # refused QUERY EXPECTED_TEXT [curl args]
    local q=$1 want=$2 status
    shift 2
    status=$(stenocurl /query -d "$q" --silent -o "$T/refused.out" -w '%{http_code}' "$@") || true
    [[ $status == 400 ]] || fail "'$q': HTTP $status, want 400"
    grep -qF -- "$want" "$T/refused.out" || fail "'$q': the answer lacks '$want': $(cat "$T/refused.out")"
}
refused "not host $SRC" "'not' is not a word of Stenographer's query language"
refused "host $SRC or after 1h ago" "may only narrow the whole query"
refused "host example.com" "is not an IP address"
refused "tcp" "Steno-Limit-Packets: not a number" -H "Steno-Limit-Packets: many"
status=$(curl --silent -o /dev/null -w '%{http_code}' --cacert "$T/ca.pem" --cert "$T/client.pem" --key "$T/client.key" \
    "https://127.0.0.1:$PORT/query?x=1") || true
[[ $status == 405 ]] || fail "GET /query: HTTP $status, want 405"
# A certificate of another CA gets nothing.
cp "$T/rogue.pem" "$T/certs/client_cert.pem"
install -m 600 "$T/rogue.key" "$T/certs/client_key.pem"
stenocurl /query -d "tcp" --silent -o "$T/rogue.out" && [[ -s $T/rogue.out ]] && pcap_compare count "$T/rogue.out" >/dev/null 2>&1 \
    && fail "a certificate from another CA got packets"

grep -q "\"request\":\"/query?host $SRC and host $DST" "$AUDIT" || fail "the audit record lacks the query text"
grep -q '"who":"cert:' "$AUDIT" || fail "stenoread's certificate is not named in the audit"
stop_serve
log "ok"
