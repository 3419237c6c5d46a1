#!/usr/bin/env python3
"""Deterministic test-traffic generator for linecap (python3 standard library only).

Writes a pcap file (nanosecond timestamps, magic 0xa1b23c4d, linktype 1 = Ethernet unless
--usec) whose content depends only on the options and --seed. Every frame is unique: the
packet's sequence number (u32, big endian) is written at the start of the L4 payload (ARP:
in the Ethernet trailer), and the IPv4 id carries its low 16 bits. IPv4/TCP/UDP/ICMP/ICMPv6
checksums are valid.

Frame sizes are Ethernet frame lengths without the FCS (60 = minimum, 1514 = MTU 1500,
9014 = MTU 9000). A size below what a packet type needs (headers + 4-byte sequence number,
e.g. 78 for IPv6/TCP) is raised to that minimum; ARP frames are always 60 bytes.

Addresses come from ranges reserved for benchmarking and documentation (IPv4 198.18.0.0/15,
IPv6 2001:db8::/32) and the MACs are locally administered unicast addresses, so the frames
are ignored by any host stack that receives them.

Examples:
  gen_pcap.py --count 10000 --mix --seed 7 --out mix.pcap
  gen_pcap.py --count 1000 --size 64 --proto udp --flows 8 --out small.pcap
  gen_pcap.py --count 500 --mix --jumbo --both-directions --tcp-flags --out j.pcap
"""

import argparse
import random
import struct
import sys

ETH_P_IP = 0x0800
ETH_P_ARP = 0x0806
ETH_P_IPV6 = 0x86DD
ETH_P_8021Q = 0x8100

IPPROTO_ICMP = 1
IPPROTO_TCP = 6
IPPROTO_UDP = 17
IPPROTO_ICMPV6 = 58

TCP_FIN, TCP_SYN, TCP_RST, TCP_PSH, TCP_ACK = 0x01, 0x02, 0x04, 0x08, 0x10
# Flag combinations cycled with --tcp-flags (per flow, so a flow looks like a connection).
TCP_FLAG_CYCLE = [
    TCP_SYN,
    TCP_SYN | TCP_ACK,
    TCP_ACK,
    TCP_PSH | TCP_ACK,
    TCP_PSH | TCP_ACK,
    TCP_ACK,
    TCP_FIN | TCP_ACK,
    TCP_RST,
]

# Packet types of --mix and their weights (percent-ish).
MIX_TYPES = [
    ("ipv4-tcp", 30),
    ("ipv4-udp", 22),
    ("ipv6-tcp", 12),
    ("ipv6-udp", 8),
    ("vlan-ipv4-tcp", 6),
    ("vlan-ipv4-udp", 5),
    ("vlan-ipv6-tcp", 3),
    ("vlan-ipv6-udp", 3),
    ("arp", 4),
    ("icmp", 4),
    ("icmpv6", 3),
]

COMMON_SIZES = [60, 64, 128, 256, 512, 576, 1024, 1280, 1500, 1514]
IMIX = [(60, 7), (590, 4), (1514, 1)]  # "simple IMIX" 64/594/1518 on the wire incl. FCS
DEFAULT_EPOCH_NS = 1_700_000_000_000_000_000  # 2023-11-14T22:13:20Z
SEQ_LEN = 4
MAX_FRAME = 9014 + 4  # jumbo plus one VLAN tag


def checksum(data: bytes) -> int:
    """Internet checksum (RFC 1071): 2^16 == 1 (mod 0xffff), so the one's-complement sum
    of the 16-bit words is the big-endian integer modulo 0xffff (0 read as 0xffff)."""
    if len(data) & 1:
        data += b"\0"
    s = int.from_bytes(data, "big") % 0xFFFF
    if s == 0 and any(data):
        s = 0xFFFF
    return (~s) & 0xFFFF


def parse_mac(text: str) -> bytes:
    parts = text.split(":")
    if len(parts) != 6:
        raise argparse.ArgumentTypeError(f"bad MAC address '{text}'")
    try:
        mac = bytes(int(p, 16) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad MAC address '{text}'") from None
    if mac[0] & 1:
        raise argparse.ArgumentTypeError(f"MAC '{text}' is multicast; use a unicast address")
    return mac


def parse_sizes(text: str):
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size list '{text}'") from None
    if not sizes:
        raise argparse.ArgumentTypeError("empty size list")
    for s in sizes:
        if not 60 <= s <= MAX_FRAME:
            raise argparse.ArgumentTypeError(f"frame size {s} outside 60..{MAX_FRAME}")
    return sizes


class Flow:
    __slots__ = ("kind", "v6", "vlan", "l4", "src_ip", "dst_ip", "sport", "dport",
                 "vid", "tcp_seq", "tcp_ack", "npkts", "icmp_id", "flow_label")

    def __init__(self, kind: str, rng: random.Random):
        self.kind = kind
        self.v6 = "ipv6" in kind or kind == "icmpv6"
        self.vlan = kind.startswith("vlan-")
        if kind.endswith("tcp"):
            self.l4 = IPPROTO_TCP
        elif kind.endswith("udp"):
            self.l4 = IPPROTO_UDP
        elif kind == "icmp":
            self.l4 = IPPROTO_ICMP
        elif kind == "icmpv6":
            self.l4 = IPPROTO_ICMPV6
        else:
            self.l4 = None  # arp
        if self.v6:
            self.src_ip = bytes.fromhex("20010db8") + rng.randbytes(12)
            self.dst_ip = bytes.fromhex("20010db8") + rng.randbytes(12)
        else:
            # 198.18.0.0/15 (RFC 2544 benchmarking): sources in 198.18/16, dests in 198.19/16.
            self.src_ip = bytes([198, 18, rng.randrange(256), rng.randrange(1, 255)])
            self.dst_ip = bytes([198, 19, rng.randrange(256), rng.randrange(1, 255)])
        self.sport = rng.randrange(1024, 65536)
        # Well-known ports whose dissectors accept random payloads (tshark flags random
        # DNS, NTP, SSH, MySQL and VXLAN payloads as malformed), plus any port.
        self.dport = rng.choice([80, 443, 514, 5060, 8080, 9000, rng.randrange(1024, 65536)])
        self.vid = rng.randrange(1, 4095)
        self.tcp_seq = rng.getrandbits(32)
        self.tcp_ack = rng.getrandbits(32)
        self.icmp_id = rng.randrange(65536)
        self.flow_label = rng.getrandbits(20)
        self.npkts = 0


def min_frame(flow: Flow) -> int:
    n = 14 + (4 if flow.vlan else 0)
    if flow.l4 is None:
        return 60
    n += 40 if flow.v6 else 20
    n += {IPPROTO_TCP: 20, IPPROTO_UDP: 8, IPPROTO_ICMP: 8, IPPROTO_ICMPV6: 8}[flow.l4]
    return max(60, n + SEQ_LEN)


def build_frame(flow: Flow, seq: int, size: int, reverse: bool, tcp_flags: int,
                src_mac: bytes, dst_mac: bytes, rng: random.Random) -> bytes:
    if reverse:
        src_mac, dst_mac = dst_mac, src_mac
        sip, dip, sport, dport = flow.dst_ip, flow.src_ip, flow.dport, flow.sport
    else:
        sip, dip, sport, dport = flow.src_ip, flow.dst_ip, flow.sport, flow.dport
    size = max(size, min_frame(flow))
    seq_bytes = struct.pack("!I", seq & 0xFFFFFFFF)

    eth = dst_mac + src_mac
    if flow.vlan:
        eth += struct.pack("!HH", ETH_P_8021Q, flow.vid)

    if flow.l4 is None:  # ARP request/reply (unicast), sequence number in the trailer
        oper = 2 if reverse else 1
        arp = struct.pack("!HHBBH", 1, ETH_P_IP, 6, 4, oper)
        arp += src_mac + sip + (dst_mac if reverse else b"\0" * 6) + dip
        frame = eth + struct.pack("!H", ETH_P_ARP) + arp + seq_bytes
        return frame + b"\0" * (60 - len(frame))

    ip_hdr_len = 40 if flow.v6 else 20
    l4_hdr_len = 20 if flow.l4 == IPPROTO_TCP else 8
    payload_len = size - len(eth) - 2 - ip_hdr_len - l4_hdr_len
    payload = seq_bytes + rng.randbytes(payload_len - SEQ_LEN)
    l4_len = l4_hdr_len + payload_len

    if flow.v6:
        pseudo = sip + dip + struct.pack("!IxxxB", l4_len, flow.l4)
    else:
        pseudo = sip + dip + struct.pack("!xBH", flow.l4, l4_len)

    if flow.l4 == IPPROTO_TCP:
        # Sequence numbers jump between segments so no GRO/LRO engine merges them.
        # The reverse direction uses the other side's sequence space.
        mine, theirs = (flow.tcp_ack, flow.tcp_seq) if reverse else (flow.tcp_seq, flow.tcp_ack)
        tseq = (mine + seq * 7919) & 0xFFFFFFFF
        tack = theirs if tcp_flags & TCP_ACK else 0
        hdr = struct.pack("!HHIIBBHHH", sport, dport, tseq, tack, 5 << 4, tcp_flags,
                          65535, 0, 0)
        csum = checksum(pseudo + hdr + payload)
        l4 = hdr[:16] + struct.pack("!H", csum) + hdr[18:] + payload
    elif flow.l4 == IPPROTO_UDP:
        hdr = struct.pack("!HHHH", sport, dport, l4_len, 0)
        csum = checksum(pseudo + hdr + payload) or 0xFFFF
        l4 = hdr[:6] + struct.pack("!H", csum) + payload
    else:  # ICMP / ICMPv6 echo request (reply in the reverse direction)
        if flow.l4 == IPPROTO_ICMP:
            itype = 0 if reverse else 8
            hdr = struct.pack("!BBHHH", itype, 0, 0, flow.icmp_id, seq & 0xFFFF)
            csum = checksum(hdr + payload)
        else:
            itype = 129 if reverse else 128
            hdr = struct.pack("!BBHHH", itype, 0, 0, flow.icmp_id, seq & 0xFFFF)
            csum = checksum(pseudo + hdr + payload)
        l4 = hdr[:2] + struct.pack("!H", csum) + hdr[4:] + payload

    if flow.v6:
        ip = struct.pack("!IHBB", (6 << 28) | flow.flow_label, l4_len, flow.l4, 64) + sip + dip
        ethertype = ETH_P_IPV6
    else:
        total = 20 + l4_len
        hdr = struct.pack("!BBHHHBBH", 0x45, 0, total, seq & 0xFFFF, 0x4000, 64, flow.l4, 0)
        hdr += sip + dip
        ip = hdr[:10] + struct.pack("!H", checksum(hdr)) + hdr[12:]
        ethertype = ETH_P_IP
    frame = eth + struct.pack("!H", ethertype) + ip + l4
    assert len(frame) == size, (len(frame), size)
    return frame


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description="Deterministic pcap generator for linecap tests.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--out", "-o", required=True, help="output pcap file ('-' = stdout)")
    ap.add_argument("--count", "-c", type=int, default=1000, help="packets (default 1000)")
    ap.add_argument("--seed", "-s", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--flows", "-f", type=int, default=64, help="distinct flows (default 64)")
    sz = ap.add_mutually_exclusive_group()
    sz.add_argument("--sizes", type=parse_sizes,
                    help="comma-separated frame sizes without FCS, picked at random")
    sz.add_argument("--size", type=int, help="one frame size for every packet (e.g. 64)")
    sz.add_argument("--imix", action="store_true",
                    help="simple IMIX: 60/590/1514 bytes in proportion 7:4:1")
    ap.add_argument("--mix", action="store_true",
                    help="realistic mix: IPv4/IPv6 TCP/UDP, VLAN-tagged v4/v6, ARP, ICMP, "
                         "ICMPv6 (default without --mix: one type, see --proto/--ipv6/--vlan)")
    ap.add_argument("--proto", choices=["udp", "tcp", "icmp"], default="udp",
                    help="L4 protocol without --mix (default udp)")
    ap.add_argument("--ipv6", action="store_true", help="IPv6 instead of IPv4 (without --mix)")
    ap.add_argument("--vlan", action="store_true", help="802.1Q-tag every flow (without --mix)")
    ap.add_argument("--jumbo", action="store_true",
                    help="about 1 in 8 IP packets gets a size in 1515..9014 (9014 at least once)")
    ap.add_argument("--tcp-flags", action="store_true",
                    help="TCP flows cycle SYN, SYN-ACK, ACK, PSH-ACK, FIN-ACK, RST "
                         "(default: PSH-ACK only)")
    ap.add_argument("--both-directions", action="store_true",
                    help="each flow alternates direction (addresses, ports and MACs swapped)")
    ap.add_argument("--src-mac", type=parse_mac, default=parse_mac("02:00:00:00:00:01"))
    ap.add_argument("--dst-mac", type=parse_mac, default=parse_mac("02:00:00:00:00:02"))
    ap.add_argument("--start-ns", type=int, default=DEFAULT_EPOCH_NS,
                    help=f"timestamp of the first packet in ns since the epoch "
                         f"(default {DEFAULT_EPOCH_NS})")
    ap.add_argument("--interval-ns", type=int, default=1000,
                    help="timestamp step between packets (default 1000 ns, must be > 0)")
    ap.add_argument("--usec", action="store_true",
                    help="write a microsecond pcap (magic 0xa1b2c3d4) instead of nanosecond")
    ap.add_argument("--big-endian", action="store_true",
                    help="write the pcap headers big-endian (reader tests)")
    ap.add_argument("--snaplen", type=int, default=262144, help="file header snaplen")
    ap.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
    args = ap.parse_args(argv)

    if args.count < 0:
        ap.error("--count must be >= 0")
    if args.flows < 1:
        ap.error("--flows must be >= 1")
    if args.interval_ns < 1:
        ap.error("--interval-ns must be > 0 (timestamps strictly increase)")
    if args.size is not None and not 60 <= args.size <= MAX_FRAME:
        ap.error(f"--size must be within 60..{MAX_FRAME}")

    rng = random.Random(args.seed)

    # Flow table.
    if args.mix:
        kinds = [k for k, _ in MIX_TYPES]
        weights = [w for _, w in MIX_TYPES]
        nflows = max(args.flows, len(kinds))
        # One flow of every type first, so every type is present; the rest by weight.
        flow_kinds = kinds + rng.choices(kinds, weights, k=nflows - len(kinds))
    else:
        if args.proto == "icmp":
            kind = "icmpv6" if args.ipv6 else "icmp"
            if args.vlan:
                ap.error("--vlan with --proto icmp is not supported")
        else:
            kind = ("vlan-" if args.vlan else "") + ("ipv6-" if args.ipv6 else "ipv4-") + args.proto
        nflows = args.flows
        flow_kinds = [kind] * nflows
    flows = [Flow(k, rng) for k in flow_kinds]

    def pick_size(flow: Flow, jumbo_pending: list) -> int:
        if flow.l4 is None:
            return 60
        if args.jumbo and (jumbo_pending[0] or rng.random() < 0.125):
            if jumbo_pending[0]:
                jumbo_pending[0] = False
                return 9014
            return rng.randrange(1515, 9015)
        if args.size is not None:
            return args.size
        if args.sizes:
            return rng.choice(args.sizes)
        if args.imix:
            return rng.choices([s for s, _ in IMIX], [w for _, w in IMIX])[0]
        # Default spread over 60..1514: common sizes and uniform sizes half and half.
        if rng.random() < 0.5:
            return rng.choice(COMMON_SIZES)
        return rng.randrange(60, 1515)

    bo = ">" if args.big_endian else "<"
    magic = 0xA1B2C3D4 if args.usec else 0xA1B23C4D
    out = sys.stdout.buffer if args.out == "-" else open(args.out, "wb")
    counts = {}
    total_bytes = 0
    max_len = 0
    jumbo_pending = [args.jumbo]
    try:
        out.write(struct.pack(bo + "IHHiIII", magic, 2, 4, 0, 0, args.snaplen, 1))
        ts = args.start_ns
        chunks = []
        for seq in range(args.count):
            flow = flows[seq] if (args.mix and seq < len(flows)) else flows[rng.randrange(nflows)]
            reverse = args.both_directions and (flow.npkts & 1) == 1
            flags = TCP_PSH | TCP_ACK
            if args.tcp_flags:
                flags = TCP_FLAG_CYCLE[(flow.npkts // (2 if args.both_directions else 1))
                                       % len(TCP_FLAG_CYCLE)]
                if reverse and flags == TCP_SYN:
                    flags = TCP_SYN | TCP_ACK
            flow.npkts += 1
            frame = build_frame(flow, seq, pick_size(flow, jumbo_pending), reverse, flags,
                                args.src_mac, args.dst_mac, rng)
            caplen = min(len(frame), args.snaplen)
            sec, nsec = divmod(ts, 1_000_000_000)
            frac = nsec // 1000 if args.usec else nsec
            chunks.append(struct.pack(bo + "IIII", sec, frac, caplen, len(frame)))
            chunks.append(frame[:caplen])
            if len(chunks) >= 2048:
                out.write(b"".join(chunks))
                chunks.clear()
            ts += args.interval_ns
            counts[flow.kind] = counts.get(flow.kind, 0) + 1
            total_bytes += len(frame)
            max_len = max(max_len, len(frame))
        out.write(b"".join(chunks))
    finally:
        if out is not sys.stdout.buffer:
            out.close()
        else:
            out.flush()

    if not args.quiet:
        kinds = ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))
        print(f"gen_pcap: wrote {args.count} packets, {total_bytes} bytes of frames "
              f"(max frame {max_len}) to {args.out} [{kinds}]", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
