#!/usr/bin/env python3
"""Checks for the storage integration tests (python3 standard library only).

  prefix SENT DIR          the finished files of DIR (one stream), in name order, hold
                           exactly the first N packets of SENT, in order; prints N
  isb FILE                 the pcapng blocks of FILE as JSON: if_name, if_description,
                           packets (EPBs), isb (the last ISB's counters) or null
  interval DIR SECONDS MAX_DELAY
                           every finished file's packets lie within one SECONDS-long
                           wall-clock interval, its name carries its first packet's time,
                           and it was finished (manifest span_end_ns) between the
                           interval's end and MAX_DELAY seconds later; no two files share
                           an interval; prints one line per file
  order LOG DIR            the files the daemon log says retention deleted were deleted
                           oldest first (names sort by time), and every file left is newer
                           than every file deleted (except those listed after --held)

Exit 0 = as expected, 1 = not, 2 = usage or unreadable input.
"""
import calendar
import json
import os
import re
import struct
import sys
import time

from linecap_harness import pcap


def finished(directory):
    return sorted(n for n in os.listdir(directory)
                  if not n.startswith(".") and (n.endswith(".pcap") or n.endswith(".pcapng")))


def records(path):
    """(ts_ns, original length, captured bytes) of every record, copied out of the map."""
    return [(r.ts_ns, r.length, bytes(r.data)) for r in pcap.Capture(path)]


def cmd_prefix(args):
    sent, directory = args
    want = [(length, data) for _, length, data in records(sent)]
    got = []
    for name in finished(directory):
        got.extend((length, data) for _, length, data in records(os.path.join(directory, name)))
    if len(got) > len(want):
        print(f"prefix: {len(got)} packets in the files, only {len(want)} were sent")
        return 1
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            print(f"prefix: packet {i} in the files is not packet {i} sent")
            return 1
    print(len(got))
    return 0


def pcapng_blocks(path):
    with open(path, "rb") as f:
        data = f.read()
    off = 0
    while off + 12 <= len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        if blen < 12 or off + blen > len(data):
            raise ValueError(f"{path}: bad block at {off}")
        yield btype, data[off + 8: off + blen - 4]
        off += blen
    if off != len(data):
        raise ValueError(f"{path}: {len(data) - off} bytes after the last block")


def options(body):
    out, off = {}, 0
    while off + 4 <= len(body):
        code, length = struct.unpack_from("<HH", body, off)
        if code == 0:
            break
        out.setdefault(code, body[off + 4: off + 4 + length])
        off += 4 + ((length + 3) & ~3)
    return out


def cmd_isb(args):
    (path,) = args
    result = {"if_name": None, "if_description": None, "packets": 0, "isb": None}
    for btype, body in pcapng_blocks(path):
        if btype == 1:
            o = options(body[8:])
            result["if_name"] = o.get(2, b"").decode()
            result["if_description"] = o.get(3, b"").decode()
        elif btype == 6:
            result["packets"] += 1
        elif btype == 5:
            o = options(body[12:])
            u64 = lambda c: struct.unpack("<Q", o[c])[0] if c in o else None  # noqa: E731
            ts = lambda c: (struct.unpack("<II", o[c])[0] << 32 | struct.unpack("<II", o[c])[1]) if c in o else None  # noqa: E731
            result["isb"] = {"starttime": ts(2), "endtime": ts(3), "ifrecv": u64(4), "ifdrop": u64(5),
                             "filteraccept": u64(6), "comment": o.get(1, b"").decode()}
    print(json.dumps(result))
    return 0


NAME_TIME = re.compile(r"^(\d{8}T\d{6})\.(\d{9})Z")


def cmd_interval(args):
    directory, seconds, max_delay = args[0], float(args[1]), float(args[2])
    interval_ns, max_delay_ns = int(seconds * 1e9), int(max_delay * 1e9)
    bad = 0
    windows = set()
    for name in finished(directory):
        recs = records(os.path.join(directory, name))
        if not recs:
            print(f"{name}: empty")
            bad += 1
            continue
        first, last = recs[0][0], recs[-1][0]
        window = first // interval_ns
        boundary = (window + 1) * interval_ns
        m = NAME_TIME.match(name)
        named = calendar.timegm(time.strptime(m.group(1), "%Y%m%dT%H%M%S")) * 10**9 + int(m.group(2)) if m else None
        with open(os.path.join(directory, name + ".manifest")) as f:
            finished_ns = json.load(f)["span_end_ns"]
        delay = finished_ns - boundary
        problems = []
        if last // interval_ns != window:
            problems.append(f"packets span two intervals ({first} .. {last})")
        if named != first:
            problems.append(f"name says {named}, first packet {first}")
        if not 0 <= delay <= max_delay_ns:
            problems.append(f"finished {delay / 1e9:+.3f} s after its interval's end")
        if window in windows:
            problems.append("a second file for the interval")
        windows.add(window)
        print(f"{name}: {len(recs)} packets in interval ending {boundary}, finished {delay / 1e6:.1f} ms after it"
              + ("; " + "; ".join(problems) if problems else ""))
        bad += bool(problems)
    return 1 if bad else 0


DELETED = re.compile(r"retention: deleted \S*/([^/ ]+) \(")


def cmd_order(args):
    log, directory = args[0], args[1]
    held = set(args[args.index("--held") + 1:]) if "--held" in args else set()
    with open(log, errors="replace") as f:
        deleted = [m.group(1) for m in map(DELETED.search, f) if m]
    if deleted != sorted(deleted):
        print("order: retention did not delete oldest first: " + ", ".join(deleted))
        return 1
    left = [n for n in finished(directory) if n not in held]
    if deleted and left and min(left) < max(deleted):
        print(f"order: {min(left)} was kept although the newer {max(deleted)} was deleted")
        return 1
    for name in deleted:
        if os.path.exists(os.path.join(directory, name)) or os.path.exists(os.path.join(directory, name + ".manifest")):
            print(f"order: {name} (or its manifest) is still there")
            return 1
    print(f"{len(deleted)} deleted oldest first, {len(left)} kept")
    return 0


def main(argv):
    commands = {"prefix": cmd_prefix, "isb": cmd_isb, "interval": cmd_interval, "order": cmd_order}
    if len(argv) < 2 or argv[1] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        return commands[argv[1]](argv[2:])
    except (OSError, ValueError, pcap.CaptureError) as e:
        print(f"storage_check {argv[1]}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
