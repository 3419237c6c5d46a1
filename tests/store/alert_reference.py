#!/usr/bin/env python3
"""Reference side of the alert pivot test (python3 standard library only).

  alert_reference.py records ALL.pcap OUTDIR
      picks four flows of ALL (an untagged IPv4 TCP flow, an untagged IPv6 UDP flow, a
      VLAN-tagged flow, another untagged IPv4 flow) and writes, as Suricata and Zeek
      document their JSON output:
        OUTDIR/eve.json   an alert with community_id (flow 1, from flow.start to the
                          alert's timestamp mid-flow), a flow event without community_id
                          (flow 2, flow.start..flow.end a part of the flow), a flow event
                          with community_id of flow 1 again (overlapping the alert: its
                          packets must be written once), a stats event (no flow)
        OUTDIR/zeek.json  conn records: with community_id (the VLAN flow 3, ts..ts+duration
                          its whole life) and without (flow 4, the first half)
        OUTDIR/expect.txt one line per flow record: FROM_NS TO_NS TCPDUMP-FILTER, the
                          equivalent query for `tcpdump -r` and ref_compare.py cut, with
                          --margin 0 (a record's span is [first, last] packet: TO = last + 1)
  alert_reference.py union OUT.pcap IN.pcap...
      the records of all INs, each distinct (timestamp, bytes) once, in timestamp order
"""

import base64
import hashlib
import ipaddress
import json
import os
import struct
import sys
import time

from linecap_harness import pcap

PROTO = {6: "tcp", 17: "udp"}


def flow_of(d):
    """(vlan, src, dst, proto, sport, dport) of an Ethernet frame, or None."""
    off, vlan = 12, False
    while d[off:off + 2] in (b"\x81\x00", b"\x88\xa8"):
        off, vlan = off + 4, True
    et, l3 = d[off:off + 2], off + 2
    if et == b"\x08\x00":
        proto, src, dst, l4 = d[l3 + 9], d[l3 + 12:l3 + 16], d[l3 + 16:l3 + 20], l3 + 4 * (d[l3] & 15)
    elif et == b"\x86\xdd":
        proto, src, dst, l4 = d[l3 + 6], d[l3 + 8:l3 + 24], d[l3 + 24:l3 + 40], l3 + 40
    else:
        return None
    if proto not in PROTO:
        return None
    sport, dport = struct.unpack_from("!HH", d, l4)
    return vlan, src, dst, proto, sport, dport


def community_id(src, dst, proto, sport, dport):
    """Community ID v1, seed 0 (Corelight's specification)."""
    if (src, sport) > (dst, dport):
        src, dst, sport, dport = dst, src, dport, sport
    data = struct.pack("!H", 0) + src + dst + struct.pack("!BBHH", proto, 0, sport, dport)
    return "1:" + base64.b64encode(hashlib.sha1(data).digest()).decode()


def eve_time(ns):
    """EVE's timestamp: microseconds and a +0000 offset."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + ".%06d+0000" % (ns % 10**9 // 1000)


def tcpdump_filter(key, any_vlan):
    _, src, dst, proto, sport, dport = key
    a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    five = f"host {a} and host {b} and {PROTO[proto]} port {sport} and {PROTO[proto]} port {dport}"
    # By Community ID a flow's packets are found whether tagged or not; tcpdump needs "vlan".
    return f"({five}) or (vlan and {five})" if any_vlan else five


def records(all_pcap, out):
    flows = {}
    for r in pcap.Capture(all_pcap):
        f = flow_of(bytes(r.data))
        if f is None:
            continue
        vlan, src, dst, proto, sport, dport = f
        if (src, sport) > (dst, dport):
            src, dst, sport, dport = dst, src, dport, sport
        flows.setdefault((vlan, src, dst, proto, sport, dport), []).append(r.ts_ns)
    big = [k for k, ts in flows.items() if len(ts) >= 6]
    pick = [next(k for k in big if not k[0] and len(k[1]) == 4 and k[3] == 6),
            next(k for k in big if not k[0] and len(k[1]) == 16 and k[3] == 17),
            next(k for k in big if k[0])]
    pick.append(next(k for k in big if not k[0] and len(k[1]) == 4 and k not in pick))
    eve, zeek, expect = [], [], []

    def addr(b):
        return str(ipaddress.ip_address(b))

    def eve_event(key, kind, start, end, stamp, cid):
        _, src, dst, proto, sport, dport = key
        e = {"timestamp": eve_time(stamp), "flow_id": 1000 + len(eve), "in_iface": "eth0", "event_type": kind,
             "src_ip": addr(src), "src_port": sport, "dest_ip": addr(dst), "dest_port": dport,
             "proto": PROTO[proto].upper()}
        if cid:
            e["community_id"] = community_id(src, dst, proto, sport, dport)
        e["flow"] = {"pkts_toserver": 3, "pkts_toclient": 3, "bytes_toserver": 300, "bytes_toclient": 300,
                     "start": eve_time(start)}
        if kind == "alert":
            e["alert"] = {"action": "allowed", "gid": 1, "signature_id": 2019401, "rev": 3,
                          "signature": "ET POLICY test", "category": "Misc", "severity": 2}
        else:
            e["flow"].update({"end": eve_time(end), "age": 0, "state": "closed", "reason": "timeout",
                              "alerted": False})
        eve.append(e)
        expect.append((start, (stamp if kind == "alert" else end) + 1, tcpdump_filter(key, cid)))

    def zeek_conn(key, start, end, cid):
        _, src, dst, proto, sport, dport = key
        z = {"ts": round(start / 1e9, 6), "uid": "C%016x" % (len(zeek) + 1), "id.orig_h": addr(src),
             "id.orig_p": sport, "id.resp_h": addr(dst), "id.resp_p": dport, "proto": PROTO[proto],
             "duration": round((end - start) / 1e9, 6), "orig_bytes": 300, "resp_bytes": 300, "conn_state": "SF",
             "missed_bytes": 0, "history": "ShADadFf", "orig_pkts": 3, "resp_pkts": 3}
        if cid:
            z["community_id"] = community_id(src, dst, proto, sport, dport)
        zeek.append(z)
        expect.append((start, end + 1, tcpdump_filter(key, cid)))

    t1, t2, t3, t4 = (flows[k] for k in pick)
    eve_event(pick[0], "alert", t1[0], None, t1[len(t1) // 2], True)
    eve_event(pick[1], "flow", t2[1], t2[-2], t2[-1], False)
    eve_event(pick[0], "flow", t1[len(t1) // 3], t1[-1], t1[-1], True)
    zeek_conn(pick[2], t3[0], t3[-1], True)
    zeek_conn(pick[3], t4[0], t4[len(t4) // 2], False)
    with open(os.path.join(out, "eve.json"), "w") as f:
        for e in eve[:2]:
            f.write(json.dumps(e) + "\n")
        f.write(json.dumps({"timestamp": eve_time(t1[0]), "event_type": "stats", "stats": {"uptime": 10}}) + "\n")
        f.write(json.dumps(eve[2]) + "\n")
    with open(os.path.join(out, "zeek.json"), "w") as f:
        for z in zeek:
            f.write(json.dumps(z) + "\n")
    with open(os.path.join(out, "expect.txt"), "w") as f:
        for lo, hi, flt in expect:
            f.write(f"{lo} {hi} {flt}\n")
    return 0


def union(out, inputs):
    seen, recs, snaplen = set(), [], 65535
    for path in inputs:
        cap = pcap.Capture(path)
        for r in cap:
            key = (r.ts_ns, bytes(r.data))
            if key not in seen:
                seen.add(key)
                recs.append((r.ts_ns, r.length, bytes(r.data)))
        snaplen = cap.snaplen
    recs.sort(key=lambda r: r[0])
    pcap.write_pcap(out, (pcap.Packet(ts, length, data) for ts, length, data in recs), snaplen=snaplen)
    print(f"union: {len(recs)} records")
    return 0


def main(argv):
    if len(argv) == 3 and argv[0] == "records":
        return records(argv[1], argv[2])
    if len(argv) >= 2 and argv[0] == "union":
        return union(argv[1], argv[2:])
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
