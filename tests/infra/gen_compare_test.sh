#!/usr/bin/env bash
# Self-test of tests/tools: gen_pcap.py is deterministic and writes valid traffic (tshark,
# capinfos and tcpdump read it; IPv4/TCP/UDP/ICMP checksums good; every packet unique), and
# pcap_compare.py reads pcap (us/ns, both byte orders) and pcapng and notices a missing, an
# extra, a changed and a truncated packet.
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

need_cmd python3 tshark capinfos tcpdump editcap mergecap
make_tmpdir
cd "$TEST_TMPDIR" || fail "cd $TEST_TMPDIR"

expect_ok() { # expect_ok DESCRIPTION CMD...
    local what=$1
    shift
    "$@" >out.txt 2>&1 || { cat out.txt >&2; fail "$what: expected success, got exit $?"; }
}
expect_mismatch() { # expect_mismatch DESCRIPTION CMD... (exit 1 = mismatch found)
    local what=$1 rc=0
    shift
    "$@" >out.txt 2>&1 || rc=$?
    ((rc == 1)) || { cat out.txt >&2; fail "$what: expected exit 1 (mismatch), got $rc"; }
}

N=10000
log "generator: determinism"
gen_pcap --count $N --mix --seed 7 --out mix.pcap
gen_pcap --count $N --mix --seed 7 --out mix-again.pcap
cmp -s mix.pcap mix-again.pcap || fail "same seed and options gave different files"
gen_pcap --count $N --mix --seed 8 --out mix-seed8.pcap
cmp -s mix.pcap mix-seed8.pcap && fail "different seeds gave identical files"
[[ $(head -c 4 mix.pcap | od -An -tx4 | tr -d ' ') == a1b23c4d ]] || fail "not a nanosecond pcap"

log "generator: the readers accept it"
capinfos -c -M mix.pcap >capinfos.txt 2>&1 || { cat capinfos.txt >&2; fail "capinfos failed"; }
grep -q "Number of packets: *$N\$" capinfos.txt || { cat capinfos.txt >&2; fail "capinfos count"; }
n=$(tcpdump -nn -q -r mix.pcap 2>tcpdump.err | wc -l) || true
[[ $n == "$N" ]] || { cat tcpdump.err >&2; fail "tcpdump -r read $n of $N packets"; }
expect_ok "validate --unique --monotonic" pcap_compare validate --unique --monotonic mix.pcap
# The default start is 1700000000 s and the packets 1 µs apart.
expect_ok "validate --ts-within the span" pcap_compare validate --ts-within 1700000000000000000 1700000000009999000 mix.pcap
expect_mismatch "validate --ts-within short of the last" pcap_compare validate --ts-within 1700000000000000000 1700000000009998999 mix.pcap

log "generator: checksums, no malformed packets (tshark), every type present"
check_tshark() { # check_tshark FILE: no bad checksum, nothing malformed, no error-level expert info
    local bad
    bad=$(tshark -n -r "$1" -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE \
        -o udp.check_checksum:TRUE \
        -Y 'ip.checksum.status != 1 or tcp.checksum.status != 1 or udp.checksum.status != 1
            or icmp.checksum.status != 1 or icmpv6.checksum.status != 1 or _ws.malformed
            or _ws.expert.severity >= error' 2>tshark.err) \
        || { cat tshark.err >&2; fail "tshark -r $1 failed"; }
    [[ -z $bad ]] || { printf '%s\n' "$bad" | head -n 10 >&2; fail "tshark flags packets in $1"; }
}
check_tshark mix.pcap
types=$(tshark -n -r mix.pcap -T fields -e frame.protocols 2>/dev/null | sort -u)
for want in 'eth:ethertype:ip:tcp' 'eth:ethertype:ip:udp' 'eth:ethertype:ipv6:tcp' \
    'eth:ethertype:ipv6:udp' 'eth:ethertype:vlan:ethertype:ip:tcp' \
    'eth:ethertype:vlan:ethertype:ip:udp' 'eth:ethertype:vlan:ethertype:ipv6:tcp' \
    'eth:ethertype:vlan:ethertype:ipv6:udp' 'eth:ethertype:arp' 'eth:ethertype:ip:icmp' \
    'eth:ethertype:ipv6:icmpv6'; do
    grep -q "^$want\(:\|\$\)" <<<"$types" || { echo "$types" >&2; fail "--mix lacks $want"; }
done
sizes=$(tshark -n -r mix.pcap -T fields -e frame.len 2>/dev/null | sort -n | sed -n '1p;$p' | tr '\n' ' ')
[[ $sizes == "60 1514 " ]] || fail "--mix frame sizes span '$sizes', expected 60 .. 1514"

gen_pcap --count 3000 --mix --jumbo --tcp-flags --both-directions --seed 3 --out jumbo.pcap
check_tshark jumbo.pcap
max=$(tshark -n -r jumbo.pcap -T fields -e frame.len 2>/dev/null | sort -n | tail -n 1)
[[ $max == 9014 ]] || fail "--jumbo: largest frame $max, expected 9014"
# SYN, SYN-ACK, ACK, PSH-ACK, FIN-ACK, RST
flags=$(tshark -n -r jumbo.pcap -Y tcp -T fields -e tcp.flags 2>/dev/null | sort -u | tr '\n' ' ')
[[ $flags == "0x0002 0x0004 0x0010 0x0011 0x0012 0x0018 " ]] \
    || fail "--tcp-flags: flag combinations '$flags'"
# --both-directions: some flow appears with source and destination swapped.
pairs=$(tshark -n -r jumbo.pcap -Y 'ip and (tcp or udp)' -T fields -e ip.src -e ip.dst 2>/dev/null | sort -u)
rev=$(awk '{ fwd[$1" "$2] = 1 } END { for (k in fwd) { split(k, a, " "); if ((a[2]" "a[1]) in fwd) n++ } print n + 0 }' <<<"$pairs")
((rev > 0)) || fail "--both-directions: no flow seen in both directions"

gen_pcap --count 2000 --size 64 --proto tcp --flows 4 --seed 5 --out fixed.pcap
check_tshark fixed.pcap
[[ $(tshark -n -r fixed.pcap -T fields -e frame.len 2>/dev/null | sort -u) == 64 ]] \
    || fail "--size 64 produced other sizes"
nflows=$(tshark -n -r fixed.pcap -T fields -e tcp.stream 2>/dev/null | sort -u | wc -l)
[[ $nflows == 4 ]] || fail "--flows 4 gave $nflows TCP streams"
gen_pcap --count 2000 --imix --ipv6 --vlan --seed 5 --out imix.pcap
check_tshark imix.pcap
[[ $(tshark -n -r imix.pcap -T fields -e frame.len 2>/dev/null | sort -un | tr '\n' ' ') == "70 590 1514 " ]] \
    || fail "--imix --ipv6 --vlan sizes (60 raised to the 70-byte minimum of VLAN IPv6/UDP)"

log "compare: formats"
editcap -F pcapng mix.pcap mix.pcapng
editcap -F pcap mix.pcap mix-us.pcap
gen_pcap --count $N --mix --seed 7 --big-endian --out mix-be.pcap
gen_pcap --count $N --mix --seed 7 --usec --big-endian --out mix-us-be.pcap
for f in mix.pcapng mix-us.pcap mix-be.pcap mix-us-be.pcap; do
    expect_ok "multiset vs $f" pcap_compare multiset mix.pcap "$f"
    expect_ok "same-order vs $f" pcap_compare same-order mix.pcap "$f"
    expect_ok "headers --ts vs $f" pcap_compare headers --ts mix.pcap "$f"
done
expect_ok "validate all formats" pcap_compare validate mix.pcapng mix-us.pcap mix-be.pcap mix-us-be.pcap
[[ $(pcap_compare count -q mix.pcapng) == "$N" ]] || fail "count -q on pcapng"
# A pcapng written by dumpcap/tshark itself (SHB options, IDB with if_tsresol=9).
tshark -r mix.pcap -F pcapng -w mix-tshark.pcapng 2>/dev/null
expect_ok "multiset vs tshark pcapng" pcap_compare multiset mix.pcap mix-tshark.pcapng

log "compare: splits and loops"
mkdir split
editcap -c 3000 mix.pcap split/part.pcap
touch split/.in-progress.pcap.part
expect_ok "multiset vs split files (directory argument)" pcap_compare multiset mix.pcap split
expect_mismatch "same-order vs reversed" pcap_compare same-order mix.pcap "$(ls split/*.pcap | tail -n 1)"
mergecap -F nsecpcap -a -w twice.pcap mix.pcap mix.pcapng
expect_ok "--loops 2" pcap_compare multiset --loops 2 mix.pcap twice.pcap
expect_mismatch "--loops 2 vs one copy" pcap_compare multiset --loops 2 mix.pcap mix.pcap
expect_mismatch "exact vs two copies" pcap_compare multiset mix.pcap twice.pcap
expect_ok "--min vs two copies" pcap_compare multiset --min mix.pcap twice.pcap

log "compare: detects a missing, an extra and a changed packet, and truncation"
editcap mix.pcap missing.pcap 4321 >/dev/null
expect_mismatch "missing packet" pcap_compare multiset mix.pcap missing.pcap
grep -q 'missing 1, extra 0' out.txt || { cat out.txt >&2; fail "missing packet: wrong counts"; }
expect_mismatch "missing packet with --min" pcap_compare multiset --min mix.pcap missing.pcap
expect_mismatch "missing packet, same-order" pcap_compare same-order mix.pcap missing.pcap

gen_pcap --count 1 --seed 99 --out one.pcap
mergecap -F nsecpcap -w extra.pcap mix.pcap one.pcap
expect_mismatch "extra packet" pcap_compare multiset mix.pcap extra.pcap
grep -q 'missing 0, extra 1 (of which 1 not in A)' out.txt || { cat out.txt >&2; fail "extra: counts"; }
expect_ok "extra packet is fine with --min" pcap_compare multiset --min mix.pcap extra.pcap

python3 - mix.pcap changed.pcap truncated.pcap <<'PY'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
off = 24
for _ in range(500):  # walk to record 500
    caplen = int.from_bytes(d[off + 8:off + 12], "little")
    off += 16 + caplen
d[off + 16 + 40] ^= 0x01  # one bit in record 500's data
open(sys.argv[2], "wb").write(d)
open(sys.argv[3], "wb").write(d[:-5])
PY
expect_mismatch "changed packet" pcap_compare multiset mix.pcap changed.pcap
grep -q 'missing 1, extra 1' out.txt || { cat out.txt >&2; fail "changed packet: counts"; }
expect_mismatch "changed packet, headers" pcap_compare headers mix.pcap changed.pcap
grep -q 'record 500: data: first differing byte 40' out.txt || { cat out.txt >&2; fail "headers: position"; }
expect_mismatch "truncated file, validate" pcap_compare validate truncated.pcap
rc=0
pcap_compare count truncated.pcap >out.txt 2>&1 || rc=$?
((rc == 2)) || fail "count of a truncated file: exit $rc, expected 2 (unreadable)"

log "compare: snaplen"
editcap -s 128 mix.pcap snap.pcap
expect_mismatch "snapped vs full" pcap_compare multiset mix.pcap snap.pcap
expect_ok "--snaplen 128" pcap_compare multiset --snaplen 128 mix.pcap snap.pcap
expect_ok "same-order --snaplen 128" pcap_compare same-order --snaplen 128 mix.pcap snap.pcap
expect_ok "validate snapped" pcap_compare validate snap.pcap

log "all checks passed"
