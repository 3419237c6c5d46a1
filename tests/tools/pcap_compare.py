#!/usr/bin/env python3
"""Compare and check capture files (python3 standard library only).

Reads pcap (microsecond and nanosecond, either byte order) and pcapng (SHB, IDB with
if_tsresol/if_tsoffset, EPB, SPB, OPB; several sections and interfaces) through
tests/lib/linecap_harness/pcap.py. A FILE argument
that is a directory stands for its finished capture files: *.pcap and *.pcapng, sorted,
hidden files excluded (in-progress files have another name, so they are never read).

Modes (exit 0 = as expected, 1 = mismatch or invalid, 2 = usage or unreadable file):
  count FILE...                 packets and bytes per file and in total; --expect N checks
                                the total
  multiset A B...               the multiset of packets of A (x --loops) equals the union of
                                the B files; --min: every packet of A is in B at least
                                --loops times (extra copies and foreign packets are
                                reported, not failures); --snaplen N: A's packets are cut to
                                N bytes before comparing (B captured with a snaplen)
  same-order A B                the same packets in the same order
  headers A B                   record by record: caplen, len and data equal (--ts: the
                                timestamps too, within --ts-tolerance ns)
  validate FILE...              every file parses completely (no partial record), caplen <=
                                len, caplen <= snaplen, timestamp fraction in range;
                                --monotonic: timestamps never go back within a file;
                                --ts-within LO HI: every timestamp in [LO, HI] ns;
                                --unique: no packet occurs twice
  flows FILE...                 each IPv4/IPv6 TCP/UDP flow, both directions, lies in the files
                                of one group only (the group: --group REGEX of the file name,
                                default the rx queue q[0-9]+); --min-groups N
  list FILE                     one line per record (debugging); --limit N

A packet is identified by its original length and its captured bytes.

Examples:
  pcap_compare.py multiset sent.pcap out/              # everything captured, nothing extra
  pcap_compare.py multiset --loops 3 --min sent.pcap out/*.pcap
  pcap_compare.py count --expect 1000 out/
"""

import argparse
import collections
import hashlib
import os
import re
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
from linecap_harness.pcap import Capture, CaptureError, expand  # noqa: E402

def key_of(rec, snaplen=None):
    """Packet identity: original length and captured bytes (cut to snaplen when given)."""
    data = rec.data if snaplen is None else rec.data[:snaplen]
    h = hashlib.blake2b(data, digest_size=16)
    h.update(struct.pack("<I", rec.length))
    return h.digest()


def describe(rec, path=None):
    head = bytes(rec.data[:48]).hex()
    where = f"{path} " if path else ""
    ts = "" if rec.ts_ns is None else f" ts={rec.ts_ns // 10**9}.{rec.ts_ns % 10**9:09d}"
    return (f"{where}#{rec.index}{ts} caplen={rec.caplen} len={rec.length} "
            f"{summarize(rec)} data={head}{'...' if rec.caplen > 48 else ''}")


def summarize(rec):
    """A short protocol summary of an Ethernet frame, for difference reports."""
    d = bytes(rec.data[:64])
    if rec.linktype != 1 or len(d) < 14:
        return f"linktype={rec.linktype}"
    et = struct.unpack_from("!H", d, 12)[0]
    off = 14
    parts = []
    if et == 0x8100 and len(d) >= 18:
        parts.append(f"vlan {struct.unpack_from('!H', d, 14)[0] & 0xFFF}")
        et = struct.unpack_from("!H", d, 16)[0]
        off = 18
    if et == 0x0800 and len(d) >= off + 20:
        src, dst = d[off + 12:off + 16], d[off + 16:off + 20]
        parts.append(f"IPv4 {'.'.join(map(str, src))} > {'.'.join(map(str, dst))} "
                     f"proto {d[off + 9]}")
    elif et == 0x86DD and len(d) >= off + 40:
        parts.append(f"IPv6 next {d[off + 6]}")
    elif et == 0x0806:
        parts.append("ARP")
    else:
        parts.append(f"ethertype 0x{et:04x}")
    return "[" + ", ".join(parts) + "]"


def first_diff(ra, rb, snaplen=None):
    a = bytes(ra.data if snaplen is None else ra.data[:snaplen])
    b = bytes(rb.data)
    i = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), None)
    if i is None:
        if len(a) == len(b):
            return f"same bytes, len {ra.length} != {rb.length}"
        return f"one is a prefix of the other ({len(a)} vs {len(b)} bytes)"
    return f"first differing byte {i}: A {a[i]:02x}, B {b[i]:02x}"


def load_counter(paths, snaplen=None):
    c = collections.Counter()
    n = 0
    for p in paths:
        for rec in Capture(p):
            c[key_of(rec, snaplen)] += 1
            n += 1
    return c, n


def find_examples(paths, wanted, limit, snaplen=None):
    """Second pass: locate up to `limit` records whose key is in `wanted`."""
    found = []
    if not wanted or limit <= 0:
        return found
    for p in paths:
        for rec in Capture(p):
            if key_of(rec, snaplen) in wanted:
                found.append(describe(rec, p))
                if len(found) >= limit:
                    return found
    return found


def cmd_count(args):
    files = expand(args.files)
    if not files:
        print("count: no files", file=sys.stderr)
        return 2
    total_n = total_b = 0
    for p in files:
        n = b = 0
        for rec in Capture(p):
            n += 1
            b += rec.length
        total_n += n
        total_b += b
        if not args.quiet:
            print(f"{p}: {n} packets, {b} bytes")
    if args.quiet:
        print(total_n)
    elif len(files) > 1:
        print(f"total: {total_n} packets, {total_b} bytes in {len(files)} files")
    if args.expect is not None and total_n != args.expect:
        if not args.quiet:
            print(f"count: expected {args.expect} packets, found {total_n}")
        return 1
    return 0


def cmd_multiset(args):
    bfiles = expand(args.b)
    if not bfiles:
        print("multiset: no B files to compare with", file=sys.stderr)
        return 2
    ca, na = load_counter([args.a], args.snaplen)
    cb, nb = load_counter(bfiles)
    k = args.loops
    missing = collections.Counter()
    extra = collections.Counter()
    foreign = 0
    for key, cnt in ca.items():
        got = cb.get(key, 0)
        if got < cnt * k:
            missing[key] = cnt * k - got
    for key, got in cb.items():
        exp = ca.get(key, 0) * k
        if got > exp:
            extra[key] = got - exp
            if exp == 0:
                foreign += got - exp
    n_missing = sum(missing.values())
    n_extra = sum(extra.values())
    ok = n_missing == 0 and (args.min or n_extra == 0)
    want = f"{na} x {k} = {na * k}" if k != 1 else f"{na}"
    mode = "at least" if args.min else "exactly"
    print(f"multiset: A {args.a}: {want} packets expected {mode}; B: {nb} packets in "
          f"{len(bfiles)} file(s); missing {n_missing}, extra {n_extra} "
          f"(of which {foreign} not in A) -> {'OK' if ok else 'MISMATCH'}")
    if n_missing:
        print(f"  missing from B ({len(missing)} distinct), first ones:")
        for line in find_examples([args.a], set(missing), args.show, args.snaplen):
            print("    " + line)
    if n_extra:
        label = "extra in B (reported, not a failure with --min)" if args.min else "extra in B"
        print(f"  {label} ({len(extra)} distinct), first ones:")
        for line in find_examples(bfiles, set(extra), args.show):
            print("    " + line)
    return 0 if ok else 1


def _paired(args):
    ia, ib = iter(Capture(args.a)), iter(Capture(args.b))
    while True:
        ra = next(ia, None)
        rb = next(ib, None)
        if ra is None and rb is None:
            return
        yield ra, rb


def cmd_same_order(args):
    n = 0
    for ra, rb in _paired(args):
        if ra is None or rb is None:
            short = args.a if ra is None else args.b
            print(f"same-order: {short} ends after {n} packets; the other goes on: "
                  f"{describe(rb if ra is None else ra)} -> MISMATCH")
            return 1
        if key_of(ra, args.snaplen) != key_of(rb):
            print(f"same-order: packet {n} differs ({first_diff(ra, rb, args.snaplen)}) "
                  f"-> MISMATCH")
            print(f"    A: {describe(ra)}")
            print(f"    B: {describe(rb)}")
            return 1
        n += 1
    print(f"same-order: {n} packets, same order -> OK")
    return 0


def cmd_headers(args):
    n = 0
    for ra, rb in _paired(args):
        if ra is None or rb is None:
            short = args.a if ra is None else args.b
            print(f"headers: {short} ends after {n} records -> MISMATCH")
            return 1
        diffs = []
        if ra.caplen != rb.caplen:
            diffs.append(f"caplen {ra.caplen} != {rb.caplen}")
        if ra.length != rb.length:
            diffs.append(f"len {ra.length} != {rb.length}")
        if args.ts and ra.ts_ns is not None and rb.ts_ns is not None \
                and abs(ra.ts_ns - rb.ts_ns) > args.ts_tolerance:
            diffs.append(f"ts {ra.ts_ns} != {rb.ts_ns}")
        if bytes(ra.data) != bytes(rb.data):
            diffs.append("data: " + first_diff(ra, rb))
        if diffs:
            print(f"headers: record {n}: {'; '.join(diffs)} -> MISMATCH")
            print(f"    A: {describe(ra)}")
            print(f"    B: {describe(rb)}")
            return 1
        n += 1
    print(f"headers: {n} records equal{' (timestamps too)' if args.ts else ''} -> OK")
    return 0


def cmd_validate(args):
    files = expand(args.files)
    if not files:
        print("validate: no files", file=sys.stderr)
        return 2
    bad = 0
    seen = {} if args.unique else None
    for p in files:
        cap = Capture(p)
        n = 0
        last_ts = None
        back = 0
        outside = 0
        dups = []
        try:
            for rec in cap:
                n += 1
                if args.monotonic and rec.ts_ns is not None:
                    if last_ts is not None and rec.ts_ns < last_ts:
                        back += 1
                        if back <= 3:
                            cap.problems.append(f"record {rec.index}: timestamp {rec.ts_ns} < "
                                                f"previous {last_ts}")
                    last_ts = rec.ts_ns
                if args.ts_within and rec.ts_ns is not None:
                    lo, hi = args.ts_within
                    if not lo <= rec.ts_ns <= hi:
                        outside += 1
                        if outside <= 3:
                            cap.problems.append(f"record {rec.index}: timestamp {rec.ts_ns} outside "
                                                f"[{lo}, {hi}]")
                if seen is not None:
                    k = key_of(rec)
                    if k in seen:
                        dups.append(f"record {rec.index} duplicates {seen[k]}")
                    else:
                        seen[k] = f"{p}#{rec.index}"
        except CaptureError as e:
            cap.problems.append(str(e))
        if back > 3:
            cap.problems.append(f"... {back} records with decreasing timestamps in all")
        if outside > 3:
            cap.problems.append(f"... {outside} records with timestamps outside the range in all")
        if dups:
            cap.problems.extend(dups[:5])
            if len(dups) > 5:
                cap.problems.append(f"... {len(dups)} duplicates in all")
        status = "OK" if not cap.problems else "INVALID"
        print(f"{p}: {cap.format or '?'}, {n} records, snaplen {cap.snaplen}: {status}")
        for prob in cap.problems[:10]:
            print(f"    {prob}")
        if len(cap.problems) > 10:
            print(f"    ... {len(cap.problems)} problems in all")
        bad += bool(cap.problems)
    return 1 if bad else 0


def flow_of(rec):
    """Both directions of an IPv4/IPv6 TCP/UDP flow give the same key (the two endpoints
    sorted); None for anything else."""
    d = bytes(rec.data[:80])
    if rec.linktype != 1 or len(d) < 14:
        return None
    et, off = struct.unpack_from("!H", d, 12)[0], 14
    if et == 0x8100 and len(d) >= 18:
        et, off = struct.unpack_from("!H", d, 16)[0], 18
    if et == 0x0800 and len(d) >= off + 20:
        proto, ihl = d[off + 9], (d[off] & 0xF) * 4
        src, dst, l4 = d[off + 12:off + 16], d[off + 16:off + 20], off + ihl
    elif et == 0x86DD and len(d) >= off + 40:
        proto, src, dst, l4 = d[off + 6], d[off + 8:off + 24], d[off + 24:off + 40], off + 40
    else:
        return None
    if proto not in (6, 17) or len(d) < l4 + 4:
        return None
    sport, dport = struct.unpack_from("!HH", d, l4)
    return (proto,) + tuple(sorted([(src, sport), (dst, dport)]))


def cmd_flows(args):
    """Which file each flow landed in: every flow in exactly one file (per --group)."""
    files = expand(args.files)
    where = collections.defaultdict(set)
    groups = collections.Counter()
    for p in files:
        g = re.search(args.group, os.path.basename(p))
        group = g.group(0) if g else os.path.basename(p)
        for rec in Capture(p):
            f = flow_of(rec)
            if f is not None:
                where[f].add(group)
                groups[group] += 1
    split = [f for f, gs in where.items() if len(gs) > 1]
    for group, n in sorted(groups.items()):
        flows = sum(1 for gs in where.values() if group in gs)
        print(f"{group}: {n} packets, {flows} flows")
    print(f"{len(where)} flows in {len(groups)} groups, {len(split)} split over several")
    bad = bool(split) or len(groups) < args.min_groups
    if len(groups) < args.min_groups:
        print(f"fewer than {args.min_groups} groups hold packets", file=sys.stderr)
    return 1 if bad else 0


def cmd_list(args):
    for rec in Capture(args.file):
        if args.limit is not None and rec.index >= args.limit:
            break
        print(describe(rec))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description="Compare and check pcap/pcapng capture files.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    sub = ap.add_subparsers(dest="mode", required=True)

    p = sub.add_parser("count", help="count packets")
    p.add_argument("files", nargs="+")
    p.add_argument("--expect", type=int, help="exit 1 unless the total is N")
    p.add_argument("--quiet", "-q", action="store_true", help="print the total number only")
    p.set_defaults(func=cmd_count)

    p = sub.add_parser("multiset", help="A's packets == union of B's packets (any order)")
    p.add_argument("a")
    p.add_argument("b", nargs="+")
    p.add_argument("--loops", type=int, default=1, help="A was sent this many times")
    p.add_argument("--min", action="store_true",
                   help="only require every packet of A (x loops) to be present")
    p.add_argument("--snaplen", type=int, help="cut A's packets to N bytes before comparing")
    p.add_argument("--show", type=int, default=10, help="differences to print (default 10)")
    p.set_defaults(func=cmd_multiset)

    p = sub.add_parser("same-order", help="same packets in the same order")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--snaplen", type=int, help="cut A's packets to N bytes before comparing")
    p.set_defaults(func=cmd_same_order)

    p = sub.add_parser("headers", help="record headers (caplen, len) and data equal")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--ts", action="store_true", help="compare timestamps too")
    p.add_argument("--ts-tolerance", type=int, default=0, metavar="NS")
    p.set_defaults(func=cmd_headers)

    p = sub.add_parser("validate", help="strict structural check")
    p.add_argument("files", nargs="+")
    p.add_argument("--monotonic", action="store_true", help="timestamps never decrease")
    p.add_argument("--unique", action="store_true", help="no packet occurs twice")
    p.add_argument("--ts-within", type=int, nargs=2, metavar=("LO", "HI"),
                   help="every timestamp within [LO, HI] ns since the epoch")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("flows", help="each TCP/UDP flow (both directions) in one file group")
    p.add_argument("files", nargs="+")
    p.add_argument("--group", default=r"q[0-9]+", metavar="REGEX",
                   help="the part of a file name that names its group (default: q[0-9]+, the rx queue)")
    p.add_argument("--min-groups", type=int, default=1, metavar="N",
                   help="exit 1 unless at least N groups hold packets")
    p.set_defaults(func=cmd_flows)

    p = sub.add_parser("list", help="print records")
    p.add_argument("file")
    p.add_argument("--limit", type=int)
    p.set_defaults(func=cmd_list)

    args = ap.parse_args(argv)
    if getattr(args, "loops", 1) < 1:
        ap.error("--loops must be >= 1")
    try:
        return args.func(args)
    except CaptureError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(0)
