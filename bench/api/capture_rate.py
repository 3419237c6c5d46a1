#!/usr/bin/env python3
"""Capture rate with and without four streaming API queries, in one run (part 2 of
bench/api/run.sh; run through it, which starts `linecap serve` on the store).

The capture side is the live-path rig of bench/rfc2544.py (its default receive path: the
veth's kernel work in a NAPI thread of its own): tcpreplay in a network namespace sends a fixed rate (--pps, default 20 kpps of 512-byte frames; `--timer nano`,
bursts of pps/200 packets, so the generator sleeps between bursts) into a veth; linecapd
takes it through net_af_xdp with the documented live settings (worker on CPU 1 at its
real-time priority with idle sleep, writer on CPU 0, manifests and the background indexer
on) and writes files into --out-dir (tmpfs; a janitor deletes finished files). The
offered rate is below what capture sustains here, so without queries every packet is
written and the CPUs have idle time: the question is whether the queries, which may take
that idle time, take anything from capture.

Windows of --window seconds alternate without / with --queries clients (bench/api/
stream.py, at normal priority, each asking --query-path for an answer larger than the window
can carry and asking again whenever one ends; a "with" window starts once every query
streams, within 60 s, or the run fails), --rounds times (A B A B ...). Per window:
packets the generator sent (the veth's tx counter), packets that reached the port, were
written, and dropped (by reason), per second; for the "with" windows the bytes each query
streamed. Between windows it waits until the API has no query running, so a "without"
window has none. Fails (exit 1, after the table) when a query streamed nothing in a "with"
window: such a window measures nothing. Every wait is bounded; everything it started is
stopped however it ends."""
import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (Proc, stop_all, GEN_PCAP)
import rfc2544  # noqa: E402  (the veth rig and linecapd with the documented live settings)
from stream import token_of  # noqa: E402


STREAM_START_S = 60  # longest wait for the queries' first bytes before a "with" window


def api_get(url, token):
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def wait_no_queries(api, token, timeout):
    """Until /api/v1/status says no query runs (earlier clients' queries wind down, and serve
    answers, at idle priority: a slow answer is retried); returns the seconds waited, or
    raises."""
    t0 = time.monotonic()
    last = None
    while time.monotonic() - t0 < timeout:
        try:
            running = api_get(api + "/api/v1/status", token)["api"]["queries_running"]
            if running == 0:
                return time.monotonic() - t0
            last = f"{running} queries running"
        except OSError as e:  # URLError and timeouts included
            last = str(e)
        time.sleep(0.2)
    raise RuntimeError(f"the API did not report 0 queries running within {timeout:.0f} s ({last})")


def counters(target):
    """linecapd's counters; its metrics endpoint gets three tries (2 s each) on a busy machine."""
    for attempt in range(3):
        try:
            return target.counters()
        except OSError:
            if attempt == 2:
                raise


def start_clients(n, args):
    """n streaming clients; returns once every one of them receives its answer's bytes
    (the window is meant to measure capture while the queries stream), or raises."""
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "stream.py"), "--url", args.api + args.query_path,
                               "--token-file", args.token_file, "--max-seconds", str(args.window + 600)],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
             for _ in range(n)]
    deadline = time.monotonic() + STREAM_START_S
    waiting = {p.stdout.fileno(): i for i, p in enumerate(procs)}
    try:
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"queries {sorted(i + 1 for i in waiting.values())} did not start streaming "
                                   f"within {STREAM_START_S} s (linecap serve runs at idle priority: is the "
                                   f"machine saturated?)")
            ready, _, _ = select.select(list(waiting), [], [], left)
            for fd in ready:
                i = waiting.pop(fd)
                if procs[i].stdout.readline().strip() != "streaming":
                    raise RuntimeError(f"query {i + 1}: the client ended before its answer streamed")
    except BaseException:
        stop_clients(procs)
        raise
    return procs


def stop_clients(procs):
    """SIGTERM: each client prints what it received since the window started."""
    out = []
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            text, _ = p.communicate(timeout=10)  # a socket read ends within 0.5 s
            out.append(json.loads(text.strip().splitlines()[-1]))
        except (subprocess.TimeoutExpired, ValueError, IndexError):
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            out.append(None)
    return out


def window(target, seconds, clients, args):
    """One window; returns its per-second rates and, with clients, what each streamed."""
    procs = start_clients(clients, args) if clients else []
    try:
        for p in procs:
            os.killpg(p.pid, signal.SIGUSR1)  # their counts start with the window
        t0, c0, g0 = time.monotonic(), counters(target), rfc2544.tx_packets()
        time.sleep(seconds)
        t1, c1, g1 = time.monotonic(), counters(target), rfc2544.tx_packets()
    finally:
        streamed = stop_clients(procs)
    for i, s in enumerate(streamed):
        if s is None:
            raise RuntimeError(f"query {i + 1}: the client did not report")
    dt = t1 - t0
    drops = {k: int(v - c0["drops"].get(k, 0)) for k, v in c1["drops"].items()}
    return {"seconds": dt, "sent_pps": (g1 - g0) / dt, "rx_pps": (c1["rx"] - c0["rx"]) / dt,
            "written_pps": (c1["got"] - c0["got"]) / dt, "drops": {k: v for k, v in drops.items() if v},
            "streamed": streamed, "api_bytes_per_s": sum(s["bytes"] for s in streamed) / dt,
            "load1": os.getloadavg()[0]}


def fmt_drops(d):
    return " ".join(f"{k}={v}" for k, v in sorted(d.items())) or "0"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--api", required=True, help="the API's base URL (linecap serve on the store)")
    ap.add_argument("--token-file", required=True, help="the bench's tokens file (NAME TOKEN)")
    ap.add_argument("--query-path", default="/api/v1/packets", help="what each client asks for (default: everything)")
    ap.add_argument("--out-dir", required=True, help="linecapd's output directory (tmpfs)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--window", type=float, default=10)
    ap.add_argument("--queries", type=int, default=4)
    ap.add_argument("--pps", type=int, default=20000)
    ap.add_argument("--size", type=int, default=512, help="frame size in bytes")
    ap.add_argument("--json", help="write the windows here")
    args = ap.parse_args()
    token = token_of(args.token_file)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    pcap = os.path.join(args.workdir, "traffic.pcap")
    frames = 4096  # looped by tcpreplay
    subprocess.run([sys.executable, bench.GEN_PCAP, "-q", "--count", str(frames), "--size", str(args.size),
                    "--flows", "256", "--out", pcap], check=True)
    total_s = int(args.rounds * 2 * (args.window + 120) + 120)  # tcpreplay's own end, should this script not stop it
    gen = target = None
    rows, failures = [], []
    try:
        rfc2544.veth_up(rfc2544.DEFAULT_RIG)
        target = rfc2544.LinecapdTarget("linecapd", args.out_dir, args.workdir)
        rfc2544.RIG.place_napi_threads()  # attaching the XDP program can restart the veth's NAPI
        gen = rfc2544.fixed_rate_generator(pcap, args.pps, total_s, args.workdir)
        time.sleep(min(3.0, args.window / 2))  # the generator and the writer reach their steady state
        if not gen.alive():
            raise RuntimeError(f"tcpreplay exited: {gen.text()[-500:]}")
        print(f"| round | window | sent pkt/s | reached the port pkt/s | written pkt/s | drops | "
              f"API MB/s ({args.queries} queries) | MB each query streamed | load (1 min) |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |", flush=True)
        for r in range(1, args.rounds + 1):
            pair = {}
            for kind, clients in (("without", 0), ("with", args.queries)):
                waited = wait_no_queries(args.api, token, 60)
                w = window(target, args.window, clients, args)
                w["waited_for_queries_s"] = waited
                pair[kind] = w
                each = " / ".join(f"{s['bytes'] / 1e6:.1f}" for s in w["streamed"]) or "-"
                print(f"| {r} | {kind} | {w['sent_pps']:.0f} | {w['rx_pps']:.0f} | {w['written_pps']:.0f} | "
                      f"{fmt_drops(w['drops'])} | {w['api_bytes_per_s'] / 1e6:.1f} | {each} | {w['load1']:.1f} |",
                      flush=True)
                for i, s in enumerate(w["streamed"]):
                    if s["bytes"] == 0:
                        failures.append(f"round {r}: query {i + 1} streamed nothing ({s})")
            pair["ratio"] = pair["with"]["written_pps"] / pair["without"]["written_pps"] \
                if pair["without"]["written_pps"] else float("nan")
            rows.append(pair)
        gen.stop()
        # Settled when the port delivers nothing new and all it delivered is in a file or
        # counted as dropped (partial blocks reach the files within the flush interval).
        sent1, c1, last_rx, deadline = rfc2544.tx_packets(), None, -1, time.monotonic() + 30
        while time.monotonic() < deadline:
            time.sleep(0.3)
            c1 = counters(target)
            if c1["rx"] == last_rx and c1["got"] + sum(c1["drops"].values()) >= c1["rx"]:
                break
            last_rx = c1["rx"]
    finally:
        rfc2544.stop_fixed_rate(gen, target)

    med = statistics.median
    wo = [p["without"] for p in rows]
    wi = [p["with"] for p in rows]
    drops_wo, drops_wi = {}, {}
    for ws, acc in ((wo, drops_wo), (wi, drops_wi)):
        for w in ws:
            for k, v in w["drops"].items():
                acc[k] = acc.get(k, 0) + v
    # Since the start: the veth and linecapd are this run's own, so every packet the generator
    # ever sent is either written or counted as dropped, or lost unseen.
    sent = sent1
    written = c1["got"]
    dropped = sum(c1["drops"].values())
    print()
    print(f"median written pkt/s: without {med(w['written_pps'] for w in wo):.0f}, "
          f"with {args.queries} queries {med(w['written_pps'] for w in wi):.0f}; "
          f"median ratio with/without (per round): {med(p['ratio'] for p in rows):.3f} "
          "(rounds: " + ", ".join(f"{p['ratio']:.3f}" for p in rows) + ")")
    print(f"drops counted by linecapd: without queries {fmt_drops(drops_wo)}; with {fmt_drops(drops_wi)}")
    print(f"whole run (warm-up included; generator stopped, linecapd settled): sent {sent}, "
          f"written {int(written)}, dropped {int(dropped)} (counted), not accounted {int(sent - written - dropped)}")
    print(f"API streamed during the 'with' windows: median {med(w['api_bytes_per_s'] for w in wi) / 1e6:.1f} MB/s "
          f"for the {args.queries} queries together; per query and window "
          f"{min(s['bytes'] for w in wi for s in w['streamed']) / 1e6:.1f}..."
          f"{max(s['bytes'] for w in wi for s in w['streamed']) / 1e6:.1f} MB")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rounds": rows, "sent": sent, "written": written, "dropped": dropped, "pps": args.pps,
                       "size": args.size, "window_s": args.window}, fh, indent=1)
    for f in failures:
        print(f"FAIL: {f}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
