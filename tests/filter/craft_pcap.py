#!/usr/bin/env python3
"""Edge-case frames for the capture-filter tests (python3 standard library only).

gen_pcap.py writes realistic traffic, but every IPv4 header there has TTL 64 and no
options, no frame is fragmented, broadcast, double-tagged or carries an IPv6 extension
header, and host addresses are random. The filter tests need frames that make such
expressions decide both ways, with known addresses:

  hosts       198.18.7.7 <-> 198.19.8.8, 2001:db8::7 <-> 2001:db8::8 (plus the mix's)
  TTL         1, 32, 63, 64, 128, 255                       ip[8] < 64
  IP options  IHL 6, 7, 15 before TCP                       tcp[13] = 18 via ldxb 4*([14]&0xf)
  fragments   first (MF), middle and last (offset != 0)     port 80 must not match those
  VLAN        100 and 200 (802.1Q), QinQ 0x88a8/0x8100, 0x8100/0x8100, 0x9100
  IPv6        hop-by-hop + TCP, routing + UDP, fragment + TCP     ip6 protochain 6
  TCP flags   every single flag, SYN|FIN, SYN|ACK, Xmas, none
  ports       999, 1000, 1500, 2000, 2001 (portrange 1000-2000), 53, 80, 443
  L2          broadcast, IPv4/IPv6 multicast MACs, LLDP, 802.3/LLC frames, sizes 60..9014

Frames carry a unique 4-byte number (like gen_pcap's) so that every one is distinct;
checksums are valid where the protocol has one. Usage: craft_pcap.py --out FILE
[--max-size N] (frames above N bytes are left out: 1514 for a 1500-MTU veth).
"""

import argparse
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
from linecap_harness import pcap  # noqa: E402

ETH_IP, ETH_ARP, ETH_IP6, ETH_VLAN, ETH_QINQ, ETH_9100, ETH_LLDP = (
    0x0800, 0x0806, 0x86DD, 0x8100, 0x88A8, 0x9100, 0x88CC)
TCP, UDP, ICMP, ICMP6 = 6, 17, 1, 58
FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80

MAC_A = bytes.fromhex("020000000001")
MAC_B = bytes.fromhex("020000000002")
BCAST = b"\xff" * 6
V4_A, V4_B = bytes([198, 18, 7, 7]), bytes([198, 19, 8, 8])
V4_C, V4_D = bytes([198, 18, 200, 1]), bytes([198, 19, 0, 1])
V6_A = bytes.fromhex("20010db8000000000000000000000007")
V6_B = bytes.fromhex("20010db8000000000000000000000008")
V6_C = bytes.fromhex("20010db8ffff00000000000000000001")


def checksum(data: bytes) -> int:
    if len(data) & 1:
        data += b"\0"
    s = int.from_bytes(data, "big") % 0xFFFF
    if s == 0 and any(data):
        s = 0xFFFF
    return (~s) & 0xFFFF


class Frames:
    def __init__(self):
        self.frames = []

    def tag(self) -> bytes:
        return struct.pack("!I", 0xC0DE0000 + len(self.frames))

    def add(self, frame: bytes, size: int = 0):
        if len(frame) < max(60, size):
            frame += b"\0" * (max(60, size) - len(frame))
        self.frames.append(frame)


def l4(proto, sip, dip, sport, dport, payload, flags=ACK, v6=False, icmp_type=8):
    if v6:
        pseudo_len = lambda n: sip + dip + struct.pack("!IxxxB", n, proto)  # noqa: E731
    else:
        pseudo_len = lambda n: sip + dip + struct.pack("!xBH", proto, n)  # noqa: E731
    if proto == TCP:
        hdr = struct.pack("!HHIIBBHHH", sport, dport, 1000, 2000 if flags & ACK else 0, 5 << 4, flags,
                          65535, 0, 0)
        c = checksum(pseudo_len(len(hdr) + len(payload)) + hdr + payload)
        return hdr[:16] + struct.pack("!H", c) + hdr[18:] + payload
    if proto == UDP:
        hdr = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
        c = checksum(pseudo_len(len(hdr) + len(payload)) + hdr + payload) or 0xFFFF
        return hdr[:6] + struct.pack("!H", c) + payload
    hdr = struct.pack("!BBHHH", icmp_type, 0, 0, 0x1234, 1)
    c = checksum((pseudo_len(len(hdr) + len(payload)) if v6 else b"") + hdr + payload)
    return hdr[:2] + struct.pack("!H", c) + hdr[4:] + payload


def ipv4(proto, sip, dip, body, ttl=64, options=b"", frag=0x4000, ident=1):
    assert len(options) % 4 == 0
    ihl = 5 + len(options) // 4
    hdr = struct.pack("!BBHHHBBH", 0x40 | ihl, 0, ihl * 4 + len(body), ident, frag, ttl, proto, 0) + sip + dip
    hdr += options
    return hdr[:10] + struct.pack("!H", checksum(hdr)) + hdr[12:] + body


def ipv6(nh, sip, dip, body, hlim=64):
    return struct.pack("!IHBB", 6 << 28, len(body), nh, hlim) + sip + dip + body


def eth(dst, src, ethertype, payload, tags=()):
    out = dst + src
    for tpid, vid in tags:
        out += struct.pack("!HH", tpid, vid)
    return out + struct.pack("!H", ethertype) + payload


def build(max_size: int) -> list:
    f = Frames()

    def v4(proto, sport, dport, flags=ACK, size=0, ttl=64, options=b"", tags=(), sip=V4_A, dip=V4_B,
           dst=MAC_B, frag=0x4000, icmp_type=8):
        body = l4(proto, sip, dip, sport, dport, f.tag() + b"v4" * 8, flags, icmp_type=icmp_type)
        f.add(eth(dst, MAC_A, ETH_IP, ipv4(proto, sip, dip, body, ttl, options, frag, len(f.frames)), tags), size)

    def v6(proto, sport, dport, flags=ACK, size=0, tags=(), sip=V6_A, dip=V6_B, dst=MAC_B, icmp_type=128):
        body = l4(proto, sip, dip, sport, dport, f.tag() + b"v6" * 8, flags, v6=True, icmp_type=icmp_type)
        f.add(eth(dst, MAC_A, ETH_IP6, ipv6(proto, sip, dip, body), tags), size)

    # Known hosts, both directions, DNS and HTTPS.
    v4(UDP, 5353, 53)
    v4(UDP, 53, 5353, sip=V4_B, dip=V4_A)
    v4(TCP, 40000, 443, SYN)
    v4(TCP, 443, 40000, SYN | ACK, sip=V4_B, dip=V4_A)
    v4(TCP, 40001, 80, PSH | ACK, size=1514)
    v4(UDP, 40002, 53, sip=V4_C, dip=V4_D)
    v4(ICMP, 0, 0, sip=V4_C, dip=V4_B)
    v4(ICMP, 0, 0, sip=V4_B, dip=V4_C, icmp_type=0)
    v6(TCP, 40000, 443, SYN)
    v6(TCP, 443, 40000, SYN | ACK, sip=V6_B, dip=V6_A)
    v6(UDP, 5353, 53, sip=V6_C, dip=V6_B)
    v6(ICMP6, 0, 0, icmp_type=135)  # neighbour solicitation type
    # TTLs around 64.
    for ttl in (1, 32, 63, 64, 65, 128, 255):
        v4(UDP, 7000 + ttl, 7000, ttl=ttl)
    # IPv4 options: the TCP header moves (IHL 6, 7, 15); flags 18 = SYN|ACK.
    for words in (1, 2, 10):
        v4(TCP, 443, 40000, SYN | ACK, options=b"\x01" * (4 * words - 1) + b"\x00", sip=V4_B, dip=V4_A)
        v4(TCP, 40000, 80, SYN, options=b"\x01" * (4 * words - 1) + b"\x00")
    # Fragments: first (MF, offset 0), middle and last (offset != 0). A non-first fragment's
    # payload looks like a TCP header to port 80 but must not match `port 80`.
    body = l4(TCP, V4_A, V4_B, 40003, 80, f.tag() + b"x" * 40, SYN)
    f.add(eth(MAC_B, MAC_A, ETH_IP, ipv4(TCP, V4_A, V4_B, body, frag=0x2000, ident=77)))
    f.add(eth(MAC_B, MAC_A, ETH_IP, ipv4(TCP, V4_A, V4_B, f.tag() + body, frag=0x2000 | 8, ident=77)))
    f.add(eth(MAC_B, MAC_A, ETH_IP, ipv4(TCP, V4_A, V4_B, f.tag() + body, frag=16, ident=77)))
    f.add(eth(MAC_B, MAC_A, ETH_IP, ipv4(UDP, V4_A, V4_B, f.tag() + b"\x00\x35" * 8, frag=0x0100, ident=78)))
    # TCP flags: each single flag, common pairs, Xmas, none.
    for flags in (FIN, SYN, RST, PSH, ACK, URG, ECE, CWR, SYN | FIN, SYN | ACK, FIN | ACK, RST | ACK,
                  FIN | PSH | URG, 0xFF, 0):
        v4(TCP, 41000 + flags, 8443, flags)
    v6(TCP, 41000, 8443, SYN | FIN)
    v6(TCP, 41001, 8443, RST)
    # Port ranges around 1000-2000, source and destination.
    for port in (999, 1000, 1500, 2000, 2001):
        v4(TCP, 50000, port, ACK)
        v4(UDP, port, 50000)
        v6(UDP, 50000, port)
    # VLANs: 100 and 200, QinQ (0x88a8 outer), double 0x8100, 0x9100.
    v4(TCP, 40010, 443, SYN, tags=[(ETH_VLAN, 100)])
    v4(UDP, 40011, 53, tags=[(ETH_VLAN, 100)])
    v6(UDP, 40012, 53, tags=[(ETH_VLAN, 100)])
    v4(TCP, 40013, 80, ACK, tags=[(ETH_VLAN, 200)])
    v4(UDP, 40014, 53, tags=[(ETH_VLAN, 0x2000 | 100)])  # priority 1, vid 100
    f.add(eth(BCAST, MAC_A, ETH_ARP, struct.pack("!HHBBH", 1, ETH_IP, 6, 4, 1) + MAC_A + V4_A + b"\0" * 6 + V4_B
              + f.tag(), [(ETH_VLAN, 200)]))
    v4(UDP, 40015, 53, tags=[(ETH_QINQ, 10), (ETH_VLAN, 100)])
    v4(TCP, 40016, 443, SYN, tags=[(ETH_VLAN, 10), (ETH_VLAN, 100)])
    v6(TCP, 40017, 443, SYN, tags=[(ETH_QINQ, 20), (ETH_VLAN, 200)])
    v4(UDP, 40018, 53, tags=[(ETH_9100, 30)])
    # IPv6 extension headers: hop-by-hop then TCP; routing (type 0, no segments left) then
    # UDP; fragment header then TCP. `ip6 and tcp` sees only the first next-header;
    # `ip6 protochain 6` follows the chain.
    tcp6 = l4(TCP, V6_A, V6_B, 40020, 443, f.tag() + b"e" * 12, SYN, v6=True)
    f.add(eth(MAC_B, MAC_A, ETH_IP6, ipv6(0, V6_A, V6_B, struct.pack("!BB", TCP, 0) + b"\x01\x04\0\0\0\0" + tcp6)))
    udp6 = l4(UDP, V6_A, V6_B, 40021, 53, f.tag() + b"r" * 12, v6=True)
    f.add(eth(MAC_B, MAC_A, ETH_IP6, ipv6(43, V6_A, V6_B, struct.pack("!BBBB", UDP, 0, 0, 0) + b"\0" * 4 + udp6)))
    tcp6 = l4(TCP, V6_A, V6_B, 40022, 80, f.tag() + b"f" * 12, SYN, v6=True)
    f.add(eth(MAC_B, MAC_A, ETH_IP6, ipv6(44, V6_A, V6_B, struct.pack("!BBHI", TCP, 0, 1, 99) + tcp6)))
    # L2: broadcast and multicast destinations, LLDP, 802.3 length + LLC.
    v4(UDP, 40030, 67, dst=BCAST, dip=b"\xff\xff\xff\xff")
    v4(UDP, 40031, 5353, dst=bytes.fromhex("01005e0000fb"), dip=bytes([224, 0, 0, 251]))
    v6(UDP, 40032, 5353, dst=bytes.fromhex("3333000000fb"), dip=bytes.fromhex("ff0200000000000000000000000000fb"))
    f.add(eth(bytes.fromhex("0180c200000e"), MAC_A, ETH_LLDP, b"\x02\x07\x04" + MAC_A + f.tag() + b"\0\0"))
    llc = b"\x42\x42\x03" + f.tag() + b"\0" * 35
    f.add(MAC_B + MAC_A + struct.pack("!H", len(llc)) + llc)
    # Sizes: a jumbo of each kind and minimum frames.
    v4(TCP, 40040, 443, PSH | ACK, size=9014)
    v4(UDP, 40041, 53, size=4000)
    v6(TCP, 40042, 443, PSH | ACK, size=9014)
    v4(UDP, 40043, 53, size=2048, tags=[(ETH_VLAN, 100)])
    v4(UDP, 40044, 9, size=60)
    v4(TCP, 40045, 9, SYN, size=101)
    v4(TCP, 40046, 9, SYN, size=99)
    v4(TCP, 40047, 9, SYN, size=100)

    return [fr for fr in f.frames if len(fr) <= max_size]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Edge-case frames for the capture-filter tests.")
    ap.add_argument("--out", "-o", required=True)
    ap.add_argument("--max-size", type=int, default=9014, help="leave out larger frames (default 9014)")
    ap.add_argument("--start-ns", type=int, default=1_700_000_100_000_000_000)
    ap.add_argument("--interval-ns", type=int, default=1000)
    args = ap.parse_args(argv)
    frames = build(args.max_size)
    pcap.write_pcap(args.out, (pcap.Packet(args.start_ns + i * args.interval_ns, len(fr), fr)
                               for i, fr in enumerate(frames)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
