#!/usr/bin/env python3
"""Offline references for linecapd's capture policies (python3 standard library only),
written independently of the daemon's code: the harness's pcap reader and its own L2-L4 parse.

  flowcap IN.pcap EXPECTED.pcap (--bytes N | --packets N) --snaplen-after S [--proto P]
      What capture.flow_cap must write for IN, replayed in order on one rx queue: a flow
      (IP version, protocol, and its two address/port ends in either order; ports of
      TCP/UDP/SCTP, 0 otherwise and for non-first IPv4 fragments) keeps its packets whole
      while the wire bytes (--bytes) or packets (--packets) it carried before them are
      below N; each later packet keeps S bytes (S = 0: not written). With --proto P only
      untagged IP packets of protocol P are subject, as the cap's filter "tcp" (P = 6)
      selects them (libpcap's `tcp` reads the EtherType at offset 12: VLAN-tagged frames
      need `vlan and tcp`); the rest are written whole. Writes EXPECTED (nanosecond pcap)
      and prints the per-flow summary as `stats` does, plus the totals.
  stats FILE...
      Per flow, the bytes kept (captured bytes) and the packets cut (caplen < len), as
      JSON: {"flows": {KEY: [kept_bytes, cut]}, "packets": N, "cut": N}.
  dupes IN.pcap OUT.pcap --every K --seed S [--later N]
      IN with a copy of every K-th packet, right after it or, for every other copy with
      --later, N packets later (in another burst than its original); every other copy of
      an IPv4 packet has another TTL and header checksum, of an IPv6 packet another hop
      limit. Prints the number of copies.
"""

import argparse
import json
import random
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
from linecap_harness import pcap  # noqa: E402


def read_pcap(path):
    """(linktype, [Packet]) of a pcap or pcapng file."""
    cap = pcap.Capture(path)
    packets = [pcap.Packet(r.ts_ns, r.length, bytes(r.data)) for r in cap]
    return cap.linktype, packets


def write_pcap(path, linktype, packets):
    pcap.write_pcap(path, packets, linktype=linktype)


def l3_of(frame):
    """(ethertype, offset of the network header) after up to 4 VLAN tags, or None."""
    if len(frame) < 14:
        return None
    ethertype, off = struct.unpack_from("!H", frame, 12)[0], 14
    for _ in range(4):
        if ethertype not in (0x8100, 0x88A8, 0x9100):
            break
        if off + 4 > len(frame):
            return None
        ethertype, off = struct.unpack_from("!H", frame, off + 2)[0], off + 4
    return ethertype, off


def flow_of(frame):
    l3 = l3_of(frame)
    if l3 is None:
        return None
    ethertype, off = l3
    if ethertype == 0x0800 and off + 20 <= len(frame):
        proto = frame[off + 9]
        src, dst = frame[off + 12:off + 16], frame[off + 16:off + 20]
        l4 = off + 4 * (frame[off] & 0x0F)
        first = (struct.unpack_from("!H", frame, off + 6)[0] & 0x1FFF) == 0
        version = 4
    elif ethertype == 0x86DD and off + 40 <= len(frame):
        proto = frame[off + 6]
        src, dst = frame[off + 8:off + 24], frame[off + 24:off + 40]
        l4, first, version = off + 40, True, 6
    else:
        return None
    sport = dport = 0
    if proto in (6, 17, 132) and first and l4 + 4 <= len(frame):
        sport, dport = struct.unpack_from("!HH", frame, l4)
    a, b = (src.hex(), sport), (dst.hex(), dport)
    lo, hi = min(a, b), max(a, b)
    return f"v{version}/{proto}/{lo[0]}:{lo[1]}-{hi[0]}:{hi[1]}", proto


def stats(records):
    flows, cut = {}, 0
    for _, length, data in records:
        key = flow_of(data)
        name = key[0] if key else "non-ip"
        entry = flows.setdefault(name, [0, 0])
        entry[0] += len(data)
        if len(data) < length:
            entry[1] += 1
            cut += 1
    return {"flows": flows, "packets": len(records), "cut": cut}


def cmd_flowcap(args):
    linktype, records = read_pcap(args.input)
    limit = args.bytes if args.bytes is not None else args.packets
    carried, out, dropped = {}, [], 0
    for packet in records:
        length, data = packet.length, packet.data
        key = flow_of(data)
        untagged = struct.unpack_from("!H", data, 12)[0] in (0x0800, 0x86DD)
        if key is None or (args.proto is not None and (key[1] != args.proto or not untagged)):
            out.append(packet)
            continue
        before = carried.get(key[0], 0)
        carried[key[0]] = before + (length if args.bytes is not None else 1)
        if before < limit:
            out.append(packet)
        elif args.snaplen_after == 0:
            dropped += 1
        else:
            out.append(packet._replace(data=data[:args.snaplen_after]))
    write_pcap(args.expected, linktype, out)
    summary = stats(out)
    summary["dropped"] = dropped
    print(json.dumps(summary, sort_keys=True))


def cmd_stats(args):
    records = []
    for path in args.files:
        records += read_pcap(path)[1]
    print(json.dumps(stats(records), sort_keys=True))


def cmd_dupes(args):
    linktype, records = read_pcap(args.input)
    rng = random.Random(args.seed)
    out, copies, altered = [], 0, 0
    later = {}  # input index -> the copies to insert after it
    for i, packet in enumerate(records):
        data = packet.data
        out.append(packet)
        out.extend(later.pop(i, []))
        if (i + 1) % args.every:
            continue
        copy = bytearray(data)
        l3 = l3_of(data)
        if l3 and copies % 2 == 1:
            ethertype, off = l3
            if ethertype == 0x0800 and off + 12 <= len(copy):
                copy[off + 8] = (copy[off + 8] - 1 - rng.randrange(8)) & 0xFF
                copy[off + 10:off + 12] = struct.pack("!H", rng.randrange(65536))
                altered += 1
            elif ethertype == 0x86DD and off + 8 <= len(copy):
                copy[off + 7] = (copy[off + 7] - 1 - rng.randrange(8)) & 0xFF
                altered += 1
        at = i + args.later if args.later and copies % 2 == 0 else i
        duplicate = packet._replace(ts_ns=packet.ts_ns + 100, data=bytes(copy))
        if at == i:
            out.append(duplicate)
        else:
            later.setdefault(min(at, len(records) - 1), []).append(duplicate)
        copies += 1
    for i in sorted(later):  # the last packet's own copy
        out.extend(later[i])
    write_pcap(args.output, linktype, out)
    print(copies)
    print(f"dupes: {copies} copies, {altered} with another TTL/checksum or hop limit", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    fc = sub.add_parser("flowcap")
    fc.add_argument("input")
    fc.add_argument("expected")
    unit = fc.add_mutually_exclusive_group(required=True)
    unit.add_argument("--bytes", type=int)
    unit.add_argument("--packets", type=int)
    fc.add_argument("--snaplen-after", type=int, required=True)
    fc.add_argument("--proto", type=int)
    st = sub.add_parser("stats")
    st.add_argument("files", nargs="+")
    du = sub.add_parser("dupes")
    du.add_argument("input")
    du.add_argument("output")
    du.add_argument("--every", type=int, default=10)
    du.add_argument("--later", type=int, default=0)
    du.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    {"flowcap": cmd_flowcap, "stats": cmd_stats, "dupes": cmd_dupes}[args.mode](args)


if __name__ == "__main__":
    main()
