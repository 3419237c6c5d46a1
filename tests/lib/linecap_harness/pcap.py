"""Capture files: read pcap (microsecond and nanosecond, either byte order) and pcapng (SHB,
IDB with if_tsresol/if_tsoffset, EPB, SPB, OPB; several sections and interfaces), write pcap
and pcapng. Standard library only. tests/tools/pcap_compare.py is the command line that
compares them.
"""

import collections
import mmap
import os
import stat
import struct
import sys

PCAP_MAGICS = {
    # magic as read little-endian -> (byte order, nanosecond?)
    0xA1B2C3D4: ("<", False),
    0xD4C3B2A1: (">", False),
    0xA1B23C4D: ("<", True),
    0x4D3CB2A1: (">", True),
}
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_BOM = 0x1A2B3C4D
PCAPNG_IDB, PCAPNG_OPB, PCAPNG_SPB, PCAPNG_EPB = 1, 2, 3, 6


class CaptureError(Exception):
    pass


class Truncated(CaptureError):
    """The file ends inside its header or a record: what a file being written looks like."""


class Record:
    __slots__ = ("index", "ts_ns", "caplen", "length", "data", "linktype")

    def __init__(self, index, ts_ns, caplen, length, data, linktype):
        self.index = index
        self.ts_ns = ts_ns
        self.caplen = caplen
        self.length = length
        self.data = data  # memoryview or bytes
        self.linktype = linktype


class Capture:
    """One capture file. Iterating yields Records whose data is a view into the mapped file
    (copy what you keep: records() does); problems found on the way that do not stop
    parsing are collected in .problems (pcap_compare validate reports them)."""

    def __init__(self, path, growing=False):
        self.path = path
        # A file the daemon is still writing: its last record may be partly written, and
        # iteration ends before it instead of failing.
        self.growing = growing
        self.format = None
        self.problems = []
        self.snaplen = None
        self.linktype = None  # the file header's (pcap) or the first interface's (pcapng)

    def _open(self):
        try:
            f = open(self.path, "rb")
        except OSError as e:
            raise CaptureError(f"{self.path}: {e.strerror}") from None
        with f:
            st = os.fstat(f.fileno())
            # A pipe (e.g. bash's <(...)) cannot be mapped: read it whole.
            buf = f.read() if not stat.S_ISREG(st.st_mode) else b""
            if (st.st_size if stat.S_ISREG(st.st_mode) else len(buf)) == 0:
                raise Truncated(f"{self.path}: empty file (no file header)")
            return buf or mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def __iter__(self):
        try:
            yield from self._records()
        except Truncated:
            if not self.growing:
                raise

    def _records(self):
        buf = self._open()
        try:
            if len(buf) < 4:
                raise Truncated(f"{self.path}: {len(buf)} bytes, too short for a header")
            magic = struct.unpack_from("<I", buf, 0)[0]
            if magic in PCAP_MAGICS:
                yield from self._pcap(buf, *PCAP_MAGICS[magic])
            elif magic == PCAPNG_SHB:
                yield from self._pcapng(buf)
            else:
                raise CaptureError(f"{self.path}: not a pcap or pcapng file (magic 0x{magic:08x})")
        finally:
            # Views handed out must be released before the map can close; callers copy or
            # hash what they keep, so a failure here only means a view is still alive.
            try:
                if isinstance(buf, mmap.mmap):
                    buf.close()
            except BufferError:
                pass

    def _pcap(self, buf, bo, nano):
        self.format = "pcap-ns" if nano else "pcap-us"
        if bo == ">":
            self.format += "-be"
        if len(buf) < 24:
            raise Truncated(f"{self.path}: truncated pcap file header ({len(buf)} of 24 bytes)")
        _, vmaj, vmin, _, _, snaplen, linktype = struct.unpack_from(bo + "IHHiIII", buf, 0)
        linktype &= 0x0FFFFFFF
        self.snaplen = snaplen
        self.linktype = linktype
        if (vmaj, vmin) != (2, 4):
            self.problems.append(f"file header: version {vmaj}.{vmin}, expected 2.4")
        frac_max = 1_000_000_000 if nano else 1_000_000
        mult = 1 if nano else 1000
        hdr = struct.Struct(bo + "IIII")
        off, n, end = 24, 0, len(buf)
        mv = memoryview(buf)
        try:
            while off < end:
                if end - off < 16:
                    raise Truncated(f"{self.path}: record {n} (offset {off}): truncated record "
                                       f"header ({end - off} of 16 bytes)")
                sec, frac, caplen, length = hdr.unpack_from(buf, off)
                off += 16
                if caplen > end - off:
                    raise Truncated(f"{self.path}: record {n} (offset {off - 16}): caplen "
                                       f"{caplen} but only {end - off} bytes left (truncated "
                                       f"record)")
                if caplen > length:
                    self.problems.append(f"record {n}: caplen {caplen} > len {length}")
                if snaplen and caplen > snaplen:
                    self.problems.append(f"record {n}: caplen {caplen} > snaplen {snaplen}")
                if frac >= frac_max:
                    self.problems.append(f"record {n}: timestamp fraction {frac} out of range")
                yield Record(n, sec * 1_000_000_000 + frac * mult, caplen, length,
                             mv[off:off + caplen], linktype)
                off += caplen
                n += 1
        finally:
            mv.release()

    def _pcapng(self, buf):
        self.format = "pcapng"
        end = len(buf)
        off = 0
        n = 0
        bo = "<"
        ifaces = []  # per section: (linktype, snaplen, ts_num, ts_den, ts_offset_s)
        mv = memoryview(buf)
        try:
            while off < end:
                if end - off < 12:
                    raise Truncated(f"{self.path}: offset {off}: truncated block header")
                btype = struct.unpack_from(bo + "I", buf, off)[0]
                if btype == PCAPNG_SHB:
                    bom = struct.unpack_from("<I", buf, off + 8)[0]
                    if bom == PCAPNG_BOM:
                        bo = "<"
                    elif bom == 0x4D3C2B1A:
                        bo = ">"
                    else:
                        raise CaptureError(f"{self.path}: offset {off}: bad section byte-order "
                                           f"magic 0x{bom:08x}")
                    if off == 0 and bo == ">":
                        self.format += "-be"
                    ifaces = []
                blen = struct.unpack_from(bo + "I", buf, off + 4)[0]
                if blen < 12 or blen % 4 or blen > end - off:
                    raise (CaptureError if blen < 12 or blen % 4 else Truncated)(f"{self.path}: offset {off}: block type 0x{btype:x} length "
                                       f"{blen} invalid or past end of file ({end - off} bytes "
                                       f"left)")
                trailer = struct.unpack_from(bo + "I", buf, off + blen - 4)[0]
                if trailer != blen:
                    raise CaptureError(f"{self.path}: offset {off}: block length {blen} != "
                                       f"trailing length {trailer}")
                body = off + 8
                body_end = off + blen - 4
                if btype == PCAPNG_IDB:
                    linktype, _, snaplen = struct.unpack_from(bo + "HHI", buf, body)
                    num, den, tsoff = 1, 1_000_000, 0  # default resolution: microseconds
                    for code, val in self._options(buf, bo, body + 8, body_end):
                        if code == 9 and len(val) >= 1:
                            r = val[0]
                            den = (2 ** (r & 0x7F)) if r & 0x80 else 10 ** r
                        elif code == 14 and len(val) >= 8:
                            tsoff = struct.unpack(bo + "q", bytes(val[:8]))[0]
                    ifaces.append((linktype, snaplen, num, den, tsoff))
                    if self.snaplen is None:
                        self.snaplen, self.linktype = snaplen, linktype
                elif btype in (PCAPNG_EPB, PCAPNG_OPB):
                    if btype == PCAPNG_EPB:
                        ifid, tsh, tsl, caplen, length = struct.unpack_from(bo + "IIIII", buf, body)
                    else:
                        ifid, _, tsh, tsl, caplen, length = struct.unpack_from(bo + "HHIIII", buf,
                                                                               body)
                    data = body + 20
                    if ifid >= len(ifaces):
                        raise CaptureError(f"{self.path}: offset {off}: packet for interface "
                                           f"{ifid}, but only {len(ifaces)} described")
                    if data + caplen > body_end:
                        raise CaptureError(f"{self.path}: offset {off}: caplen {caplen} exceeds "
                                           f"its block")
                    linktype, snaplen, _, den, tsoff = ifaces[ifid]
                    ts = (tsh << 32) | tsl
                    ts_ns = ts * 1_000_000_000 // den + tsoff * 1_000_000_000
                    if caplen > length:
                        self.problems.append(f"packet {n}: caplen {caplen} > len {length}")
                    if snaplen and caplen > snaplen:
                        self.problems.append(f"packet {n}: caplen {caplen} > snaplen {snaplen}")
                    yield Record(n, ts_ns, caplen, length, mv[data:data + caplen], linktype)
                    n += 1
                elif btype == PCAPNG_SPB:
                    if not ifaces:
                        raise CaptureError(f"{self.path}: offset {off}: simple packet block "
                                           f"before any interface description")
                    length = struct.unpack_from(bo + "I", buf, body)[0]
                    linktype, snaplen = ifaces[0][0], ifaces[0][1]
                    caplen = min(length, snaplen) if snaplen else length
                    caplen = min(caplen, body_end - body - 4)
                    data = body + 4
                    yield Record(n, None, caplen, length, mv[data:data + caplen], linktype)
                    n += 1
                off += blen
        finally:
            mv.release()

    @staticmethod
    def _options(buf, bo, off, end):
        while off + 4 <= end:
            code, length = struct.unpack_from(bo + "HH", buf, off)
            off += 4
            if code == 0:
                return
            yield code, buf[off:off + length]
            off += (length + 3) & ~3


def expand(paths):
    """Directories stand for their finished capture files."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            names = sorted(n for n in os.listdir(p)
                           if not n.startswith(".") and n.endswith((".pcap", ".pcapng")))
            if not names:
                print(f"note: directory {p} holds no *.pcap/*.pcapng file", file=sys.stderr)
            out.extend(os.path.join(p, n) for n in names)
        else:
            out.append(p)
    return out


def records(path, growing=False):
    """Every record of a file, its data copied (safe to keep)."""
    out = []
    for rec in Capture(path, growing):
        rec.data = bytes(rec.data)
        out.append(rec)
    return out


def count(path, growing=False):
    """Number of (complete) records in a file."""
    return sum(1 for _ in Capture(path, growing))


Packet = collections.namedtuple("Packet", "ts_ns length data")
Packet.__doc__ = "What a writer needs of a record (a Record has the same fields)."

NS = 1_000_000_000


def pcap_bytes(packets, nano=True, big_endian=False, snaplen=262144, linktype=1):
    """A pcap file: caplen is len(data), timestamps cut to microseconds unless nano."""
    bo = ">" if big_endian else "<"
    hdr = struct.Struct(bo + "IIII")
    parts = [struct.pack(bo + "IHHiIII", 0xA1B23C4D if nano else 0xA1B2C3D4, 2, 4, 0, 0, snaplen,
                         linktype)]
    for p in packets:
        sec, frac = divmod(p.ts_ns, NS)
        parts.append(hdr.pack(sec, frac if nano else frac // 1000, len(p.data), p.length))
        parts.append(bytes(p.data))
    return b"".join(parts)


def write_pcap(path, packets, **fmt):
    """Write pcap_bytes(packets, **fmt) to PATH."""
    with open(path, "wb") as f:
        f.write(pcap_bytes(packets, **fmt))


def _pcapng_block(block_type, body):
    body += b"\0" * (-len(body) % 4)
    return struct.pack("<II", block_type, len(body) + 12) + body + struct.pack("<I", len(body) + 12)


def pcapng_bytes(packets, snaplen=262144, linktype=1):
    """A little-endian pcapng file: one section, one interface at nanosecond resolution."""
    parts = [_pcapng_block(PCAPNG_SHB, struct.pack("<IHHq", PCAPNG_BOM, 1, 0, -1)),
             _pcapng_block(PCAPNG_IDB, struct.pack("<HHI", linktype, 0, snaplen)
                           + struct.pack("<HHB3x", 9, 1, 9) + b"\0" * 4)]
    for p in packets:
        parts.append(_pcapng_block(PCAPNG_EPB, struct.pack("<IIIII", 0, p.ts_ns >> 32, p.ts_ns & 0xFFFFFFFF,
                                                            len(p.data), p.length) + bytes(p.data)))
    return b"".join(parts)


def write_pcapng(path, packets, **fmt):
    with open(path, "wb") as f:
        f.write(pcapng_bytes(packets, **fmt))


def _written_files(path):
    """A directory stands for its capture files, in-progress ones (.NAME.part) included."""
    if not os.path.isdir(path):
        return [path]
    return [os.path.join(path, n) for n in sorted(os.listdir(path)) if n.endswith((".pcap", ".pcap.part"))]


def count_written(path):
    """Complete records in a file the daemon may still be writing (a vanished file: 0)."""
    try:
        return count(path, growing=True)
    except CaptureError:
        if os.path.exists(path):
            raise
        return 0


def concatenate(out, inputs):
    """OUT = the records of INPUTS one after the other, as a nanosecond pcap with the
    largest snap length of the inputs (262144 when there is none)."""
    packets, snaplen = [], 0
    for path in inputs:
        cap = Capture(path)
        packets += [Packet(r.ts_ns, r.length, bytes(r.data)) for r in cap]
        snaplen = max(snaplen, cap.snaplen or 0)
    write_pcap(out, packets, snaplen=snaplen or 262144)


USAGE = """usage: python3 -m linecap_harness.pcap COMMAND ARGS...
  count FILE_OR_DIR...   complete records in all of them, as the daemon writes them (a
                         directory: its *.pcap and in-progress .*.pcap.part files; a partly
                         written last record is not counted)
  count-each FILE...     the same, one line per file
  cat OUT IN...          IN's records one after the other into OUT (nanosecond pcap)"""


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    try:
        if len(args) >= 2 and args[0] == "count":
            print(sum(count_written(f) for a in args[1:] for f in _written_files(a)))
        elif len(args) >= 2 and args[0] == "count-each":
            for a in args[1:]:
                print(count_written(a))
        elif len(args) >= 2 and args[0] == "cat":
            concatenate(args[1], args[2:])
        else:
            print(USAGE, file=sys.stderr)
            return 2
    except CaptureError as e:
        print(f"pcap {args[0]}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
