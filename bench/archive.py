#!/usr/bin/env python3
"""The archiver's cost (output.archive) against a real single-node Ceph RGW on this machine
(tests/archive/rgw.sh, memstore: the store shares the CPUs, so its own CPU is reported
beside the archiver's).

  1. throughput: a store of --gb GB of finished capture files (captured first by linecapd
     from a generated pcap looped until that much is written, archive off), then linecapd started over it with the archive on
     and no bandwidth cap: bytes archived / wall time until the backlog is 0, the archiver
     threads' CPU-seconds per GB (concurrency 1: one thread, lc-archive), and the RGW's;
  2. capture rate with the archiver uploading vs off: net_pcap replaying 4000 frames in a
     loop (infinite_rx), written packets per second over --seconds, the shipped defaults
     but for the retention budget, the store hard-linked into each window's directory as
     the backlog, archive on (uploading it to a fresh prefix) and off alternated --repeat
     times (A B B A ...) after one uncounted warm-up window; the ratio of the medians.
     Each window prints where the CPU went (linecapd's busiest threads, the machine's
     split) and the drops by reason. --workdir on a tmpfs (/dev/shm/...) makes capture
     CPU-bound, the case where the archiver's CPU would show; on the disk the written rate
     is the disk's and varies more between windows. In these windows the RGW's daemons run at SCHED_IDLE: on an
     appliance the store is another machine, and its CPU is not the archiver's cost.

usage: bench/archive.py [--gb 1] [--seconds 10] [--repeat 5] [--workdir /var/tmp/linecap-archive-bench]
Needs root, hugepages (bench/run.sh or scripts/hugepages.sh) and Ceph (scripts/install-deps.sh).
Prints the conditions (load average before and after, CPUs) with the numbers: run it on a
quiet machine."""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "tests", "lib"))
from linecap_harness import config, daemon, prometheus  # noqa: E402
from harness import free_port  # noqa: E402
from machine import system_cpu  # noqa: E402
from metrics import thread_cpu  # noqa: E402

BUILD = os.environ.get("LINECAP_BUILD", os.path.join(SRC, "build"))
LINECAPD = os.path.join(BUILD, "src", "linecapd")
RGW = os.path.join(SRC, "tests", "archive", "rgw.sh")
GEN_PCAP = os.path.join(SRC, "tests", "tools", "gen_pcap.py")
FRAME = 1400


def process_cpu(pids):
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / ticks


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = args.workdir
        self.rgw_dir = os.path.join(self.work, "rgw")
        self.env = {}
        self.listen = f"127.0.0.1:{free_port()}"

    def start_rgw(self):
        # Memstore, sized for every copy this run uploads (the store at concurrency 1 and 2, and
        # up to once per capture-rate window): it keeps them in RAM, so nothing it does competes
        # with capture for the disk.
        copies = 2 + self.args.repeat
        env = dict(os.environ, RGW_MEMSTORE_BYTES=str(int(self.store_bytes * 1.2) * copies + (1 << 30)))
        subprocess.run(["bash", RGW, "start", self.rgw_dir], check=True, env=env)
        for line in open(os.path.join(self.rgw_dir, "s3.env")):
            k, _, v = line.strip().partition("=")
            self.env[k] = v.strip("'\"")

    def rgw_pids(self):
        return [int(open(p).read()) for p in glob.glob(os.path.join(self.rgw_dir, "run", "*.pid"))]

    def run_linecapd(self, name, device, outdir, **sections):
        cfg = config.daemon(device, outdir, self.listen, output=sections.pop("output", {}), **sections)
        path = os.path.join(self.work, name + ".yaml")
        config.write(path, cfg, "bench/archive.py")
        d = daemon.Linecapd(LINECAPD, path, os.path.join(self.work, name + ".log"))
        d.wait_ready(self.url())
        return d

    def url(self):
        return f"http://{self.listen}/metrics"

    def metric(self, name, **labels):
        return prometheus.scrape(self.url()).total(name, **labels)

    def archive(self, prefix, **extra):
        a = {"url": f"s3://{self.env['S3_BUCKET']}/{prefix}", "endpoint": self.env["S3_ENDPOINT"],
             "region": self.env["S3_REGION"], "credentials_file": os.path.join(self.rgw_dir, "credentials")}
        a.update(extra)
        return a

    def drops(self):
        """linecap_dropped_packets_total by reason."""
        out = {}
        for labels, v in prometheus.scrape(self.url()).matching("linecap_dropped_packets_total"):
            out[labels.get("reason", "?")] = out.get(labels.get("reason", "?"), 0) + v
        return out

    def loop_pcap(self):
        """A small pcap for net_pcap's infinite_rx, which holds the whole file in mbufs."""
        loop = os.path.join(self.work, "loop.pcap")
        if not os.path.exists(loop):
            subprocess.run([sys.executable, GEN_PCAP, "-q", "--count", "4000", "--size", str(FRAME), "--seed", "2",
                            "--out", loop], check=True)
        return loop

    def make_store(self):
        # Filled by looping a small source until --gb GB are written: a large source played once
        # at full speed leaves only what the writer kept up with (0.1 GB of 1 here, the rest
        # counted writer_full).
        self.store = os.path.join(self.work, "store")
        os.makedirs(self.store)
        d = self.run_linecapd("fill", f"net_pcap0,rx_pcap={self.loop_pcap()},infinite_rx=1", self.store,
                              output={"rotate": {"size_mb": 64}, "scrub": {"enabled": False}})
        daemon.wait_until(lambda: self.metric("linecap_written_bytes_total") >= self.args.gb * 1e9, 600,
                          "filling the store", d)
        d.stop()
        self.store_bytes = sum(os.path.getsize(f) for f in glob.glob(self.store + "/*.pcap"))

    def rgw_scheduling(self, policy):
        """chrt policy (--idle, --other) for every thread of the RGW's daemons."""
        for pid in self.rgw_pids():
            subprocess.run(["chrt", "-a", policy, "-p", "0", str(pid)], check=True, stdout=subprocess.DEVNULL)

    def throughput(self, concurrency):
        tiny = os.path.join(self.work, "tiny.pcap")
        subprocess.run([sys.executable, GEN_PCAP, "-q", "--count", "10", "--out", tiny], check=True)
        for marker in glob.glob(self.store + "/*.archived"):
            os.unlink(marker)
        rgw_before = process_cpu(self.rgw_pids())
        start = time.time()
        d = self.run_linecapd(f"upload{concurrency}", f"net_pcap0,rx_pcap={tiny}", self.store,
                              output={"scrub": {"enabled": False},
                                      "archive": self.archive(f"bench-c{concurrency}-{int(start)}",
                                                              concurrency=concurrency)})
        files = len(glob.glob(self.store + "/*.pcap"))
        daemon.wait_until(lambda: self.metric("linecap_archive_files_total") >= files, 3600, "uploading", d)
        seconds = time.time() - start
        cpu = sum(c for name, (c, _) in thread_cpu(d.pid).items() if name.rstrip("+") == "lc-archive")
        archived = self.metric("linecap_archive_bytes_total")
        d.stop()
        rgw = process_cpu(self.rgw_pids()) - rgw_before
        gb = archived / 1e9
        return {"concurrency": concurrency, "files": files, "GB": round(gb, 3), "seconds": round(seconds, 1),
                "MB/s": round(archived / 1e6 / seconds, 1),
                "archiver CPU-s/GB": round(cpu / gb, 2) if concurrency == 1 else "n/a (threads per batch)",
                "RGW CPU-s/GB": round(rgw / gb, 2)}

    def capture_rate(self, archive_on, round_):
        # The store's files hard-linked into a directory of the window's own: the archiver has
        # the whole store to upload, and the window writes nothing but what capture writes (a
        # copy would still be flushing to the disk while capture is measured).
        out = os.path.join(self.work, f"rate-{round_}-{'on' if archive_on else 'off'}")
        os.makedirs(out)
        for f in os.listdir(self.store):
            if not f.endswith(".archived"):
                os.link(os.path.join(self.store, f), os.path.join(out, f))
        # The shipped defaults but for the retention budget, which must keep the store.
        output = {"retention": {"max_bytes": f"{int(self.store_bytes * 1.5 / 1e6)}M"}}
        if archive_on:
            output["archive"] = self.archive(f"rate-{round_}-{int(time.time())}")
        d = self.run_linecapd(f"rate-{round_}-{'on' if archive_on else 'off'}", f"net_pcap0,rx_pcap={self.loop_pcap()},infinite_rx=1", out, output=output)
        time.sleep(2)
        w0, t0 = self.metric("linecap_written_packets_total"), time.time()
        threads0, cpu0, drops0 = thread_cpu(d.pid), system_cpu(), self.drops()
        time.sleep(self.args.seconds)
        w1, t1 = self.metric("linecap_written_packets_total"), time.time()
        threads1, cpu1, drops1 = thread_cpu(d.pid), system_cpu(), self.drops()
        uploading = archive_on and self.metric("linecap_archive_backlog_files") > 0
        d.stop()
        shutil.rmtree(out)
        pps = (w1 - w0) / (t1 - t0)
        # Where the CPU went in the window: linecapd's busiest threads (CPU-s, the CPU each
        # last ran on) and the machine's time by kind; what explains a slower window.
        busiest = sorted(((threads1[k][0] - threads0[k][0], k, threads1[k][1]) for k in threads1 if k in threads0),
                         reverse=True)[:5]
        split = {k: round(cpu1[k] - cpu0[k], 1) for k in cpu1}
        print(f"  window {round_} archive {'on ' if archive_on else 'off'}: {pps:.0f} pps; threads "
              + ", ".join(f"{k} {c:.1f}s@cpu{last}" for c, k, last in busiest) + f"; machine CPU-s {split}; dropped {dict((k, v - drops0.get(k, 0)) for k, v in drops1.items() if v > drops0.get(k, 0))}",
              flush=True)
        return pps, uploading

    def run(self):
        os.makedirs(self.work, exist_ok=False)
        load_before = os.getloadavg()
        try:
            self.make_store()
            self.start_rgw()
            rows = [self.throughput(1), self.throughput(2)]
            # On an appliance the store is another machine: here its daemons share the two CPUs,
            # so in the capture-rate windows they get only what capture leaves (SCHED_IDLE), and
            # what is measured is the archiver's own cost (its thread, the reads, the sends).
            self.rgw_scheduling("--idle")
            # A first window warms what the later ones reuse (tmpfs pages, the page cache, the
            # mempools' hugepages) and is not counted: it would fall to whichever mode ran first.
            self.capture_rate(False, "warm-up")
            on, off, busy = [], [], []
            for r in range(self.args.repeat):
                for archive_on in (True, False) if r % 2 == 0 else (False, True):
                    pps, uploading = self.capture_rate(archive_on, r)
                    (on if archive_on else off).append(pps)
                    if archive_on:
                        busy.append(uploading)
        finally:
            subprocess.run(["bash", RGW, "stop", self.rgw_dir])
        print(f"conditions: {os.cpu_count()} CPUs, load average {load_before[0]:.2f} before, "
              f"{os.getloadavg()[0]:.2f} after; store {self.store_bytes / 1e9:.2f} GB of {FRAME}-byte frames "
              f"in 64 MiB files; RGW memstore on this machine, at SCHED_IDLE in the capture-rate windows")
        for row in rows:
            print("throughput:", ", ".join(f"{k} {v}" for k, v in row.items()))
        ratio = statistics.median(on) / statistics.median(off)
        print(f"capture rate, written pps over {self.args.seconds} s (net_pcap loop): archive uploading "
              f"{[round(x) for x in on]} (still uploading at the end: {busy}), off {[round(x) for x in off]}; "
              f"ratio of medians {ratio:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workdir", default="/var/tmp/linecap-archive-bench")
    args = ap.parse_args()
    bench = Bench(args)
    try:
        bench.run()
    finally:
        shutil.rmtree(args.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
