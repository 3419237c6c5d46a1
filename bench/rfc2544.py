#!/usr/bin/env python3
"""Zero-loss throughput on the live path, RFC 2544 style: a binary search over the offered
rate for the highest one at which nothing is lost over a trial (default 10 s), for every
cell of  tool × output file system × machine load,  in one run.

Traffic: trafgen (netsniff-ng; --generator tcpreplay for the old one) from a network
namespace into a veth pair this script creates (and removes), pinned to CPU 0, paced to
the offered rate; captured on the root-namespace end by
  linecapd   through net_af_xdp (or net_af_packet), one queue, one worker on CPU 1, with the
             settings doc/tuning.md documents for net_af_xdp (LIVE_DEVICE, LIVE_CONFIG below);
             files into a directory; loss = sent - written
  tcpdump    -w into the same directory, pinned to CPU 1, with a kernel buffer (-B) as
             large as linecapd's write blocks (the same memory), its files rotated at
             linecapd's size and only the newest TCPDUMP_FILES kept (-C, -W: as the
             harness's janitor keeps linecapd's, so neither tool's page cache outgrows the
             other's); loss = sent - captured
  testpmd    dpdk-testpmd rxonly on the same vdev, forwarding core on CPU 1; loss = sent - rx

The rig's receive path (--rig): a veth hands each frame to its peer inside the sender's
sendto(), so by default the receiving side's kernel work (the XDP program and its copies
for linecapd, the packet socket's copy for tcpdump) runs on the generator's CPU and is
charged to the generator, differently per tool. `--rig napi-thread` (the default) gives
the receiving veth a NAPI instance run by a kernel thread of its own, for both tools alike
(GRO on the receiving end, so the veth uses NAPI without XDP too; TSO and GSO off on the
sending end, whose socket buffers would otherwise bypass it), as a NIC's receive work runs
in its interrupt's context rather than in the sender. That thread runs on the capture CPU
(1) at SCHED_FIFO NAPI_RT_PRIORITY, above every thread there, as a NIC's softirq on the
CPU its interrupt is steered to preempts them. (At normal priority, unpinned, it ran
beside linecapd's real-time worker and got 30 % of CPU 1 while always runnable: the
veth's queue stayed full, and the generator, sending refused frames again, reached less
beside linecapd than beside tcpdump: the "generator-bound" cells of earlier tables.)
`--rig softirq` is the plain veth. The rig itself is the tests' (tests/lib/linecap_harness/veth.py).

Sent = the frames the sending veth handed to the receiving end (its tx_packets). When the
receiving end's queue (256 frames) is full the veth refuses a frame and trafgen sends it
again: a receive path that falls behind slows the generator instead of losing frames, so
a tool whose receive work is slower is shown a lower ceiling, not a loss.

File systems (--fs): tmpfs (--out-dir) and the real disk (--disk-dir). linecapd writes
through the page cache as shipped, like tcpdump (--o-direct auto|on for output.o_direct).
Loads (--load), started before the cell's tools and kept running through all their trials:
  quiet    nothing added (on a shared machine "quiet" is whatever else runs: the table
           records the load average)
  busy     two `python3 -c 'while True: pass'`, normal priority, unpinned, each in its own
           session (as two operators' shells would be)
  extract  `linecap extract` of a 10-file store in a loop (reading, filtering, writing),
           normal priority, unpinned

  rfc2544.py --out-dir DIR --disk-dir DIR                   the whole table (~35 min)
  rfc2544.py --out-dir DIR --disk-dir DIR --quick           the same cells, 3 s trials (~8 min)
  rfc2544.py ... --fs tmpfs --load busy --tools linecapd,tcpdump --probe 3
                                                            A/B: only top-speed trials, 3 each

Tool names: linecapd, linecapd-af_packet, tcpdump, testpmd-af_xdp, testpmd-af_packet; a
linecapd variant for A/B comparisons appends `+key=value` settings, e.g.
  linecapd+prio=normal            capture.worker_priority (normal, nice:-N, fifo:N, rr:N)
  linecapd+desc=8192              ports[].rx_descriptors
  linecapd+budget=64              the af_xdp PMD's busy_budget
  linecapd+idle_us=50             capture.idle_sleep_us
  linecapd+below=32               capture.sleep_below
  linecapd+manifest=false         output.manifest (default true, as shipped)
  linecapd+index=false            output.index (default true, as shipped)
  linecapd+lcores=0@1/1@1         eal.lcores ("/" for ","): here the main lcore, and with it the
                                  writer, hasher and indexer threads, on the worker's CPU 1
  linecapd+wcpus=workers          output.writer_cpus (control, workers)
  linecapd+wprio=fifo:1           output.writer_priority
  linecapd+bg_cpu=1               the hasher's and indexer's CPU affinity set from outside (0, 1, all)
  linecapd+keep_s=0               seconds the janitor keeps a finished file (default 2, for the indexer)

Machine: kernel.sched_autogroup_enabled is 0 for the run, as the package sets it
(--autogroup on to compare; restored after).

First a trial at the generator's top speed tells its ceiling; a tool that loses nothing
there is reported as ">= ceiling". Prints one line per trial and the table at the end;
--json FILE keeps the results. Needs root, trafgen and netsniff-ng (or tcpreplay), ethtool,
tcpdump, hugepages and bpffs.
"""
import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (Proc, Janitor, free_port, wait_until; puts tests/lib on sys.path)
from linecap_harness import config, prometheus, stenographer, veth  # noqa: E402
from report import md_table, text_table  # noqa: E402

NS = f"lc-rfc-{os.getpid()}"
A = f"lcr{os.getpid()}a"   # capture side, root namespace
B = f"lcr{os.getpid()}b"   # generator side, in NS
LINECAP = os.path.join(os.path.dirname(bench.LINECAPD), "linecap")

# The documented net_af_xdp settings (doc/tuning.md, "Capturing from a Linux interface"): the device
# string and the keys of the live-path configuration that differ from the defaults.
# busy_budget=0: no preferred busy polling (the PMD's recvfrom() kicks measured no better).
# Everything else as shipped: the writer on the control lcore's CPUs. (Stop 21 documented
# output.writer_cpus: workers with capture.sleep_below: 64 while this rig charged the
# receive work to the sender's CPU; with it in its own NAPI thread the writer beside the
# worker lost 25 % writer_full at 0.23 Mpps where the shipped placement lost nothing.)
XDP_ARGS = "start_queue=0,queue_count=1,busy_budget=0"
LIVE_DEVICE = "net_af_xdp0,iface={iface}," + XDP_ARGS
# The rig runs the receive work in a real-time thread on the worker's CPU, so the worker
# ranks above it as doc/tuning.md documents for that case (at the shipped rr:1 the NAPI
# thread kept it from returning the PMD's 2048 buffers: 0.7-2.8 % lost from 100 kpps up).
LIVE_SETTINGS = {"prio": "fifo:60", "desc": 4096, "budget": 0, "idle_us": None, "manifest": "true", "index": "true", "keep_s": "2", "lcores": "0-1", "bg_cpu": None,
                 "wcpus": None, "wprio": None, "below": None}
AF_PACKET_DEVICE = "net_af_packet0,iface={iface},qpairs=1,blocksz=4096,framesz=2048,framecnt=65536"

ALL_CPUS = f"0-{os.cpu_count() - 1}"


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)


DEFAULT_RIG = "napi-thread"


# The receiving veth's NAPI thread on the napi-thread rig: on the capture CPU, above
# linecapd's real-time worker (rr:1) and everything else there, as a NIC's softirq is (and
# below the kernel's own per-CPU threads at 99).
NAPI_CPU = 1
NAPI_RT_PRIORITY = 50

# The rig (tests/lib/linecap_harness/veth.py): the capture side A in the root namespace,
# the generator's side B in NS.
RIG = None


def veth_up(rig):
    """The veth pair, set up for `rig` (see --rig); returns the receive path's state as read
    back from the kernel."""
    global RIG
    RIG = veth.VethPair(NS, A, B, napi_thread=(NAPI_CPU, NAPI_RT_PRIORITY) if rig == "napi-thread" else None)
    return RIG.up().state()


def veth_down():
    if RIG:
        RIG.down()


GEN_NICE = None


def generator_priority():
    """In the generator's child, after setsid(): its own autogroup and its threads at GEN_NICE."""
    with open("/proc/self/autogroup", "w") as fh:
        fh.write(str(GEN_NICE))
    os.nice(GEN_NICE)


def fixed_rate_generator(pcap, pps, duration_s, workdir):
    """tcpreplay from the namespace (on CPU 0) looping `pcap` at `pps` for at most
    `duration_s`: `--timer nano`, bursts of pps/200 packets, so the generator sleeps between
    bursts. Registered in bench.RUNNING."""
    gen = bench.Proc(["ip", "netns", "exec", NS, "taskset", "-c", "0", "tcpreplay", "-i", B,
                      "--loop=0", "--preload-pcap", "--timer=nano", f"--pps={pps}",
                      f"--pps-multi={max(1, pps // 200)}", f"--duration={duration_s}", pcap],
                     os.path.join(workdir, "tcpreplay.log"))
    bench.RUNNING.append(gen)
    return gen


def stop_fixed_rate(gen, target):
    """Stops what a fixed-rate run started, whichever of it did start: the generator,
    linecapd, everything in bench.RUNNING, the veth."""
    if gen is not None and gen.alive():
        gen.stop()
    if target is not None:
        target.close()
    bench.stop_all()
    veth_down()


def tx_packets():
    """Frames the generator's end of the veth has handed to the receiving end."""
    return RIG.link_stats("peer")["tx"]["packets"]


def kernel_drops():
    """For the log: how often the sending veth found the receiving end's queue full (its
    tx_dropped; trafgen sends such a frame again, so for trafgen these are retries, not
    losses: measured, the tools captured exactly the frames trafgen was asked for while
    this rose), and what the receiving veth dropped (rx_dropped; with XDP, a redirect into
    the AF_XDP socket that failed: a loss, within `lost`)."""
    return {"veth_queue_full": RIG.link_stats("peer")["tx"]["dropped"],
            "receiver_rx_dropped": RIG.link_stats("cap")["rx"]["dropped"]}


class Tcpreplay:
    """tcpreplay --pps (or --topspeed) of the traffic file: one sendto() per frame."""
    name = "tcpreplay"

    def __init__(self, pcap, frames):
        self.pcap, self.frames = pcap, frames

    def command(self, pps, seconds):
        loops = max(1, int(round((pps if pps != "top" else 1_500_000) * seconds / self.frames)))
        args = ["tcpreplay", "-i", B, f"--loop={loops}", "--preload-pcap"]
        args += ["--topspeed", f"--duration={int(seconds)}"] if pps == "top" else [f"--pps={pps}"]
        return args + [self.pcap]


class Trafgen:
    """netsniff-ng's trafgen: frames from a packet socket's mmap'd TX ring, many per sendto(),
    about 2.4 times tcpreplay's rate into this veth, so both capture tools can be pushed past
    their limits on 2 vCPUs. The frames are the first `TRAFGEN_FRAMES` of the traffic file
    (one per flow), converted by netsniff-ng; `--rate N pps` paces them. Its TX ring stalls
    with EAGAIN on the default 208 KiB socket buffers, and it cannot raise them from inside a
    network namespace: main() raises net.core.wmem_default for the run."""
    name = "trafgen"

    def __init__(self, pcap, workdir):
        self.cfg = os.path.join(workdir, "traffic.trafgen")
        sh("netsniff-ng", "--in", pcap, "--out", self.cfg, "--num", str(TRAFGEN_FRAMES))

    def command(self, pps, seconds):
        args = ["trafgen", "--dev", B, "--conf", self.cfg, "--cpus", "1", "--qdisc-path", "--no-cpu-stats"]
        if pps == "top":
            return ["timeout", "-s", "INT", str(seconds)] + args
        return args + ["--rate", f"{pps}pps", "--num", str(int(pps * seconds))]


TRAFGEN_FRAMES = 256
TRAFGEN_SNDBUF = 4 << 20


def replay(gen, pps, seconds):
    """The generator from NS, on CPU 0, at `pps` (or 'top') for about `seconds`; returns
    (frames the veth delivered, their rate). Sent = tx_packets(), the same count for every
    generator."""
    args = bench.NICE + ["ip", "netns", "exec", NS, "taskset", "-c", "0"] + gen.command(pps, seconds)
    before, t0 = tx_packets(), time.monotonic()
    subprocess.run(args, capture_output=True, text=True, start_new_session=GEN_NICE is not None,
                   preexec_fn=generator_priority if GEN_NICE is not None else None)
    elapsed = time.monotonic() - t0
    sent = tx_packets() - before
    return sent, sent / elapsed if elapsed else 0.0


# --- machine load ----------------------------------------------------------------------------------

class Load:
    """Ordinary work at normal priority on every CPU (unpinned), for the `load` cells."""

    def __init__(self, kind, workdir, pcap):
        self.kind, self.procs = kind, []
        if kind == "quiet":
            return
        if kind == "busy":
            for i in range(2):
                self.procs.append(bench.Proc(["taskset", "-c", ALL_CPUS, sys.executable, "-c", "while True: pass"],
                                             os.path.join(workdir, f"load-busy{i}.log")))
        elif kind == "extract":
            store = make_store(workdir, pcap)
            loop = (f"while :; do {LINECAP} extract --dir {store} --filter 'udp or tcp' -o - > /dev/null "
                    "|| exit 1; done")
            self.procs.append(bench.Proc(["taskset", "-c", ALL_CPUS, "sh", "-c", loop],
                                         os.path.join(workdir, "load-extract.log")))
        else:
            raise ValueError(f"unknown load {kind}")
        time.sleep(1.0)
        for p in self.procs:
            if not p.alive():
                raise RuntimeError(f"load {kind}: exited: {p.text()[-500:]}")

    def stop(self):
        for p in self.procs:
            p.stop(timeout=10)
        self.procs = []


def make_store(workdir, pcap):
    """A capture directory of 10 copies of the traffic file (named as linecapd names its
    files, a minute apart), indexed: what a large `linecap extract` reads."""
    store = os.path.join(workdir, "store")
    if os.path.isdir(store):
        return store
    os.makedirs(store)
    for i in range(10):
        shutil.copyfile(pcap, os.path.join(store, f"20261201T00{i:02d}00.000000000Z-live-q0.pcap"))
    subprocess.run([LINECAP, "index", "--dir", store], check=True, capture_output=True)
    return store


# --- capture tools -----------------------------------------------------------------------------------

def parse_variant(tool):
    """'linecapd+desc=8192+prio=fifo:1' -> ('linecapd', {'desc': '8192', 'prio': 'fifo:1'})."""
    base, *opts = tool.split("+")
    settings = {}
    for o in opts:
        k, _, v = o.partition("=")
        if k not in LIVE_SETTINGS:
            raise ValueError(f"{tool}: unknown setting {k} (one of {', '.join(LIVE_SETTINGS)})")
        settings[k] = v
    return base, settings


def setting(value):
    """A setting from the command line (always a string) or LIVE_SETTINGS as YAML would read
    it: true/false and numbers as such."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            pass
    return value


def thread_ids(pid, *prefixes):
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip().startswith(prefixes):
                    out.append(int(tid))
        except FileNotFoundError:
            pass
    return out


class LinecapdTarget:
    def __init__(self, tool, outdir, workdir, o_direct=False, blocks=32, sections=None):
        base, variant = parse_variant(tool)
        s = dict(LIVE_SETTINGS)
        s.update(variant)
        self.name = tool
        pmd = "af_packet" if base == "linecapd-af_packet" else "af_xdp"
        self.outdir = os.path.join(outdir, "linecapd")
        os.makedirs(self.outdir, exist_ok=True)
        self.port = bench.free_port()
        if pmd == "af_xdp":
            device = LIVE_DEVICE.format(iface=A).replace("busy_budget=0", f"busy_budget={s['budget']}")
        else:
            device = AF_PACKET_DEVICE.format(iface=A)
        capture = {key: convert(s[short]) for key, short, convert in (
            ("worker_priority", "prio", str), ("idle_sleep_us", "idle_us", setting), ("sleep_below", "below", setting))
            if s[short] is not None}
        output = {"rotate": {"size_mb": ROTATE_MIB, "interval_s": 0}, "blocks_per_queue": blocks,
                  "block_size_kb": 1024, "o_direct": bool(o_direct), "manifest": setting(s["manifest"]),
                  # as shipped: the background indexer runs (idle priority, on CPU 0)
                  "index": setting(s["index"])}
        output.update({key: str(s[short]) for key, short in (("writer_cpus", "wcpus"), ("writer_priority", "wprio"))
                       if s[short] is not None})
        cfg = os.path.join(workdir, "linecapd.yaml")
        settings = {"capture": capture} if capture else {}
        settings.update(sections or {})  # more sections of the configuration (e.g. feed)
        config.write(cfg, config.daemon(device, self.outdir, f"127.0.0.1:{self.port}", name="live",
                                        lcores=s["lcores"].replace("/", ","),
                                        port={"rx_queues": 1, "rx_descriptors": setting(s["desc"])},
                                        output=output, **settings))
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        # Finished files stay 2 s for the indexer (as retention would keep them longer).
        self.janitor = bench.Janitor(self.outdir, keep_s=float(s["keep_s"]))
        self.proc = bench.Daemon(bench.LINECAPD, cfg, os.path.join(workdir, "linecapd.log"))
        bench.RUNNING.append(self.proc)
        self.janitor.start()
        self.proc.wait_ready(self.url, 60)
        # From outside, for A/B: the hasher and indexer have no CPU setting of their own (the
        # writer and the workers do: wcpus, wprio, prio).
        if s["bg_cpu"] is not None:
            cpus = set(range(os.cpu_count())) if s["bg_cpu"] == "all" else {int(s["bg_cpu"])}
            for tid in thread_ids(self.proc.p.pid, "lc-hash", "lc-indexer"):
                os.sched_setaffinity(tid, cpus)

    def counters(self):
        s = prometheus.scrape(self.url)
        drops = {r: s.total("linecap_dropped_packets_total", reason=r)
                 for r in s.label_values("linecap_dropped_packets_total", "reason")}
        return {"got": s.total("linecap_written_packets_total"),
                "rx": s.total("linecap_rx_packets_total"), "drops": drops}

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
            port_reasons = ("nic_missed", "nic_error", "xsk_fill_empty", "xsk_ring_full")
            worker_drops = sum(v for k, v in c1["drops"].items() if k not in port_reasons)
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


# linecapd's files rotate at ROTATE_MIB and the harness's janitor deletes each keep_s
# (LIVE_SETTINGS, 2 s) after it is finished (for the indexer); at the rates here that keeps about four files, so
# tcpdump rotates at the same size (-C, in millions of bytes) and keeps four (-W overwrites
# the oldest). Without it tcpdump's one growing file took up to 3.5 GB of dirty page cache
# in a 10 s trial, past the background writeback threshold (10 % of available memory, about
# 2.2 GB on the 24 GiB test machine), where linecapd's stayed near 1 GB.
ROTATE_MIB = 256
TCPDUMP_FILES = 4


class TcpdumpTarget:
    name = "tcpdump"

    def __init__(self, outdir, workdir, buffer_kib):
        self.buffer_kib = buffer_kib  # -B: the same memory linecapd's write blocks get
        self.outdir = os.path.join(outdir, "tcpdump")
        os.makedirs(self.outdir, exist_ok=True)
        self.workdir = workdir

    def trial_begin(self):
        self.out = os.path.join(self.outdir, "t.pcap")  # with -W: t.pcap0, t.pcap1, ...
        self.proc = bench.Proc(bench.NICE + ["taskset", "-c", "1", "tcpdump", "-i", A, "-n", "-B", str(self.buffer_kib),
                                             "-C", str(ROTATE_MIB * 2**20 // 10**6), "-W", str(TCPDUMP_FILES),
                                             "-Z", "root", "-w", self.out],
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
        for name in os.listdir(self.outdir):  # -W numbers them: t.pcap0, t.pcap1, ...
            os.unlink(os.path.join(self.outdir, name))
        got = int(m.group(1)) if m else 0
        return got, ({"kernel": int(k.group(1))} if k and int(k.group(1)) else {})

    def close(self):
        pass


class StenographerTarget:
    """stenotype (Debian's stenographer package) as stenographer.service runs it: one thread,
    TPACKET_V3 ring of `blocks` 1 MiB blocks (the same memory as linecapd's write blocks),
    O_DIRECT writes of whole blocks, its indexer on; pinned to the capture CPU like tcpdump;
    its options as tests/lib/linecap_harness/stenographer.py says. Captured = the packets in
    the blocks it wrote (stenographer.file_packets). It runs through all of a cell's trials
    (its ring takes seconds to set up); a trial ends once a block retired by --blockage_sec
    (1 s; the unit's default is 10) has been written."""
    name = "stenographer"

    def __init__(self, outdir, workdir, blocks):
        self.dir = os.path.join(outdir, "stenographer")
        self.counted_deleted = 0
        self.proc = bench.Proc(bench.NICE + ["taskset", "-c", "1"] + stenographer.stenotype_argv(A, self.dir, blocks),
                               os.path.join(workdir, "stenotype.log"))
        bench.RUNNING.append(self.proc)
        bench.wait_until(lambda: stenographer.READY_LINE in self.proc.text(), 120, "stenotype start", self.proc)

    def captured(self):
        """Packets in the files so far; finished files are counted once and deleted."""
        pkt, total = os.path.join(self.dir, "PKT0"), self.counted_deleted
        for name in sorted(os.listdir(pkt)):
            n = stenographer.file_packets(os.path.join(pkt, name))
            if name.startswith("."):
                total += n
            else:
                self.counted_deleted += n
                total += n
                os.unlink(os.path.join(pkt, name))
        for name in os.listdir(os.path.join(self.dir, "IDX0")):
            if not name.startswith("."):
                os.unlink(os.path.join(self.dir, "IDX0", name))
        return total

    def kernel_drops(self):
        return stenographer.drops(self.proc.text())

    def trial_begin(self):
        self.c0, self.d0 = self.captured(), self.kernel_drops()

    def trial_end(self, sent):
        got, last, stable = 0, -1, 0
        deadline = time.time() + 30
        while time.time() < deadline:
            time.sleep(0.5)
            got = self.captured() - self.c0
            stable = stable + 1 if got == last else 0
            last = got
            if got >= sent or stable >= 6:  # 3 s without a new block: past --blockage_sec
                break
        drops = self.kernel_drops() - self.d0
        return got, ({"kernel": drops} if drops else {})

    def close(self):
        self.proc.stop(sig=signal.SIGINT)
        bench.RUNNING.remove(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)


class NetsniffTarget:
    """netsniff-ng (TPACKET_V3 ring of the same memory, -S) writing pcap files, rotated at
    linecapd's size, pinned to the capture CPU; captured = what it reports as passed at exit."""
    name = "netsniff-ng"

    def __init__(self, outdir, workdir, ring_mib):
        self.ring_mib = ring_mib
        self.outdir = os.path.join(outdir, "netsniff-ng")
        os.makedirs(self.outdir, exist_ok=True)
        self.workdir = workdir

    def trial_begin(self):
        self.proc = bench.Proc(bench.NICE + ["netsniff-ng", "--in", A, "--out", self.outdir + "/", "--silent",
                                             "--bind-cpu", "1", "--ring-size", f"{self.ring_mib}MiB",
                                             "--interval", f"{ROTATE_MIB}MiB"],
                               os.path.join(self.workdir, "netsniff-ng.log"))
        bench.RUNNING.append(self.proc)
        bench.wait_until(lambda: "Running!" in self.proc.text() or os.listdir(self.outdir), 30,
                         "netsniff-ng start", self.proc)

    def trial_end(self, sent):
        time.sleep(1.0)
        self.proc.stop(sig=signal.SIGINT)
        bench.RUNNING.remove(self.proc)
        m = re.search(r"(\d+)\s+packets passed filter", self.proc.text())
        for name in os.listdir(self.outdir):
            os.unlink(os.path.join(self.outdir, name))
        return (int(m.group(1)) if m else 0), {}

    def close(self):
        pass


class TestpmdTarget:
    def __init__(self, pmd, workdir):
        self.name = f"testpmd-{pmd}"
        vdev = (LIVE_DEVICE if pmd == "af_xdp" else AF_PACKET_DEVICE).format(iface=A)
        args = bench.NICE + [bench.TESTPMD, "-l", "0,1", "--in-memory", "--file-prefix", f"lcbench{os.getpid()}r",
                             "--no-pci", "--vdev", vdev, "--log-level", "*:notice",
                             "--", "--forward-mode=rxonly", "--nb-cores=1", "--stats-period=1",
                             "--total-num-mbufs=65536"]
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


def make_target(tool, out_dir, work, args, fs):
    if tool.startswith("linecapd"):
        o_direct = args.o_direct == "on" or (args.o_direct == "auto" and fs == "disk")
        return LinecapdTarget(tool, out_dir, work, o_direct=o_direct, blocks=args.blocks)
    if tool == "tcpdump":
        return TcpdumpTarget(out_dir, work, buffer_kib=args.blocks * 1024)
    if tool == "stenographer":
        return StenographerTarget(out_dir, work, blocks=args.blocks)
    if tool == "netsniff-ng":
        return NetsniffTarget(out_dir, work, ring_mib=args.blocks)
    if tool.startswith("testpmd-"):
        return TestpmdTarget(tool.split("-", 1)[1], work)
    raise ValueError(f"unknown tool {tool}")


# --- the search ------------------------------------------------------------------------------------

def trial(target, gen, pps, seconds, tag):
    # Every trial starts with nothing dirty in the page cache: none pays for the writeback
    # of the one before (another tool's, into the disk).
    os.sync()
    RIG.place_napi_threads()
    target.trial_begin()
    k0 = kernel_drops()
    sent, achieved = replay(gen, pps, seconds)
    got, drops = target.trial_end(sent)
    # The kernel's own counts, for the log (kernel_drops).
    drops.update({k: v - k0[k] for k, v in kernel_drops().items() if v != k0[k]})
    lost = sent - got
    log(f"{tag} {target.name}: offered {pps if pps == 'top' else f'{pps:,}'} pps (achieved {achieved:,.0f}): "
        f"sent {sent:,}, captured {got:,}, lost {lost:,} ({100 * lost / max(sent, 1):.2f}%) {drops or ''}")
    return {"offered": pps, "achieved_pps": achieved, "sent": sent, "got": got, "lost": lost, "drops": drops}


WARMUP_S = 3


def warm_up(target, gen, tag):
    """RFC 2544's learning frames: a short top-speed trial whose result is not counted, so the
    first measured trial does not pay for the capture tool's first touch of its memory
    (on these VMs the host backs never-touched memory lazily)."""
    t = trial(target, gen, "top", WARMUP_S, tag + " warm-up, not counted")
    return {"warm_up": True, **t}


def search(target, gen, seconds, resolution, max_trials, tag):
    trials = [warm_up(target, gen, tag)]
    top = trial(target, gen, "top", seconds, tag)
    trials.append(top)
    ceiling = int(top["achieved_pps"])
    if top["lost"] <= 0:
        return {"zero_loss_pps": ceiling, "at_ceiling": True, "ceiling_pps": ceiling, "trials": trials}
    lo, hi, best = 0, ceiling, 0
    rate = int(ceiling * 0.9)
    for _ in range(max_trials):
        t = trial(target, gen, rate, seconds, tag)
        trials.append(t)
        # A trial counts by what the generator achieved, which can fall short of what was asked.
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


def probe(target, gen, seconds, count, tag):
    """A/B mode: `count` trials at top speed; the loss of each."""
    trials = [trial(target, gen, "top", seconds, tag) for _ in range(count)]
    return {"probe": True, "trials": trials,
            "loss_pct": [round(100 * t["lost"] / max(t["sent"], 1), 3) for t in trials],
            "achieved_pps": [int(t["achieved_pps"]) for t in trials]}


def fixed_rates(target, gen, seconds, rates, repeat, tag):
    """Peer mode: after the uncounted warm-up, one trial at each offered rate ('top': the
    generator's top speed), the list `repeat` times."""
    trials = [warm_up(target, gen, tag)]
    for _ in range(repeat):
        trials += [trial(target, gen, rate, seconds, tag) for rate in rates]
    return {"rates": True, "trials": trials}


def loss_pct(t):
    return 100 * t["lost"] / max(t["sent"], 1)


def rate_label(rate):
    return "top" if rate == "top" else f"{rate / 1000:g} kpps"


def rate_rows(results, rates):
    """Peer mode's table: per tool, the loss at each offered rate (every repetition); at top
    speed also the rate reached."""
    rows = []
    for cell in results["cells"]:
        for tool, r in cell["tools"].items():
            head = [cell["fs"], cell["load"], tool]
            if "error" in r:
                rows.append(head + [r["error"][:60]] + [""] * len(rates))
                continue
            row = head[:]
            for rate in rates:
                ts = [t for t in r["trials"] if not t.get("warm_up") and t["offered"] == rate]
                text = " / ".join(f"{loss_pct(t):.2f} %" for t in ts)
                if rate == "top" and ts:
                    text += f" (at {sum(t['achieved_pps'] for t in ts) / len(ts) / 1e6:.3f} Mpps)"
                row.append(text)
            rows.append(row + [f"{cell['loadavg']}"])
    return rows


def rate_verdicts(results, rates, reference="stenographer"):
    """Per cell and rate: does linecapd lose nothing wherever the reference loses nothing, and
    at top speed no more than it (issue: ahead of Stenographer on its own ground)?"""
    out = []
    for cell in results["cells"]:
        t = cell["tools"]
        ref = t.get(reference)
        if ref is None or "trials" not in ref:
            continue
        for name, lc in t.items():
            if not name.startswith("linecapd") or "trials" not in lc:
                continue
            for rate in rates:
                ref_loss = [loss_pct(x) for x in ref["trials"] if not x.get("warm_up") and x["offered"] == rate]
                lc_loss = [loss_pct(x) for x in lc["trials"] if not x.get("warm_up") and x["offered"] == rate]
                if not ref_loss or not lc_loss:
                    continue
                if rate == "top":
                    ok = max(lc_loss) <= max(ref_loss)
                    what = f"at top speed {name} lost at most {max(lc_loss):.2f} % against {max(ref_loss):.2f} %"
                else:
                    ok = max(ref_loss) > 0 or max(lc_loss) == 0
                    what = (f"at {rate_label(rate)} {name} lost {max(lc_loss):.2f} %, {reference} "
                            f"{max(ref_loss):.2f} %")
                out.append(f"{cell['fs']}/{cell['load']}: {what}: {'ok' if ok else 'BEHIND ' + reference.upper()}")
    return out


# --- report --------------------------------------------------------------------------------------------

def cell_rows(results, size):
    rows = []
    for cell in results["cells"]:
        for tool, r in cell["tools"].items():
            head = [cell["fs"], cell["load"], tool]
            if "error" in r:
                rows.append(head + ["error", r["error"][:60], "", "", ""])
            elif r.get("probe"):
                rows.append(head + ["(top only)", "", f"{sum(r['achieved_pps']) / len(r['achieved_pps']) / 1e6:.3f}",
                                    " / ".join(f"{x:.2f}%" for x in r["loss_pct"]), f"{cell['loadavg']}"])
            else:
                zl = r["zero_loss_pps"]
                rows.append(head + [f"{'>= ' if r['at_ceiling'] else ''}{zl / 1e6:.3f}",
                                    f"{zl * size * 8 / 1e9:.2f}", f"{r['ceiling_pps'] / 1e6:.3f}",
                                    "0%" if r["at_ceiling"] else f"{r['loss_at_ceiling_pct']:.2f}%",
                                    f"{cell['loadavg']}"])
    return rows


def verdicts(results):
    """Per cell: linecapd's zero-loss rate against tcpdump's (the issue's target)."""
    out = []
    for cell in results["cells"]:
        t = cell["tools"]
        lc = next((r for k, r in t.items() if k.startswith("linecapd") and "zero_loss_pps" in r), None)
        td = t.get("tcpdump")
        if lc is None or td is None or "zero_loss_pps" not in td:
            continue
        if lc["zero_loss_pps"] >= td["zero_loss_pps"]:
            verdict = ("linecapd >= tcpdump's lower bound (tcpdump lost nothing at the most the generator reached "
                       "beside it)" if td["at_ceiling"] else "linecapd >= tcpdump")
        elif lc["at_ceiling"]:
            # Nothing lost at the most the generator reached with linecapd attached: the
            # generator, not the capture, ended the search (on the softirq rig the XDP
            # program and its copy run on the sender's CPU).
            verdict = ("both lossless at the generator's ceiling: generator-bound, no verdict" if td["at_ceiling"] else
                       "linecapd lossless at the most the generator reached beside it, below tcpdump's "
                       "zero-loss rate: generator-bound, no verdict")
        else:
            verdict = "LINECAPD BELOW TCPDUMP"
        out.append(f"{cell['fs']}/{cell['load']}: linecapd {'>= ' if lc['at_ceiling'] else ''}"
                   f"{lc['zero_loss_pps'] / 1e6:.3f} vs tcpdump {'>= ' if td['at_ceiling'] else ''}"
                   f"{td['zero_loss_pps'] / 1e6:.3f} Mpps: {verdict}")
    return out


def write_markdown(path, results, args):
    c, rates = results["conditions"], results.get("rates")
    trials = []
    for cell in results["cells"]:
        for tool, r in cell["tools"].items():
            if "trials" in r:
                trials.append(f"- {cell['fs']}/{cell['load']} {tool}: " + ", ".join(
                    f"{'warm-up ' if t.get('warm_up') else ''}"
                    f"{'top' if t['offered'] == 'top' else format(t['offered'] / 1e6, '.3f')}"
                    f" → {t['achieved_pps'] / 1e6:.3f} Mpps {100 * t['lost'] / max(t['sent'], 1):.2f} %"
                    for t in r["trials"]))
    title = "loss at fixed offered rates" if rates else "zero-loss throughput"
    md = [f"## Live path: {title} ({args.size}-byte frames, {args.trial:.0f} s trials)", "",
          f"{results['generator']} from a network namespace into a veth pair (generator pinned to CPU 0; the receiving "
          f"veth's kernel work in {RIG_TEXT[args.rig]}), captured on the "
          f"other end: linecapd through `{results['live_device'].format(iface='IFACE')}` with the documented "
          f"settings (one worker on CPU 1), tcpdump `-w` pinned to CPU 1 with `-B` = linecapd's write blocks "
          f"({args.blocks} MiB each); stenographer: stenotype as its unit runs it, one thread, a TPACKET_V3 ring of "
          f"the same memory, O_DIRECT; netsniff-ng with a ring of the same memory. Load *busy*: two `python3 -c 'while True: pass'`, normal priority, "
          "unpinned; *extract*: `linecap extract` of a 200 MB store in a loop. "
          + ("One uncounted warm-up, then trials at each offered rate; " if rates else
             "Binary search over the offered rate; *generator max* = what the generator reaches at top speed with "
             "that tool attached; ") +
          f"kernel.sched_autogroup_enabled {results['rig']['autogroup']}. "
          f"{c['cpu_model']}, {c['cpus']} vCPUs, kernel {c['kernel']}, DPDK {c['dpdk']}, linecap {c['linecap']}, "
          f"{c['date']}; load average {results['load_start']['loadavg']} → {results['load_end']['loadavg']}.", "",
          md_table(*((rate_headers(rates), rate_rows(results, rates)) if rates else
                     (HEADERS, cell_rows(results, args.size)))), ""]
    md += [f"- {v}" for v in (rate_verdicts(results, rates) if rates else verdicts(results))]
    md += [""] + ["Trials (offered → achieved, loss):", ""] + trials + [""]
    with open(path, "w") as fh:
        fh.write("\n".join(md))


RIG_TEXT = {"napi-thread": "a NAPI kernel thread of its own for both tools, on the capture CPU at SCHED_FIFO "
                           f"{NAPI_RT_PRIORITY} (`--rig napi-thread`)",
            "softirq": "the sender's transmit call (`--rig softirq`)"}
def rate_headers(rates):
    return ["fs", "load", "tool"] + [f"lost at {rate_label(r)}" for r in rates] + ["load avg"]


HEADERS = ["fs", "load", "tool", "zero-loss Mpps", "Gbit/s", "generator max Mpps", "loss at max", "load avg"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", required=True, help="tmpfs cells: capture files go here")
    ap.add_argument("--disk-dir", help="disk cells: capture files go here (a real disk)")
    ap.add_argument("--fs", default="tmpfs,disk", help="comma list of tmpfs, disk (default both)")
    ap.add_argument("--load", default="quiet,busy", help="comma list of quiet, busy, extract (default quiet,busy)")
    ap.add_argument("--tools", default="linecapd,tcpdump",
                    help="comma list (default linecapd,tcpdump); see the tool names above")
    ap.add_argument("--blocks", type=int, default=256,
                    help="linecapd output.blocks_per_queue (1 MiB each); tcpdump gets the same memory (-B). "
                         "Default 256: a disk's write stalls outlast 32 MiB at these rates")
    ap.add_argument("--o-direct", choices=["auto", "on", "off"], default="off",
                    help="linecapd output.o_direct (default off, as shipped; auto: on into the disk)")
    ap.add_argument("--workdir", default="/tmp")
    ap.add_argument("--size", type=int, default=1024, help="frame size in bytes (default 1024)")
    ap.add_argument("--trial", type=float, default=10, help="seconds per trial (default 10)")
    ap.add_argument("--resolution", type=float, default=0.02, help="stop when the bracket is this share of the ceiling")
    ap.add_argument("--max-trials", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="development: 3 s trials, 5 %% resolution, at most 4 steps")
    ap.add_argument("--probe", type=int, default=0, metavar="N",
                    help="A/B mode: N trials at top speed per tool and cell instead of the search")
    ap.add_argument("--rates", metavar="LIST",
                    help="peer mode: trials at these offered rates (comma list of pps and/or 'top') instead of "
                         "the search; the table gives each tool's loss at each rate")
    ap.add_argument("--repeat", type=int, default=1, help="peer mode: how many times the list of rates runs")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--md", help="write the table (markdown, with the conditions) here")
    ap.add_argument("--gen-nice", type=int, default=None, metavar="N",
                    help="A/B: the generator alone in a session of its own at this nice level (e.g. -20: it stands "
                         "in for the network and takes CPU 0 from everything else); default: as the tools")
    ap.add_argument("--generator", choices=["trafgen", "tcpreplay"], default="trafgen",
                    help="what sends the frames (default trafgen: fast enough to find both tools' limits)")
    ap.add_argument("--autogroup", choices=["off", "on"], default="off",
                    help="kernel.sched_autogroup_enabled for the run (default off, as the package's "
                         "/usr/lib/sysctl.d/60-linecap.conf sets it; restored after)")
    ap.add_argument("--rig", choices=["napi-thread", "softirq"], default=DEFAULT_RIG,
                    help="where the receiving veth's kernel work runs (see above; default napi-thread)")
    ap.add_argument("--nice", type=int, default=0,
                    help="nice level (and autogroup nice) for the generator and every capture tool alike")
    args = ap.parse_args()
    global GEN_NICE
    GEN_NICE = args.gen_nice
    if args.quick:
        args.trial, args.resolution, args.max_trials = 3, 0.05, 4
    if args.nice:
        bench.NICE[:] = ["nice", "-n", str(args.nice)]
        bench.set_autogroup_nice(os.getpid(), args.nice)
    os.sched_setaffinity(0, {0})
    fss, loads, tools = args.fs.split(","), args.load.split(","), args.tools.split(",")
    rates = [r if r == "top" else int(float(r)) for r in args.rates.split(",")] if args.rates else None
    for needed, command in ((args.rig == "napi-thread", "ethtool"), (args.generator == "trafgen", "trafgen"),
                            (args.generator == "trafgen", "netsniff-ng")):
        if needed and shutil.which(command) is None:
            ap.error(f"{command} is not installed (scripts/install-deps.sh installs it)")
    if "disk" in fss and not args.disk_dir:
        ap.error("--fs disk needs --disk-dir")
    work = os.path.join(args.workdir, f"lc-rfc2544-{os.getpid()}")
    os.makedirs(work, exist_ok=True)
    pcap = os.path.join(work, "traffic.pcap")
    frames = 20000
    subprocess.run([sys.executable, bench.GEN_PCAP, "-q", "--count", str(frames), "--size", str(args.size),
                    "--flows", "256", "--out", pcap], check=True)
    gen = Trafgen(pcap, work) if args.generator == "trafgen" else Tcpreplay(pcap, frames)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = {"size": args.size, "trial_s": args.trial, "nice": args.nice, "blocks": args.blocks,
               "generator": gen.name,
               "live_device": LIVE_DEVICE, "live_settings": LIVE_SETTINGS,
               "conditions": bench.machine_conditions(), "load_start": bench.load_now(), "cells": []}
    with contextlib.ExitStack() as restore:
        if args.generator == "trafgen":
            restore.enter_context(bench.KernelSetting(bench.sysctl("net.core.wmem_default"), TRAFGEN_SNDBUF))
        if args.autogroup == "off":
            restore.enter_context(bench.KernelSetting(bench.sysctl("kernel.sched_autogroup_enabled"), 0))
        load = None
        try:
            results["rig"] = {"receive_path": args.rig, **veth_up(args.rig),
                          "autogroup": bench.KernelSetting.read(bench.sysctl("kernel.sched_autogroup_enabled"))}
            log(f"rig: {results['rig']}")
            for fs in fss:
                out_dir = args.disk_dir if fs == "disk" else args.out_dir
                for kind in loads:
                    cell = {"fs": fs, "load": kind, "out_dir": bench.fs_of(out_dir), "tools": {}}
                    results["cells"].append(cell)
                    tag = f"[{fs}/{kind}]"
                    try:
                        load = Load(kind, work, pcap)
                    except Exception as e:
                        log(f"{tag} load: {e}")
                        cell["tools"] = {t: {"error": f"load {kind}: {e}"} for t in tools}
                        continue
                    try:
                        for tool in tools:
                            log(f"--- {tag} {tool}")
                            target = None
                            try:
                                target = make_target(tool, out_dir, work, args, fs)
                                if rates:
                                    cell["tools"][tool] = fixed_rates(target, gen, args.trial, rates, args.repeat, tag)
                                elif args.probe:
                                    cell["tools"][tool] = probe(target, gen, args.trial, args.probe, tag)
                                else:
                                    cell["tools"][tool] = search(target, gen, args.trial, args.resolution,
                                                                 args.max_trials, tag)
                            except Exception as e:
                                log(f"{tag} {tool}: {e}")
                                cell["tools"][tool] = {"error": str(e)}
                            finally:
                                if target is not None:
                                    target.close()
                        cell["loadavg"] = round(os.getloadavg()[0], 1)
                    finally:
                        load.stop()
                        load = None
        finally:
            if load is not None:
                load.stop()
            bench.stop_all()
            veth_down()
            subprocess.run(["rm", "-rf", work])
    results["load_end"] = bench.load_now()
    results["rates"] = rates
    what = "Loss at fixed offered rates" if rates else "Zero-loss throughput"
    print(f"{what}, {args.size}-byte frames, {args.trial:.0f} s trials, {gen.name} from a netns "
          f"into a veth (generator on CPU 0, capture on CPU 1, receive path {args.rig}), {args.blocks} MiB of buffer "
          f"for each tool; "
          f"load {results['load_start']['loadavg']} → {results['load_end']['loadavg']}")
    if rates:
        print(text_table(rate_headers(rates), rate_rows(results, rates)))
        lines = rate_verdicts(results, rates)
    else:
        print(text_table(HEADERS, cell_rows(results, args.size)))
        lines = verdicts(results)
    for v in lines:
        print(v)
    if args.md:
        write_markdown(args.md, results, args)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
