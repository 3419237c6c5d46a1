#!/usr/bin/env python3
"""`linecap extract` against `tcpdump -r` over tcpdump's own test captures.

  tcpdump_suite_compare.py CORPUS_DIR LINECAP WORK_DIR [--max-mismatches N]

Every Ethernet capture of CORPUS_DIR (tcpdump's tests/*.pcap and *.pcapng; a file whose
link type is not Ethernet is left out, since the store filters Ethernet only) goes into
one store four times: as it is, rewritten as little-endian nanosecond pcap, as
big-endian microsecond pcap and as pcapng (nanosecond), the rewrites with their
timestamps shifted by whole seconds so that every file's middle packet falls in the same
second T0 (so the time windows below cut every file, not only whole files). Then for each
filter and time window, `linecap extract --format pcapng` over the whole store (scanning,
then again through indexes) is compared, file by file (the output's interface names say
which file a packet came from), with `tcpdump -r FILE FILTER` cut to the window. Records
are compared as (timestamp ns, caplen, len, bytes) in file order.

Prints one line per mismatch (file, variant, query, counts) and a summary; exits 1 when
there are more than --max-mismatches (default 0) mismatching (file, query) pairs.
"""

import concurrent.futures
import os
import struct
import subprocess
import sys
import time

FILTERS = ["", "ip", "tcp or udp", "ip6 or arp or vlan"]
T0 = 1893456000  # 2030-01-01T00:00:00Z: where the rewrites' middle packets land
NS = 1_000_000_000


def parse_pcap(data):
    """(link field, [(ts_ns, caplen, len, bytes)], error) as libpcap reads it (caplen cut
    to the snaplen, as libpcap does)."""
    magic = struct.unpack_from("<I", data)[0]
    order, nano = {0xA1B2C3D4: ("<", False), 0xA1B23C4D: ("<", True),
                   0xD4C3B2A1: (">", False), 0x4D3CB2A1: (">", True)}[magic]
    snaplen, link = struct.unpack_from(order + "II", data, 16)
    snap = snaplen if 0 < snaplen <= 262144 else 262144
    recs, pos = [], 24
    while pos + 16 <= len(data):
        sec, frac, caplen, length = struct.unpack_from(order + "IIII", data, pos)
        if caplen > 262144 or pos + 16 + caplen > len(data):
            return link, recs, "bad record at %d" % pos
        recs.append((sec * NS + (frac if nano else frac * 1000), min(caplen, snap), length,
                     data[pos + 16:pos + 16 + min(caplen, snap)]))
        pos += 16 + caplen
    return link, recs, None if pos == len(data) else "trailing bytes"


def parse_pcapng(data):
    """Interfaces' names and records of a pcapng (what our writer produces: one section,
    ns resolution) → {interface name: [(ts_ns, caplen, len, bytes)]}."""
    out, names, pos = {}, [], 0
    order = "<" if struct.unpack_from("<I", data, 8)[0] == 0x1A2B3C4D else ">"
    while pos + 12 <= len(data):
        btype, blen = struct.unpack_from(order + "II", data, pos)
        body = data[pos + 8:pos + blen - 4]
        if btype == 1:
            name, opos = "", 8
            while opos + 4 <= len(body):
                code, olen = struct.unpack_from(order + "HH", body, opos)
                if code == 0:
                    break
                if code == 2:
                    name = body[opos + 4:opos + 4 + olen].decode("utf-8", "replace")
                opos += 4 + (olen + 3) // 4 * 4
            names.append(name)
        elif btype == 6:
            iface, hi, lo, caplen, length = struct.unpack_from(order + "IIIII", body, 0)
            out.setdefault(names[iface], []).append(((hi << 32) | lo, caplen, length, body[20:20 + caplen]))
        pos += blen
    return out


def link_of(path):
    with open(path, "rb") as f:
        data = f.read(4096)
    if len(data) < 24:
        return None
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        order = "<" if struct.unpack_from("<I", data, 8)[0] == 0x1A2B3C4D else ">"
        pos = struct.unpack_from(order + "I", data, 4)[0]
        if pos + 12 > len(data):
            return None
        btype = struct.unpack_from(order + "I", data, pos)[0]
        return struct.unpack_from(order + "H", data, pos + 8)[0] if btype == 1 else None
    magic = struct.unpack_from("<I", data)[0]
    order = {0xA1B2C3D4: "<", 0xA1B23C4D: "<", 0xD4C3B2A1: ">", 0x4D3CB2A1: ">"}.get(magic)
    return struct.unpack_from(order + "I", data, 20)[0] & 0xFFFF if order else None


def write_pcap(path, recs, nano, big, snaplen=262144, link=1):
    o = ">" if big else "<"
    parts = [struct.pack(o + "IHHiIII", 0xA1B23C4D if nano else 0xA1B2C3D4, 2, 4, 0, 0, snaplen, link)]
    for ts, caplen, length, data in recs:
        sec, frac = divmod(ts, NS)
        parts.append(struct.pack(o + "IIII", sec, frac if nano else frac // 1000, caplen, length) + data)
    with open(path, "wb") as f:
        f.write(b"".join(parts))


def write_pcapng(path, recs, snaplen=262144):
    def block(t, body):
        body += b"\0" * (-len(body) % 4)
        return struct.pack("<II", t, len(body) + 12) + body + struct.pack("<I", len(body) + 12)
    parts = [block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)),
             block(1, struct.pack("<HHI", 1, 0, snaplen) + struct.pack("<HHB3x", 9, 1, 9) + b"\0" * 4)]
    for ts, caplen, length, data in recs:
        parts.append(block(6, struct.pack("<IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, caplen, length) + data))
    with open(path, "wb") as f:
        f.write(b"".join(parts))


def tcpdump(path, flt):
    r = subprocess.run(["tcpdump", "--time-stamp-precision=nano", "-r", path, "-w", "-"] + ([flt] if flt else []),
                       capture_output=True)
    if len(r.stdout) < 24:
        return [], r.stderr.decode(errors="replace").strip()
    _, recs, _ = parse_pcap(r.stdout)
    return recs, r.stderr.decode(errors="replace").strip() if r.returncode else ""


def main():
    corpus, linecap, work = sys.argv[1:4]
    max_mismatch = int(sys.argv[sys.argv.index("--max-mismatches") + 1]) if "--max-mismatches" in sys.argv else 0
    started = time.time()
    store = os.path.join(work, "store")
    os.makedirs(store, exist_ok=True)
    # --- the store: originals and rewrites; the reference records of each file ---
    files = {}  # store file name -> (original path, shift_ns, variant)
    skipped = 0
    for name in sorted(os.listdir(corpus)):
        path = os.path.join(corpus, name)
        if not name.endswith((".pcap", ".pcapng")) or link_of(path) != 1:
            skipped += 1
            continue
        stem = name.replace(".", "_")
        with open(path, "rb") as f:
            data = f.read()
        orig = stem + "-orig" + os.path.splitext(name)[1]
        with open(os.path.join(store, orig), "wb") as f:
            f.write(data)
        files[orig] = (path, 0, "orig")
        if data[:4] == b"\x0a\x0d\x0d\x0a":
            continue  # pcapng originals are compared as they are
        _, recs, _ = parse_pcap(data)
        if not recs:
            continue
        mid = sorted(r[0] for r in recs)[len(recs) // 2]
        shift = (T0 - mid // NS) * NS
        if any(r[0] + shift < 0 or r[0] + shift >= (1 << 32) * NS for r in recs):
            continue
        snaplen = struct.unpack_from("<I" if data[0] in (0xD4, 0x4D) else ">I", data, 16)[0]
        moved = [(r[0] + shift, r[1], r[2], r[3]) for r in recs]
        write_pcap(os.path.join(store, stem + "-ns.pcap"), moved, True, False, snaplen or 262144)
        write_pcap(os.path.join(store, stem + "-be.pcap"), moved, False, True, snaplen or 262144)
        write_pcapng(os.path.join(store, stem + "-ng.pcapng"), moved, snaplen or 262144)
        for v, ext in (("ns", ".pcap"), ("be", ".pcap"), ("ng", ".pcapng")):
            files[stem + "-" + v + ext] = (path, shift, v)
    originals = sorted({f[0] for f in files.values()})
    print(f"{len(originals)} Ethernet captures ({skipped} other files left out), {len(files)} files in the store")

    # tcpdump once per (original, filter): the rewrites hold the same packets, shifted.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        jobs = {(p, flt): pool.submit(tcpdump, p, flt) for p in originals for flt in FILTERS}
        ref = {k: v.result() for k, v in jobs.items()}

    windows = [("all", None, None), ("from T0", T0 * NS, None), ("to T0+0.5s", None, T0 * NS + NS // 2),
               ("[T0-1s, T0+1s)", (T0 - 1) * NS, (T0 + 1) * NS)]
    mismatches, pairs, details = 0, 0, []
    for mode in ("scan", "index"):
        if mode == "index":
            subprocess.run([linecap, "index", "--dir", store], capture_output=True)
        for flt in FILTERS:
            for wname, lo, hi in windows:
                cmd = [linecap, "extract", "--dir", store, "--format", "pcapng", "-o",
                       os.path.join(work, "out.pcapng")]
                if mode == "scan":
                    cmd.append("--no-index")
                if flt:
                    cmd += ["--filter", flt]
                if lo is not None:
                    cmd += ["--from", "%d.%09d" % divmod(lo, NS)]
                if hi is not None:
                    cmd += ["--to", "%d.%09d" % divmod(hi, NS)]
                r = subprocess.run(cmd, capture_output=True)
                with open(os.path.join(work, "out.pcapng"), "rb") as f:
                    got = parse_pcapng(f.read())
                for fname, (orig, shift, variant) in files.items():
                    pairs += 1
                    recs, err = ref[(orig, flt)]
                    want = [(t + shift, c, l, d) for t, c, l, d in recs
                            if (lo is None or t + shift >= lo) and (hi is None or t + shift < hi)]
                    have = got.get(fname, [])
                    if have != want:
                        mismatches += 1
                        details.append(f"MISMATCH {os.path.basename(orig)} [{variant}] {mode} filter='{flt}' "
                                       f"{wname}: linecap {len(have)}, tcpdump {len(want)}"
                                       + (f" (tcpdump: {err})" if err else ""))
    for d in details:
        print(d)
    print(f"{mismatches} mismatches in {pairs} (file, query) comparisons; {len(FILTERS) * len(windows) * 2} "
          f"extractions; {time.time() - started:.0f} s")
    return 1 if mismatches > max_mismatch else 0


if __name__ == "__main__":
    sys.exit(main())
