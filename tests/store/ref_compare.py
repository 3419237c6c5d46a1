#!/usr/bin/env python3
"""Reference side of the extract tests (python3 standard library only).

  ref_compare.py cut IN.pcap FROM_NS TO_NS OUT.pcap
      the records of IN with FROM_NS <= ts < TO_NS (nanoseconds; "-" = unbounded), in
      order, as a nanosecond pcap (tcpdump has no nanosecond time filter)
  ref_compare.py compare EXPECTED.pcap ACTUAL.pcap [--ties]
      exit 0 when both hold the same records (timestamp, caplen, len, bytes) in the same
      order; --ties: order within equal timestamps may differ (then ACTUAL must still be
      in timestamp order)
  ref_compare.py sample ALL.pcap
      shell assignments for queries: V4 (an IPv4 TCP source), V4PEER (its peer), TPORT (its
      server port), V6 (an IPv6 address of an untagged packet), V6VLAN (of a VLAN-tagged
      one), TS_MID (a packet timestamp mid-capture), TS_FIRST,
      TS_LAST, TS_STEP_PKT (the timestamp of packet 1234)
"""

import struct
import sys

from linecap_harness import pcap


def read(path):
    """(snaplen, [(ts_ns, caplen, len, bytes)]) of a complete capture file."""
    try:
        cap = pcap.Capture(path)
        recs = [(r.ts_ns, r.caplen, r.length, bytes(r.data)) for r in cap]
    except pcap.CaptureError as e:
        raise SystemExit(str(e)) from None
    return cap.snaplen, recs


def write(path, snaplen, recs):
    pcap.write_pcap(path, (pcap.Packet(ts, length, data) for ts, _, length, data in recs), snaplen=snaplen)


def main(argv):
    if len(argv) >= 5 and argv[0] == "cut":
        snaplen, recs = read(argv[1])
        lo = 0 if argv[2] == "-" else int(argv[2])
        hi = 1 << 64 if argv[3] == "-" else int(argv[3])
        write(argv[4], snaplen, [r for r in recs if lo <= r[0] < hi])
        return 0
    if len(argv) >= 3 and argv[0] == "compare":
        _, want = read(argv[1])
        _, got = read(argv[2])
        if "--ties" in argv:
            if any(got[i][0] > got[i + 1][0] for i in range(len(got) - 1)):
                print("compare: ACTUAL is not in timestamp order")
                return 1
            want, got = sorted(want), sorted(got)
        if want == got:
            print(f"compare: {len(got)} records identical")
            return 0
        n = next((i for i in range(min(len(want), len(got))) if want[i] != got[i]), min(len(want), len(got)))
        print(f"compare: MISMATCH: expected {len(want)} records, got {len(got)}; first difference at record {n}")
        for name, recs in (("expected", want), ("actual", got)):
            if n < len(recs):
                ts, caplen, length, data = recs[n]
                print(f"  {name}: ts={ts} caplen={caplen} len={length} data={data[:40].hex()}")
        return 1
    if len(argv) >= 2 and argv[0] == "sample":
        _, recs = read(argv[1])
        out = {"TS_FIRST": recs[0][0], "TS_LAST": recs[-1][0], "TS_MID": recs[len(recs) // 2][0],
               "TS_STEP_PKT": recs[min(1234, len(recs) - 1)][0]}
        for ts, caplen, length, d in recs:
            off = 12
            while d[off:off + 2] in (b"\x81\x00", b"\x88\xa8"):
                off += 4
            et, l3 = d[off:off + 2], off + 2
            if "V4" not in out and et == b"\x08\x00" and d[l3 + 9] == 6:
                out["V4"] = ".".join(str(b) for b in d[l3 + 12:l3 + 16])
                out["V4PEER"] = ".".join(str(b) for b in d[l3 + 16:l3 + 20])
                l4 = l3 + 4 * (d[l3] & 15)
                out["TPORT"] = min(struct.unpack_from("!HH", d, l4))
            key = "V6" if off == 12 else "V6VLAN"
            if key not in out and et == b"\x86\xdd":
                a = d[l3 + 8:l3 + 24]
                out[key] = ":".join(a[i:i + 2].hex() for i in range(0, 16, 2))
        for k, v in out.items():
            print(f"{k}={v}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
