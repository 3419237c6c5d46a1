#!/usr/bin/env python3
"""Capture rate with one reading and one stalled live-feed consumer against none, in one
run (bench/run.sh feed; as root, hugepages reserved).

The capture side is bench/rfc2544.py's live-path rig, as bench/api/capture_rate.py uses
it: tcpreplay in a network namespace sends a fixed rate (--pps, default 20 kpps of
512-byte frames, `--timer nano`) into a veth; linecapd takes it through net_af_xdp with the
documented live settings and the feed on (feed.enabled, loopback, feed.buffer_bytes 16M)
and writes files into --out-dir (tmpfs; a janitor deletes finished files).

Windows of --window seconds alternate without / with two consumers, --rounds times
(A B A B ...): one reading (`nc 127.0.0.1 PORT | tcpdump -r - -w /dev/null`), one stalled
(`nc 127.0.0.1 PORT | sleep`: connects, never reads, so its feed drops). A "with" window
starts once linecapd reports both connected; between windows it waits until none is.
Per window: packets sent (the veth's tx counter), reaching the port, written and dropped
(by reason) per second, and the feed's packets sent and dropped. The ratio per round is
written pkt/s with over without, and the same of written/sent (the generator's rate varies
a little between windows). Written counts whole blocks (1 MiB, about 2000 frames of 512
bytes), so a window's rate is exact to a block: use windows of 15 s or more. Fails (exit 1, after the table) when a "with" window's
reading consumer got nothing or the stalled one dropped nothing: such a window measures
nothing."""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import bench  # noqa: E402  (Proc, stop_all, GEN_PCAP, free_port)
import rfc2544  # noqa: E402  (the veth rig and linecapd with the documented live settings)
from linecap_harness import prometheus  # noqa: E402


def counters(target):
    """linecapd's capture and feed counters; three tries on a busy machine."""
    for attempt in range(3):
        try:
            c = target.counters()
            s = prometheus.scrape(target.url)
            c["feed_sent"] = s.total("linecap_feed_sent_packets_total")
            c["feed_dropped"] = s.total("linecap_feed_dropped_packets_total")
            c["consumers"] = s.total("linecap_feed_consumers")
            return c
        except OSError:
            if attempt == 2:
                raise


def wait_consumers(target, n, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if counters(target)["consumers"] == n:
            return
        time.sleep(0.2)
    raise RuntimeError(f"linecapd did not report {n} feed consumers within {timeout} s")


def start_consumers(port):
    return [subprocess.Popen(["bash", "-c", cmd], start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
            for cmd in (f"nc 127.0.0.1 {port} | tcpdump -r - -w /dev/null",  # reads everything
                        f"nc 127.0.0.1 {port} | sleep 3600")]                 # never reads


def stop_consumers(procs):
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def window(target, seconds, port):
    procs = start_consumers(port) if port else []
    try:
        if procs:
            wait_consumers(target, 2)
            time.sleep(1)  # the stalled consumer's buffers fill: the window sees it dropping
        t0, c0, g0 = time.monotonic(), counters(target), rfc2544.tx_packets()
        time.sleep(seconds)
        t1, c1, g1 = time.monotonic(), counters(target), rfc2544.tx_packets()
    finally:
        stop_consumers(procs)
    wait_consumers(target, 0)
    dt = t1 - t0
    drops = {k: int(v - c0["drops"].get(k, 0)) for k, v in c1["drops"].items()}
    return {"seconds": dt, "sent_pps": (g1 - g0) / dt, "rx_pps": (c1["rx"] - c0["rx"]) / dt,
            "written_pps": (c1["got"] - c0["got"]) / dt, "drops": {k: v for k, v in drops.items() if v},
            "feed_sent_pps": (c1["feed_sent"] - c0["feed_sent"]) / dt,
            "feed_dropped_pps": (c1["feed_dropped"] - c0["feed_dropped"]) / dt, "load1": os.getloadavg()[0]}


def fmt_drops(d):
    return " ".join(f"{k}={v}" for k, v in sorted(d.items())) or "0"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", required=True, help="linecapd's output directory (tmpfs)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--window", type=float, default=10)
    ap.add_argument("--pps", type=int, default=20000)
    ap.add_argument("--size", type=int, default=512, help="frame size in bytes")
    ap.add_argument("--json", help="write the windows here")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    pcap = os.path.join(args.workdir, "traffic.pcap")
    subprocess.run([sys.executable, bench.GEN_PCAP, "-q", "--count", "4096", "--size", str(args.size),
                    "--flows", "256", "--out", pcap], check=True)
    total_s = int(args.rounds * 2 * (args.window + 60) + 120)
    feed_port = bench.free_port()
    gen = target = None
    rows, failures = [], []
    try:
        rfc2544.veth_up(rfc2544.DEFAULT_RIG)
        target = rfc2544.LinecapdTarget("linecapd", args.out_dir, args.workdir, sections={
            "feed": {"enabled": True, "listen": f"127.0.0.1:{feed_port}", "buffer_bytes": "16M"}})
        rfc2544.RIG.place_napi_threads()
        gen = rfc2544.fixed_rate_generator(pcap, args.pps, total_s, args.workdir)
        time.sleep(min(3.0, args.window / 2))
        if not gen.alive():
            raise RuntimeError(f"tcpreplay exited: {gen.text()[-500:]}")
        print("| round | window | sent pkt/s | reached the port pkt/s | written pkt/s | drops | "
              "feed sent pkt/s (both) | feed dropped pkt/s (stalled) | load (1 min) |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |", flush=True)
        for r in range(1, args.rounds + 1):
            pair = {}
            for kind, port in (("without", None), ("with", feed_port)):
                w = window(target, args.window, port)
                pair[kind] = w
                print(f"| {r} | {kind} | {w['sent_pps']:.0f} | {w['rx_pps']:.0f} | {w['written_pps']:.0f} | "
                      f"{fmt_drops(w['drops'])} | {w['feed_sent_pps']:.0f} | {w['feed_dropped_pps']:.0f} | "
                      f"{w['load1']:.1f} |", flush=True)
            if pair["with"]["feed_sent_pps"] < 0.5 * pair["with"]["written_pps"]:
                failures.append(f"round {r}: the reading consumer got {pair['with']['feed_sent_pps']:.0f} pkt/s "
                                f"of {pair['with']['written_pps']:.0f} written")
            if pair["with"]["feed_dropped_pps"] == 0:
                failures.append(f"round {r}: the stalled consumer dropped nothing")
            pair["ratio"] = pair["with"]["written_pps"] / pair["without"]["written_pps"] \
                if pair["without"]["written_pps"] else float("nan")
            # The same with each window's written rate over what the generator sent in it:
            # tcpreplay's own rate varies by a percent or so between windows.
            share = {k: w["written_pps"] / w["sent_pps"] if w["sent_pps"] else float("nan") for k, w in pair.items() if k in ("without", "with")}
            pair["share_ratio"] = share["with"] / share["without"] if share["without"] else float("nan")
            rows.append(pair)
        gen.stop()
    finally:
        rfc2544.stop_fixed_rate(gen, target)

    med = statistics.median
    wo = [p["without"] for p in rows]
    wi = [p["with"] for p in rows]
    print()
    print(f"median written pkt/s: without consumers {med(w['written_pps'] for w in wo):.0f}, with one reading and "
          f"one stalled {med(w['written_pps'] for w in wi):.0f}; median ratio with/without (per round): "
          f"{med(p['ratio'] for p in rows):.4f} (rounds: " + ", ".join(f"{p['ratio']:.4f}" for p in rows) + ")")
    print(f"written/sent with over written/sent without (per round): median {med(p['share_ratio'] for p in rows):.4f} "
          "(rounds: " + ", ".join(f"{p['share_ratio']:.4f}" for p in rows) + ")")
    drops_wo = {k: sum(w["drops"].get(k, 0) for w in wo) for w in wo for k in w["drops"]}
    drops_wi = {k: sum(w["drops"].get(k, 0) for w in wi) for w in wi for k in w["drops"]}
    print(f"capture drops counted by linecapd: without consumers {fmt_drops(drops_wo)}; with {fmt_drops(drops_wi)}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rounds": rows, "pps": args.pps, "size": args.size, "window_s": args.window}, fh, indent=1)
    for f in failures:
        print(f"FAIL: {f}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
