#!/usr/bin/env python3
"""The query table's Stenographer column: the same packets as the generated store, in a store
that stenotype itself wrote and indexed, served by Debian's stenographer server
(tests/lib/linecap_harness/stenographer.py).

  steno_store.py up --store DIR --work W [--pps N] [--blocks B]
      a veth pair into a namespace of its own; the server on the capture end (its stenotype
      capturing); DIR's *.pcap merged in time order (mergecap) replayed by tcpreplay from
      the namespace at N packets/s (default 50,000: a rate stenotype keeps); once the finished
      files hold every packet, the server started again so that no file is added during the
      queries. Prints shell assignments (STENO_*). Leaves the server and the veth up for the
      queries; exit 3 (and STENO_REFUSED on stdout) when stenotype lost or missed a packet:
      the row is not measured on a store that is not the same.
  steno_store.py restart --work W
      a cold server: the running one ended, a new one started and ready (files listed,
      listening)
  steno_store.py down --work W
      the server and its stenotype ended, the veth and the namespace removed

The replay is merged in time order, so the store holds the packets in the order linecap's
answers give them (linecap extract merges its files by time): answers compare frame by frame.
Timestamps are the replay's, not the store's. A VLAN tag arrives in the packet socket's
metadata, not in the frame, and stenotype writes the frame: tagged frames are stored
without their tag (the queried conversations are untagged).
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "lib"))
from linecap_harness import stenographer, veth  # noqa: E402

QUERY_FILEAGE_S = 86400  # no rotation while queries run: every cold start sees the same files
REPLAY_FILEAGE_S = 10    # files finish within 10 s of the replay's end


def state_path(work):
    return os.path.join(work, "state.json")


def load(work):
    with open(state_path(work)) as fh:
        return json.load(fh)


def save(work, st):
    with open(state_path(work), "w") as fh:
        json.dump(st, fh)


def server_of(st):
    return stenographer.Server(st["work"], st["cap"], blocks=st["blocks"], port=st["port"])


def up(args):
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    files = sorted(glob.glob(os.path.join(args.store, "*.pcap")))
    if not files:
        raise SystemExit(f"steno_store.py: no *.pcap in {args.store}")
    pid = os.getpid()
    rig = veth.VethPair(f"lc-steno-{pid}", f"lcs{pid}a", f"lcs{pid}b")
    st = {"work": work, "ns": rig.ns, "cap": rig.cap, "peer": rig.peer, "blocks": args.blocks, "pgid": None}
    save(work, st)  # `down` undoes whatever of it exists
    rig.up()
    srv = stenographer.Server(work, rig.cap, blocks=args.blocks)
    st["port"] = srv.port
    srv.start(fileage_sec=REPLAY_FILEAGE_S)
    st["pgid"] = srv.pgid
    save(work, st)

    # The veth's own losses: frames its peer could not hand over, frames the capture end dropped.
    def veth_drops():
        return rig.link_stats("peer")["tx"]["dropped"] + rig.link_stats("cap")["rx"]["dropped"]
    rx0 = veth_drops()
    t0 = time.time()
    merge = subprocess.Popen(["mergecap", "-F", "pcap", "-w", "-"] + files, stdout=subprocess.PIPE)
    rep = subprocess.run(["ip", "netns", "exec", rig.ns, "tcpreplay", "-i", rig.peer, f"--pps={args.pps}", "-"],
                         stdin=merge.stdout, capture_output=True, text=True)
    merge.stdout.close()
    if merge.wait() != 0 or rep.returncode != 0:
        raise SystemExit(f"steno_store.py: replay failed: {rep.stderr.strip() or rep.stdout.strip()}")
    secs = time.time() - t0
    m = re.search(r"Successful packets:\s+(\d+)", rep.stdout)
    f = re.search(r"Failed packets:\s+(\d+)", rep.stdout)
    sent = int(m.group(1)) if m else 0
    failed = int(f.group(1)) if f else 0
    got = srv.wait_captured(sent, settle_s=REPLAY_FILEAGE_S + 5, timeout=REPLAY_FILEAGE_S + 120)
    kernel_drops = stenographer.drops(srv.text())
    rx_dropped = veth_drops() - rx0

    srv.stop()
    srv.start(fileage_sec=QUERY_FILEAGE_S)
    st["pgid"] = srv.pgid
    save(work, st)

    names = srv.finished_files()
    data = sum(os.path.getsize(os.path.join(srv.packets_dir, n)) for n in names)
    index = sum(os.path.getsize(os.path.join(srv.index_dir, n)) for n in names)
    out = {"STENO_CONFIG": srv.config, "STENO_SENT": sent, "STENO_PACKETS": got, "STENO_FILES": len(names),
           "STENO_BYTES": data, "STENO_INDEX_BYTES": index, "STENO_DROPS": kernel_drops,
           "STENO_RX_DROPPED": rx_dropped, "STENO_REPLAY_PPS": int(sent / secs) if secs > 0 else 0,
           "STENO_WORK": work}
    reason = ""
    if failed:
        reason = f"tcpreplay failed to send {failed} packets"
    elif got != sent:
        reason = f"stenotype's files hold {got} of the {sent} packets replayed"
    elif kernel_drops or rx_dropped:
        reason = f"stenotype's socket dropped {kernel_drops}, the veth {rx_dropped}"
    if args.expect and sent != args.expect:
        reason = reason or f"replayed {sent} packets, the store holds {args.expect}"
    if reason:
        out["STENO_REFUSED"] = reason
    for k, v in out.items():
        print(f"{k}='{v}'" if isinstance(v, str) else f"{k}={v}")
    return 3 if reason else 0


def restart(args):
    st = load(os.path.abspath(args.work))
    if st.get("pgid"):
        stenographer.stop_group(st["pgid"])
        st["pgid"] = None
        save(st["work"], st)
    srv = server_of(st).start(fileage_sec=QUERY_FILEAGE_S)
    st["pgid"] = srv.pgid
    save(st["work"], st)
    return 0


def down(args):
    path = state_path(os.path.abspath(args.work))
    if not os.path.exists(path):
        return 0
    st = load(os.path.abspath(args.work))
    if st.get("pgid"):
        stenographer.stop_group(st["pgid"])
    veth.VethPair(st["ns"], st["cap"], st["peer"]).down()
    os.unlink(path)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up")
    u.add_argument("--store", required=True)
    u.add_argument("--work", required=True)
    u.add_argument("--pps", type=int, default=50000)
    u.add_argument("--blocks", type=int, default=256, help="stenotype's ring, 1 MiB blocks")
    u.add_argument("--expect", type=int, default=0, help="the packets the store holds")
    for name in ("restart", "down"):
        sub.add_parser(name).add_argument("--work", required=True)
    args = ap.parse_args()
    return {"up": up, "restart": restart, "down": down}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
