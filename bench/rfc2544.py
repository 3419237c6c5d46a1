#!/usr/bin/env python3
"""Zero-loss throughput on the live path, RFC 2544 style: a binary search over the offered
rate for the highest one at which nothing is lost over a trial (default 10 s).

Traffic: tcpreplay --pps from a network namespace into a veth pair this script creates
(and removes), pinned to CPU 0; captured on the root-namespace end by
  linecapd   through net_af_xdp or net_af_packet, one queue, one worker on CPU 1, files
             into a directory (a tmpfs, or the disk with --fs disk); loss = sent - written
  tcpdump    -w into the same directory, pinned to CPU 1, with a kernel buffer (-B) as
             large as linecapd's write blocks; loss = sent - captured
  testpmd    dpdk-testpmd rxonly on the same vdev, forwarding core on CPU 1; loss = sent - rx

  rfc2544.py --out-dir DIR [--disk-dir DIR --fs disk] [--blocks 32] [--o-direct auto|on|off]
             [--tools linecapd-af_xdp,linecapd-af_packet,tcpdump,testpmd-af_xdp]
             [--size 1024] [--trial 10] [--resolution 0.02]

On a disk, write stalls (an fsync, ext4 discard of deleted files) last longer than 32 MiB
of buffer covers at these rates: give both tools the same larger buffer (--blocks 256).

First a trial at tcpreplay's top speed tells the generator's ceiling; a tool that loses
nothing there is reported as ">= ceiling". Prints one line per trial and a table at the end;
--json FILE keeps the results. Needs root, tcpreplay, tcpdump, hugepages and bpffs.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (Proc, Janitor, scrape, msum, free_port, wait_until)

NS = f"lc-rfc-{os.getpid()}"
A = f"lcr{os.getpid()}a"   # capture side, root namespace
B = f"lcr{os.getpid()}b"   # generator side, in NS
# The same for linecapd and testpmd. busy_budget=0: no preferred busy polling. On a veth
# the XDP program and the copy into the socket's ring run in the sender's softirq, on
# the generator's CPU; the PMD's recvfrom() kicks then only take cycles from it
# (measured here: the generator reaches 0.50-0.60 Mpps of 1024-byte frames into
# testpmd with busy_budget=0, 0.45-0.48 with the default 64).
XDP_ARGS = "start_queue=0,queue_count=1,busy_budget=0"


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)


def veth_up():
    sh("ip", "netns", "add", NS)
    sh("ip", "link", "add", A, "type", "veth", "peer", "name", B, "netns", NS)
    for cmd in (["sysctl", "-qw", f"net.ipv6.conf.{A}.disable_ipv6=1"],
                ["ip", "netns", "exec", NS, "sysctl", "-qw", f"net.ipv6.conf.{B}.disable_ipv6=1"],
                ["ip", "link", "set", "dev", A, "up"],
                ["ip", "-n", NS, "link", "set", "dev", B, "up"]):
        sh(*cmd)
    deadline = time.time() + 5
    while time.time() < deadline:
        if open(f"/sys/class/net/{A}/operstate").read().strip() == "up":
            return
        time.sleep(0.05)
    raise RuntimeError("veth did not come up")


def veth_down():
    sh("ip", "link", "del", A, check=False)
    sh("ip", "netns", "del", NS, check=False)


def replay(pcap, pps, seconds, frames_in_file):
    """tcpreplay from NS at `pps` (or 'top') for about `seconds`; returns (sent, achieved pps)."""
    loops = max(1, int(round((pps if pps != "top" else 1_500_000) * seconds / frames_in_file)))
    args = bench.NICE + ["ip", "netns", "exec", NS, "taskset", "-c", "0", "tcpreplay", "-i", B, f"--loop={loops}",
            "--preload-pcap"]
    if pps == "top":
        args += ["--topspeed"]
    else:
        args += [f"--pps={pps}"]
    if pps == "top":
        args += [f"--duration={int(seconds)}"]
    out = subprocess.run(args + [pcap], capture_output=True, text=True).stdout
    m = re.search(r"Successful packets:\s+(\d+)", out)
    sent = int(m.group(1)) if m else 0
    m = re.search(r"Actual: \d+ packets .* sent in ([\d.]+) seconds", out)
    secs = float(m.group(1)) if m else seconds
    return sent, sent / secs if secs else 0.0


class LinecapdTarget:
    def __init__(self, pmd, outdir, workdir, o_direct=False, blocks=32):
        self.name = f"linecapd-{pmd}"
        self.outdir = os.path.join(outdir, self.name)
        os.makedirs(self.outdir, exist_ok=True)
        self.port = bench.free_port()
        if pmd == "af_xdp":
            device = f"net_af_xdp0,iface={A},{XDP_ARGS}"
        else:
            device = f"net_af_packet0,iface={A},qpairs=1,blocksz=4096,framesz=2048,framecnt=65536"
        cfg = os.path.join(workdir, f"{self.name}.yaml")
        with open(cfg, "w") as f:
            f.write(f"""eal:
  lcores: "0-1"
ports:
  - name: live
    device: "{device}"
    rx_queues: 1
    rx_descriptors: 4096
output:
  directory: "{self.outdir}"
  rotate: {{ size_mb: 256, interval_s: 0 }}
  blocks_per_queue: {blocks}
  block_size_kb: 1024
  o_direct: {"true" if o_direct else "false"}
  manifest: false
  index: true   # as shipped: the background indexer runs (idle priority, on CPU 0)
metrics:
  enabled: true
  listen: "127.0.0.1:{self.port}"
""")
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        self.janitor = bench.Janitor(self.outdir)
        self.proc = bench.Proc(bench.NICE + [bench.LINECAPD, "--config", cfg], os.path.join(workdir, f"{self.name}.log"))
        bench.RUNNING.append(self.proc)
        self.janitor.start()
        bench.wait_until(lambda: "capture running" in self.proc.text(), 60, "linecapd start", self.proc)
        bench.wait_until(lambda: bench._scrape_ok(self.url), 30, "linecapd metrics", self.proc)

    def counters(self):
        s = bench.scrape(self.url)
        drops = {}
        for (n, labels), v in s.items():
            if n == "linecap_dropped_packets_total":
                r = dict(labels)["reason"]
                drops[r] = drops.get(r, 0) + v
        return {"got": bench.msum(s, "linecap_written_packets_total"),
                "rx": bench.msum(s, "linecap_rx_packets_total"), "drops": drops}

    def trial_begin(self):
        self.c0 = self.counters()

    def trial_end(self, sent):
        # Settled when the port delivered nothing new for two reads in a row and everything
        # it delivered is accounted for (in a file or dropped): partial blocks reach the
        # files within the flush interval (100 ms), a backlog in the rings takes longer.
        c1, stable, last_rx = None, 0, -1
        deadline = time.time() + 30
        while time.time() < deadline:
            time.sleep(0.3)
            c1 = self.counters()
            worker_drops = sum(v for k, v in c1["drops"].items() if k not in ("nic_missed", "nic_error"))
            accounted = c1["got"] + worker_drops >= c1["rx"]
            stable = stable + 1 if (c1["rx"] == last_rx and accounted) else 0
            last_rx = c1["rx"]
            if stable >= 2 and c1["rx"] - self.c0["rx"] + sum(c1["drops"].values()) - sum(self.c0["drops"].values()) >= sent:
                break
            if stable >= 4:
                break
        got = c1["got"] - self.c0["got"]
        drops = {k: int(v - self.c0["drops"].get(k, 0)) for k, v in c1["drops"].items()}
        return int(got), {k: v for k, v in drops.items() if v}

    def close(self):
        self.proc.stop()
        bench.RUNNING.remove(self.proc)
        self.janitor.stop()


class TcpdumpTarget:
    name = "tcpdump"

    def __init__(self, outdir, workdir, buffer_kib):
        self.buffer_kib = buffer_kib  # -B: the same memory linecapd's write blocks get
        self.outdir = os.path.join(outdir, "tcpdump")
        os.makedirs(self.outdir, exist_ok=True)
        self.workdir = workdir

    def trial_begin(self):
        self.out = os.path.join(self.outdir, "t.pcap")
        self.proc = bench.Proc(bench.NICE + ["taskset", "-c", "1", "tcpdump", "-i", A, "-n", "-B", str(self.buffer_kib),
                                             "-w", self.out],
                               os.path.join(self.workdir, "tcpdump.log"))
        bench.RUNNING.append(self.proc)
        bench.wait_until(lambda: "listening on" in self.proc.text(), 10, "tcpdump start", self.proc)

    def trial_end(self, sent):
        time.sleep(1.0)
        self.proc.stop(sig=signal.SIGINT)
        bench.RUNNING.remove(self.proc)
        text = self.proc.text()
        m = re.search(r"(\d+) packets captured", text)
        k = re.search(r"(\d+) packets dropped by kernel", text)
        os.unlink(self.out)
        got = int(m.group(1)) if m else 0
        return got, ({"kernel": int(k.group(1))} if k and int(k.group(1)) else {})

    def close(self):
        pass


class TestpmdTarget:
    def __init__(self, pmd, workdir):
        self.name = f"testpmd-{pmd}"
        vdev = (f"net_af_xdp0,iface={A},{XDP_ARGS}" if pmd == "af_xdp"
                else f"net_af_packet0,iface={A},qpairs=1,blocksz=4096,framesz=2048,framecnt=65536")
        args = bench.NICE + [bench.TESTPMD, "-l", "0,1", "--in-memory", "--file-prefix", f"lcbench{os.getpid()}r",
                "--no-pci", "--vdev", vdev, "--log-level", "*:notice",
                "--", "--forward-mode=rxonly", "--nb-cores=1", "--stats-period=1", "--total-num-mbufs=65536"]
        self.proc = bench.Proc(args, os.path.join(workdir, f"{self.name}.log"))
        bench.RUNNING.append(self.proc)
        bench.wait_until(lambda: "RX-packets" in self.proc.text(), 60, "testpmd start", self.proc)

    def rx(self):
        vals = re.findall(r"RX-packets:\s+(\d+)", self.proc.text())
        return int(vals[-1]) if vals else 0

    def trial_begin(self):
        time.sleep(1.2)
        self.r0 = self.rx()

    def trial_end(self, sent):
        time.sleep(2.2)  # two stats periods
        return self.rx() - self.r0, {}

    def close(self):
        self.proc.stop(sig=signal.SIGINT)
        bench.RUNNING.remove(self.proc)


def trial(target, pcap, pps, seconds, frames):
    target.trial_begin()
    sent, achieved = replay(pcap, pps, seconds, frames)
    got, drops = target.trial_end(sent)
    lost = sent - got
    log(f"{target.name}: offered {pps if pps == 'top' else f'{pps:,}'} pps (achieved {achieved:,.0f}): "
        f"sent {sent:,}, captured {got:,}, lost {lost:,} ({100 * lost / max(sent, 1):.2f}%) {drops or ''}")
    return {"offered": pps, "achieved_pps": achieved, "sent": sent, "got": got, "lost": lost, "drops": drops}


def search(target, pcap, seconds, frames, resolution, max_trials):
    trials = []
    top = trial(target, pcap, "top", seconds, frames)
    trials.append(top)
    ceiling = int(top["achieved_pps"])
    if top["lost"] <= 0:
        return {"zero_loss_pps": ceiling, "at_ceiling": True, "ceiling_pps": ceiling, "trials": trials}
    lo, hi, best = 0, ceiling, 0
    rate = int(ceiling * 0.9)
    for _ in range(max_trials):
        t = trial(target, pcap, rate, seconds, frames)
        trials.append(t)
        # A trial counts by what tcpreplay achieved, which can fall short of what was asked.
        achieved = int(min(rate, t["achieved_pps"]))
        if t["lost"] <= 0:
            best = max(best, achieved)
            lo = rate
        else:
            hi = rate
        if hi - lo <= resolution * ceiling:
            break
        rate = (lo + hi) // 2
    return {"zero_loss_pps": best, "at_ceiling": False, "ceiling_pps": ceiling,
            "loss_at_ceiling_pct": 100 * top["lost"] / max(top["sent"], 1), "trials": trials}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", required=True, help="capture files go here (a tmpfs for the figures)")
    ap.add_argument("--disk-dir", help="with --fs disk: capture files go here instead (a real disk)")
    ap.add_argument("--fs", choices=["tmpfs", "disk"], default="tmpfs",
                    help="disk: into --disk-dir, linecapd with output.o_direct (tcpdump cannot)")
    ap.add_argument("--blocks", type=int, default=32,
                    help="linecapd output.blocks_per_queue (1 MiB each); tcpdump gets the same memory (-B)")
    ap.add_argument("--o-direct", choices=["auto", "on", "off"], default="auto",
                    help="linecapd output.o_direct (auto: on for --fs disk)")
    ap.add_argument("--workdir", default="/tmp")
    ap.add_argument("--tools", default="linecapd-af_xdp,linecapd-af_packet,tcpdump,testpmd-af_xdp,testpmd-af_packet")
    ap.add_argument("--size", type=int, default=1024, help="frame size in bytes (default 1024)")
    ap.add_argument("--trial", type=float, default=10, help="seconds per trial (default 10)")
    ap.add_argument("--resolution", type=float, default=0.02, help="stop when the bracket is this share of the ceiling")
    ap.add_argument("--max-trials", type=int, default=8)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--nice", type=int, default=0,
                    help="nice level (and autogroup nice) for the generator and every capture tool alike")
    args = ap.parse_args()
    if args.nice:
        bench.NICE[:] = ["nice", "-n", str(args.nice)]
        bench.set_autogroup_nice(os.getpid(), args.nice)
    os.sched_setaffinity(0, {0})
    if args.fs == "disk" and not args.disk_dir:
        ap.error("--fs disk needs --disk-dir")
    out_dir = args.disk_dir if args.fs == "disk" else args.out_dir
    work = os.path.join(args.workdir, f"lc-rfc2544-{os.getpid()}")
    os.makedirs(work, exist_ok=True)
    pcap = os.path.join(work, "traffic.pcap")
    frames = 20000
    subprocess.run([sys.executable, bench.GEN_PCAP, "-q", "--count", str(frames), "--size", str(args.size),
                    "--flows", "256", "--out", pcap], check=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = {"size": args.size, "trial_s": args.trial, "nice": args.nice, "fs": args.fs, "out_dir": bench.fs_of(out_dir),
               "conditions": bench.machine_conditions(),
               "load_start": bench.load_now(), "tools": {}}
    try:
        veth_up()
        for tool in args.tools.split(","):
            log(f"--- {tool}")
            target = None
            try:
                if tool.startswith("linecapd-"):
                    o_direct = args.o_direct == "on" or (args.o_direct == "auto" and args.fs == "disk")
                    target = LinecapdTarget(tool.split("-", 1)[1], out_dir, work, o_direct=o_direct, blocks=args.blocks)
                elif tool == "tcpdump":
                    target = TcpdumpTarget(out_dir, work, buffer_kib=args.blocks * 1024)
                elif tool.startswith("testpmd-"):
                    target = TestpmdTarget(tool.split("-", 1)[1], work)
                else:
                    raise ValueError(f"unknown tool {tool}")
                results["tools"][tool] = search(target, pcap, args.trial, frames, args.resolution, args.max_trials)
            except Exception as e:
                log(f"{tool}: {e}")
                results["tools"][tool] = {"error": str(e)}
            finally:
                if target is not None:
                    target.close()
    finally:
        bench.stop_all()
        veth_down()
        subprocess.run(["rm", "-rf", work])
    results["load_end"] = bench.load_now()
    rows = []
    for tool, r in results["tools"].items():
        if "error" in r:
            rows.append([tool, "error", r["error"][:70], "", ""])
            continue
        zl = r["zero_loss_pps"]
        rows.append([tool, f"{'>= ' if r['at_ceiling'] else ''}{zl / 1e6:.3f}",
                     f"{zl * args.size * 8 / 1e9:.2f}", f"{r['ceiling_pps'] / 1e6:.3f}",
                     "0%" if r["at_ceiling"] else f"{r['loss_at_ceiling_pct']:.1f}%"])
    print(f"Zero-loss throughput, {args.size}-byte frames, {args.trial:.0f} s trials, tcpreplay from a netns "
          f"into a veth (generator on CPU 0, capture on CPU 1), files into {args.fs} ({out_dir}); load {results['load_start']['loadavg']} → "
          f"{results['load_end']['loadavg']}")
    print(bench.text_table(["tool", "zero-loss Mpps", "Gbit/s", "generator max Mpps", "loss at max"], rows))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
