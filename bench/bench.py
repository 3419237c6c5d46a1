#!/usr/bin/env python3
"""linecap benchmark suite: end to end capture into files, the references on the same
source (dpdk-testpmd rxonly, dpdk-dumpcap), the machine's own limits (file system raw
write speed, memcpy bandwidth), and the micro benchmarks. Run through bench/run.sh, which
prepares the machine (build, hugepages, a tmpfs) and undoes it afterwards.

  bench.py suite [--quick] [--seconds S] [--warmup S] ...   the table (stdout), results.md,
                                                             results.json and the PNG plot
  bench.py soak --duration SECONDS                           RSS over a long run

Everything it starts it stops; the output directories it is given are emptied as it goes.
Python 3 standard library only (matplotlib for the plot, optional).
"""

import argparse
import datetime
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("LINECAP_BUILD", os.path.join(ROOT, "build-bench"))
LINECAPD = os.environ.get("LINECAPD", os.path.join(BUILD, "src", "linecapd"))
FSBENCH = os.path.join(BUILD, "bench", "linecap_fsbench")
MICRO = os.path.join(BUILD, "bench", "linecap_micro")
GEN_PCAP = os.path.join(ROOT, "tests", "tools", "gen_pcap.py")
TESTPMD = os.environ.get("DPDK_TESTPMD", "dpdk-testpmd")
DUMPCAP = os.environ.get("DPDK_DUMPCAP", "dpdk-dumpcap")
LINE_RATE_64 = 14.88  # Mpps, 10 GbE, 64-byte frames (incl. FCS) + 20 bytes preamble/IFG

SIZES = ["64", "128", "512", "1024", "1514", "imix"]


NICE = []  # ["nice", "-n", "-N"] with --nice: every measured program gets the same priority


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)


# --- machine conditions ----------------------------------------------------------------------

def sh(cmd, check=False):
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{cmd}: {r.stderr.strip()}")
    return r.stdout.strip()


def load_now():
    """Load averages and a one-shot CPU busy share over 0.5 s (all CPUs)."""
    def stat():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + v[4]
        return sum(v), idle
    t1, i1 = stat()
    time.sleep(0.5)
    t2, i2 = stat()
    busy = 1.0 - (i2 - i1) / max(1, t2 - t1)
    la = os.getloadavg()
    return {"loadavg": [round(x, 2) for x in la], "cpu_busy_pct": round(100 * busy, 1)}


def machine_conditions():
    lscpu = sh("lscpu")
    model = re.search(r"Model name:\s*(.*)", lscpu)
    mhz = re.findall(r"cpu MHz\s*:\s*([\d.]+)", open("/proc/cpuinfo").read())
    return {
        "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
        "cpu_model": model.group(1).strip() if model else "?",
        "cpu_mhz": mhz[0] if mhz else "?",
        "cpus": os.cpu_count(),
        "hypervisor": (re.search(r"Hypervisor vendor:\s*(.*)", lscpu) or [None, "none"])[1],
        "l2": (re.search(r"L2 cache:\s*(.*)", lscpu) or [None, "?"])[1],
        "l3": (re.search(r"L3 cache:\s*(.*)", lscpu) or [None, "?"])[1],
        "kernel": os.uname().release,
        "mem_total_gib": round(int(re.search(r"MemTotal:\s*(\d+)", open("/proc/meminfo").read()).group(1)) / 2**20, 1),
        "dpdk": sh("pkg-config --modversion libdpdk") or "?",
        "linecap": sh(f"git -C {ROOT} describe --always --dirty 2>/dev/null") or "?",
    }


def fs_of(path):
    out = sh(f"findmnt -n -o FSTYPE,SOURCE,OPTIONS --target {path}")
    parts = out.split(None, 2)
    return {"path": path, "fstype": parts[0] if parts else "?", "source": parts[1] if len(parts) > 1 else "?",
            "options": parts[2] if len(parts) > 2 else ""}


# --- source files ------------------------------------------------------------------------------

def gen_source(workdir, size, queues, count, proto="udp"):
    """One pcap per queue: `count` frames of `size` bytes (or IMIX), UDP/IPv4 (or TCP), many flows."""
    files = []
    for q in range(queues):
        path = os.path.join(workdir, f"src-{size}-{proto}-q{q}.pcap")
        if not os.path.exists(path):
            args = [sys.executable, GEN_PCAP, "-q", "--count", str(count), "--seed", str(100 + q),
                    "--flows", "1024", "--proto", proto, "--out", path]
            args += ["--imix"] if size == "imix" else ["--size", size]
            subprocess.run(args, check=True)
        files.append(path)
    return files


def mean_frame_len(path):
    """Average captured length of the frames in a (little-endian, ns) pcap file."""
    import struct
    total = n = 0
    with open(path, "rb") as f:
        f.read(24)
        while True:
            h = f.read(16)
            if len(h) < 16:
                break
            caplen = struct.unpack("<IIII", h)[2]
            f.seek(caplen, 1)
            total += caplen
            n += 1
    return total / n if n else 0.0


# --- processes -----------------------------------------------------------------------------------

class Proc:
    """A child process in its own process group, logged to a file; stop() ends the group."""

    def __init__(self, args, logpath, env=None):
        self.logpath = logpath
        self.log = open(logpath, "w")
        self.p = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True, stdin=subprocess.DEVNULL)
        if NICE:
            set_autogroup_nice(self.p.pid, int(NICE[2]))

    def alive(self):
        return self.p.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()
        self.log.close()
        return self.p.returncode

    def text(self):
        with open(self.logpath, errors="replace") as f:
            return f.read()


RUNNING = []


def set_autogroup_nice(pid, nice):
    """With sched_autogroup (a session = a scheduling group), nice only ranks threads inside
    their session; what decides between sessions is the autogroup's own nice."""
    try:
        with open(f"/proc/{pid}/autogroup", "w") as fh:
            fh.write(str(nice))
    except OSError:
        pass


def stop_all():
    for p in RUNNING:
        try:
            p.stop(timeout=10)
        except Exception:
            pass
    RUNNING.clear()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_until(cond, timeout, what, proc=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        if proc is not None and not proc.alive():
            raise RuntimeError(f"{what}: process exited: {proc.text()[-2000:]}")
        time.sleep(0.1)
    raise RuntimeError(f"{what}: not after {timeout}s")


# --- output directory janitor ------------------------------------------------------------------

class Janitor(threading.Thread):
    """Deletes finished capture files (*.pcap, *.pcapng) as they appear, so a run of any length
    fits a small tmpfs; counts what it deleted. linecap's own retention would do this in
    production; here it must cost the daemon nothing, so it runs in the harness (on CPU 0)."""

    def __init__(self, directory, period=0.2, keep_s=0.0):
        super().__init__(daemon=True)
        self.directory, self.period, self.keep_s = directory, period, keep_s
        self.halt = threading.Event()
        self.deleted_bytes = 0
        self.deleted_files = 0

    def sweep(self, everything=False):
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return
        for name in names:
            if everything or name.endswith((".pcap", ".pcapng", ".idx")):
                path = os.path.join(self.directory, name)
                try:
                    st = os.stat(path)
                    size = st.st_size
                    # With indexing on, a finished file stays `keep_s` seconds for the indexer.
                    if not everything and self.keep_s and time.time() - st.st_mtime < self.keep_s:
                        continue
                    os.unlink(path)
                    self.deleted_bytes += size
                    self.deleted_files += 1
                except (FileNotFoundError, IsADirectoryError):
                    pass

    def run(self):
        while not self.halt.wait(self.period):
            self.sweep()

    def stop(self):
        self.halt.set()
        self.join()
        self.sweep(everything=True)


# --- metrics ---------------------------------------------------------------------------------------

METRIC_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+(\S+)")
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(url):
    with urllib.request.urlopen(url, timeout=2) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = METRIC_LINE.match(line)
        if not m:
            continue
        labels = tuple(sorted(LABEL.findall(m.group(3) or "")))
        try:
            out[(m.group(1), labels)] = float(m.group(4))
        except ValueError:
            pass
    return out


def msum(sample, name, **want):
    total = 0.0
    for (n, labels), v in sample.items():
        if n != name:
            continue
        d = dict(labels)
        if all(d.get(k) == v2 for k, v2 in want.items()):
            total += v
    return total


def mvalues(sample, name):
    return [v for (n, _), v in sample.items() if n == name]


def thread_cpu(pid):
    """CPU seconds per thread name of a process (utime + stime)."""
    out = {}
    hz = os.sysconf("SC_CLK_TCK")
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                s = f.read()
        except FileNotFoundError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        fields = s[s.rindex(")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / hz
        last_cpu = int(fields[36])
        key = name
        while key in out:
            key += "+"
        out[key] = (cpu, last_cpu)
    return out


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            m = re.search(r"VmRSS:\s*(\d+)", f.read())
        return int(m.group(1)) if m else 0
    except FileNotFoundError:
        return 0


# --- linecapd -----------------------------------------------------------------------------------------

LCORES = {
    # workers: (eal.lcores, what it means)
    "1w": ("0-1", "1 worker on CPU 1; main/control + writer thread on CPU 0"),
    "2w": ("0@0,1@1,2@1", "2 workers (2 queues) time-sharing CPU 1; main/control + writer on CPU 0"),
    "2w2cpu": ("0@0,1@0,2@1", "2 workers on CPU 0 and CPU 1; the CPU 0 worker shares with main/control + writer"),
}


def linecapd_config(path, outdir, sources, mode, args, metrics_port, packets_per_file, extra_output="", bpf=""):
    lcores = LCORES[mode][0]
    queues = len(sources)
    device = "net_pcap0," + ",".join(f"rx_pcap={s}" for s in sources) + ",infinite_rx=1"
    # infinite_rx keeps every packet of the file in an mbuf from the port's pool and copies
    # from it on every rx: the pool needs those plus the usual descriptors, bursts, caches.
    mbufs = packets_per_file * queues + 16384
    with open(path, "w") as f:
        f.write(f"""# written by bench/bench.py
eal:
  lcores: "{lcores}"
ports:
  - name: bench
    device: "{device}"
    rx_queues: {queues}
    rx_descriptors: 1024
    mtu: 1500
{f"    filter: {json.dumps(bpf)}" + chr(10) if bpf else ""}capture:
  burst_size: {args.burst}
  mbufs: {mbufs}
output:
  directory: "{outdir}"
  rotate: {{ size_mb: {args.rotate_mb}, interval_s: 0 }}
  block_size_kb: {args.block_kb}
  blocks_per_queue: {args.blocks}
  writer_threads: {args.writer_threads}
  o_direct: {"true" if args.o_direct else "false"}
  manifest: false
  index: {"true" if args.index else "false"}
  fsync: rotate
{extra_output}metrics:
  enabled: true
  listen: "127.0.0.1:{metrics_port}"
log:
  level: info
""")


def run_linecapd(tag, workdir, outdir, sources, mode, args, packets_per_file, seconds=None, warmup=None,
                 soak=False, sample_period=1.0, bpf=""):
    seconds = seconds if seconds is not None else args.seconds
    warmup = warmup if warmup is not None else args.warmup
    os.makedirs(outdir, exist_ok=True)
    janitor = Janitor(outdir, keep_s=args.index_keep_s if args.index else 0.0)
    janitor.sweep(everything=True)
    port = free_port()
    cfg = os.path.join(workdir, f"{tag}.yaml")
    linecapd_config(cfg, outdir, sources, mode, args, port, packets_per_file, bpf=bpf)
    url = f"http://127.0.0.1:{port}/metrics"
    load_before = load_now()
    proc = Proc(NICE + [LINECAPD, "--config", cfg], os.path.join(workdir, f"{tag}.log"))
    RUNNING.append(proc)
    janitor.start()
    samples = []
    try:
        wait_until(lambda: "capture running" in proc.text(), 60, f"{tag}: linecapd start", proc)
        wait_until(lambda: _scrape_ok(url), 30, f"{tag}: metrics endpoint", proc)
        time.sleep(warmup)
        t_end = time.time() + seconds
        while True:
            t = time.time()
            s = scrape(url)
            samples.append({"t": t, "m": s, "threads": thread_cpu(proc.p.pid), "rss_kib": rss_kib(proc.p.pid)})
            if t >= t_end or not proc.alive():
                break
            time.sleep(max(0.0, min(sample_period, t_end - time.time())))
    finally:
        rc = proc.stop(timeout=60)
        RUNNING.remove(proc)
        janitor.stop()
    load_after = load_now()
    if rc != 0:
        raise RuntimeError(f"{tag}: linecapd exited {rc}: {proc.text()[-2000:]}")
    if len(samples) < 2:
        raise RuntimeError(f"{tag}: not enough samples")
    return summarise_linecapd(tag, samples, proc.text(), load_before, load_after, soak)


def _scrape_ok(url):
    try:
        scrape(url)
        return True
    except Exception:
        return False


def summarise_linecapd(tag, samples, logtext, load_before, load_after, soak):
    a, b = samples[0], samples[-1]
    dt = b["t"] - a["t"]

    def delta(name, **want):
        return msum(b["m"], name, **want) - msum(a["m"], name, **want)

    rx = delta("linecap_rx_packets_total")
    written = delta("linecap_written_packets_total")
    filtered = delta("linecap_filtered_packets_total")
    wire_bytes = delta("linecap_written_bytes_total")
    file_bytes = delta("linecap_output_file_bytes_total")
    reasons = {}
    for (n, labels), _ in b["m"].items():
        if n == "linecap_dropped_packets_total":
            r = dict(labels).get("reason")
            reasons[r] = reasons.get(r, 0) + 0
    for r in list(reasons):
        reasons[r] = delta("linecap_dropped_packets_total", reason=r)
    cpp = [v for s in samples[1:] for v in mvalues(s["m"], "linecap_worker_cycles_per_packet") if v == v]
    busy = [v for s in samples[1:] for v in mvalues(s["m"], "linecap_worker_busy_ratio") if v == v]

    # Thread CPU use over the window (share of one CPU), by thread name.
    cpu = {}
    for name, (c1, last) in b["threads"].items():
        c0 = a["threads"].get(name, (c1, last))[0]
        cpu[name] = {"cpu_pct": round(100 * (c1 - c0) / dt, 1), "cpu": last}
    writer_cpu = sum(v["cpu_pct"] for k, v in cpu.items() if k.startswith("lc-writer"))
    # Writes that took longer than 10 ms: stalls that the block pool must ride out.
    slow_writes = latency_count_total = 0
    for (n, labels), v in b["m"].items():
        if n == "linecap_write_latency_seconds_bucket" and dict(labels).get("le") == "0.01":
            slow_writes = delta("linecap_write_latency_seconds_count") - (v - msum(a["m"], n, le="0.01"))
    latency_count = delta("linecap_write_latency_seconds_count")
    latency_sum = delta("linecap_write_latency_seconds_sum")
    summary = re.findall(r".*reached the port.*", logtext)
    res = {
        "tag": tag,
        "seconds": round(dt, 2),
        "rx_mpps": rx / dt / 1e6,
        "written_mpps": written / dt / 1e6,
        "filtered_mpps": filtered / dt / 1e6,
        "indexed_files": int(delta("linecap_index_files_total", result="built")),
        "index_queued": msum(b["m"], "linecap_index_queued_files"),
        "index_busy_s": delta("linecap_index_busy_seconds_total"),
        "written_gbit": wire_bytes * 8 / dt / 1e9,
        "file_gbps": file_bytes / dt / 1e9,
        "drops": {k: v / dt / 1e6 for k, v in reasons.items()},  # Mpps per reason
        "drops_total": {k: int(v) for k, v in reasons.items()},
        "drop_pct": 100.0 * (rx - written - filtered) / rx if rx else 0.0,
        "cycles_per_packet": statistics.median(cpp) if cpp else float("nan"),
        "busy_ratio": statistics.median(busy) if busy else float("nan"),
        "writer_cpu_pct": writer_cpu,
        "write_latency_us": 1e6 * latency_sum / latency_count if latency_count else float("nan"),
        "writes": int(latency_count),
        "writes_over_10ms": int(slow_writes),
        "threads": cpu,
        "rss_kib": [s["rss_kib"] for s in samples],
        "rss_t": [round(s["t"] - a["t"], 1) for s in samples],
        "load_before": load_before,
        "load_after": load_after,
        "summary": summary[-1].strip() if summary else "",
    }
    # Per-second written rate, to show a slow start on fresh memory.
    series = []
    for s0, s1 in zip(samples, samples[1:]):
        d = msum(s1["m"], "linecap_written_packets_total") - msum(s0["m"], "linecap_written_packets_total")
        series.append(round(d / (s1["t"] - s0["t"]) / 1e6, 2))
    res["written_mpps_series"] = series
    return res


# --- references --------------------------------------------------------------------------------------------

def testpmd_args(sources, packets_per_file, burst, in_memory, prefix):
    vdev = "net_pcap0," + ",".join(f"rx_pcap={s}" for s in sources) + ",infinite_rx=1"
    eal = ["-l", "0,1", "--vdev", vdev, "--no-pci", "--log-level", "*:notice"]
    # A prefix of ours either way: EAL makes its runtime directory even --in-memory, and
    # bench/run.sh removes /var/run/dpdk/lcbench* when it is done.
    eal += ["--in-memory", "--file-prefix", f"lcbench{os.getpid()}m"] if in_memory else ["--file-prefix", prefix]
    mbufs = packets_per_file * len(sources) + 16384
    app = ["--forward-mode=rxonly", "--nb-cores=1", f"--rxq={len(sources)}", f"--txq={len(sources)}",
           f"--burst={burst}", f"--total-num-mbufs={mbufs}", "--stats-period=1", "--rxd=1024", "--txd=1024"]
    return NICE + [TESTPMD] + eal + ["--"] + app


def parse_rx_pps(text):
    return [int(x) for x in re.findall(r"Rx-pps:\s+(\d+)", text)]


def run_testpmd(tag, workdir, sources, args, packets_per_file):
    proc = Proc(testpmd_args(sources, packets_per_file, args.burst, True, None), os.path.join(workdir, f"{tag}.log"))
    RUNNING.append(proc)
    load_before = load_now()
    try:
        wait_until(lambda: len(parse_rx_pps(proc.text())) >= 1, 60, f"{tag}: testpmd start", proc)
        n0 = len(parse_rx_pps(proc.text()))
        time.sleep(args.warmup + args.seconds + 0.5)
    finally:
        proc.stop(sig=signal.SIGINT, timeout=30)
        RUNNING.remove(proc)
    pps = parse_rx_pps(proc.text())
    # The stats lines come once a second; skip the warm-up ones.
    skip = n0 + int(args.warmup)
    window = pps[skip:] if len(pps) > skip + 2 else pps[1:]
    return {"tag": tag, "rx_mpps": statistics.median(window) / 1e6 if window else float("nan"),
            "rx_mpps_series": [round(x / 1e6, 2) for x in window], "load_before": load_before}


def run_dumpcap(tag, workdir, outdir, sources, args, packets_per_file, record_bytes):
    """dpdk-dumpcap (pcap, -P) attached to a dpdk-testpmd rxonly primary on the same source.
    The primary must not be --in-memory and shares a file prefix with dumpcap; Debian's
    dumpcap only sees the primary's mempool ops when librte_mempool_dpaa is preloaded (the
    ops are registered in library constructor order, which must match the primary's)."""
    os.makedirs(outdir, exist_ok=True)
    prefix = f"lcbench{os.getpid()}"
    # The secondary fails to attach net_pcap0 ("failed to initialize net_pcap0 device")
    # when the device's arguments exceed about 80 characters (measured with DPDK 22.11.11;
    # /tmp/src64.pcap works, the same file under the bench's work directory does not), so
    # the primary opens the sources through short symlinks.
    short = tempfile.mkdtemp(prefix="lcd", dir="/tmp")
    links = []
    for i, src in enumerate(sources):
        links.append(os.path.join(short, f"q{i}.pcap"))
        os.symlink(os.path.abspath(src), links[-1])
    sources = links
    primary = Proc(testpmd_args(sources, packets_per_file, args.burst, False, prefix),
                   os.path.join(workdir, f"{tag}-testpmd.log"))
    RUNNING.append(primary)
    out = os.path.join(outdir, "dumpcap.pcap")
    res = {"tag": tag}
    try:
        wait_until(lambda: len(parse_rx_pps(primary.text())) >= 1, 60, f"{tag}: testpmd primary", primary)
        env = dict(os.environ)
        pre = find_dpaa_mempool()
        if pre:
            env["LD_PRELOAD"] = pre
        duration = int(args.warmup + args.seconds + 3)
        # The secondary asks the primary for net_pcap's handles over EAL IPC; on a loaded
        # machine that request can time out ("failed to initialize net_pcap0"): try again.
        for attempt in range(3):
            dump = Proc(NICE + [DUMPCAP, f"--file-prefix={prefix}", "-i", "0", "-P", "-s", "65535", "-w", out,
                         "-a", f"duration:{duration}"], os.path.join(workdir, f"{tag}.log"), env=env)
            RUNNING.append(dump)
            try:
                wait_until(lambda: os.path.exists(out), 30, f"{tag}: dumpcap output", dump)
                break
            except RuntimeError:
                dump.stop()
                RUNNING.remove(dump)
                if attempt == 2:
                    raise
                log(f"{tag}: dumpcap did not start, retrying")
                time.sleep(2)
        time.sleep(args.warmup)
        s0, t0 = os.path.getsize(out), time.time()
        pps0 = len(parse_rx_pps(primary.text()))
        time.sleep(args.seconds)
        s1, t1 = os.path.getsize(out), time.time()
        pps = parse_rx_pps(primary.text())[pps0:]
        dump.p.wait(timeout=duration + 30)
        dump.stop()
        RUNNING.remove(dump)
        text = dump.text()
        m = re.search(r"Packets received/dropped on interface '[^']*':?\s*(\d+)/(\d+)", text)
        received, dropped = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        res.update({
            "written_mpps": (s1 - s0) / record_bytes / (t1 - t0) / 1e6,
            "file_gbps": (s1 - s0) / (t1 - t0) / 1e9,
            "primary_rx_mpps": statistics.median(pps) / 1e6 if pps else float("nan"),
            "received": received, "dropped": dropped,
            "drop_pct": 100.0 * dropped / (received + dropped) if received + dropped else float("nan"),
            "preload": pre or "",
        })
        if not m:
            res["note"] = "no summary from dumpcap: " + text[-300:]
    finally:
        primary.stop(sig=signal.SIGINT, timeout=30)
        if primary in RUNNING:
            RUNNING.remove(primary)
        for name in os.listdir(outdir):
            os.unlink(os.path.join(outdir, name))
        sh(f"rm -rf /var/run/dpdk/{prefix} {short}")
    return res


def find_dpaa_mempool():
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"):
        p = os.path.join(d, "librte_mempool_dpaa.so.23")
        if os.path.exists(p):
            return p
    return ""


# --- machine limits ------------------------------------------------------------------------------------------

def fsbench_write(directory, mib, block_kb, fsync, direct=False):
    args = NICE + [FSBENCH, "write", directory, str(mib), "--block", str(block_kb), "--file", "256"]
    if fsync:
        args.append("--fsync")
    if direct:
        args.append("--direct")
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr.strip()}
    kv = dict(x.split("=", 1) for x in out.stdout.split())
    return {"gbps": float(kv["gbps"]), "series": [float(x) for x in kv["series_gbps"].split(",") if x],
            "bytes": int(kv["bytes"]), "direct": direct, "fsync": fsync, "block_kb": block_kb}


def fsbench_memcpy(mib, chunk):
    out = subprocess.run(NICE + [FSBENCH, "memcpy", str(mib), "--chunk", str(chunk)], capture_output=True, text=True)
    kv = dict(x.split("=", 1) for x in out.stdout.split())
    return {"gbps": float(kv["gbps"]), "chunk": chunk}


def run_micro(workdir):
    if not os.path.exists(MICRO):
        return {"error": "linecap_micro not built (Google Benchmark missing)"}
    out = os.path.join(workdir, "micro.json")
    r = subprocess.run(NICE + ["taskset", "-c", "1", MICRO, "--benchmark_format=json", f"--benchmark_out={out}",
                        "--benchmark_out_format=json", "--benchmark_min_time=0.2"],
                       capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(out):
        return {"error": r.stderr[-500:]}
    with open(out) as f:
        data = json.load(f)
    rows = []
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate":
            continue
        rows.append({
            "name": b["name"],
            "label": b.get("label", ""),
            "ns_per_iter": b.get("real_time"),
            "mitems_per_s": b.get("items_per_second", 0) / 1e6,
            "gbytes_per_s": b.get("bytes_per_second", 0) / 1e9,
            "tsc_per_item": b.get("tsc_per_item"),
            "error": b.get("error_message", ""),
        })
    return {"rows": rows, "context": data.get("context", {})}


# --- the suite --------------------------------------------------------------------------------------------------

def record_bytes_for(size, src):
    return 16 + (mean_frame_len(src) if size == "imix" else int(size))


def suite(args):
    os.sched_setaffinity(0, {0})  # the harness and its janitor stay off the worker's CPU
    workdir = args.workdir
    os.makedirs(workdir, exist_ok=True)
    results = {"conditions": machine_conditions(), "args": vars(args).copy(), "runs": [], "refs": {},
               "limits": {}, "lcores": {k: v[1] for k, v in LCORES.items()}}
    results["conditions"]["load_start"] = load_now()
    filesystems = {"tmpfs": args.tmpfs_dir, "disk": args.disk_dir}
    filesystems = {k: v for k, v in filesystems.items() if v and k in args.fs}
    for name, d in filesystems.items():
        results["conditions"][f"fs_{name}"] = fs_of(d)
    sizes = args.sizes
    packets = args.packets

    # Machine limits first (this also warms tmpfs: memory the host took back comes home).
    if not args.no_limits:
        log("memcpy bandwidth")
        results["limits"]["memcpy_1m"] = fsbench_memcpy(8192 if not args.quick else 2048, 1 << 20)
        results["limits"]["memcpy_80"] = fsbench_memcpy(2048 if not args.quick else 512, 80)
    for name, d in (filesystems.items() if not args.no_limits else []):
        mib = args.fs_mib
        log(f"raw sequential write into {name} ({d}), {mib} MiB x2 (first: cold, second: warm)")
        cold = fsbench_write(d, mib, args.block_kb, fsync=True)
        warm = fsbench_write(d, mib, args.block_kb, fsync=True)
        results["limits"][f"fs_{name}"] = {"cold": cold, "warm": warm}
        if name == "disk":
            results["limits"]["fs_disk_direct"] = fsbench_write(d, mib, args.block_kb, fsync=True, direct=True)

    if not args.no_micro:
        log("micro benchmarks (pinned to CPU 1)")
        results["micro"] = run_micro(workdir)

    for size in sizes:
        src1 = gen_source(workdir, size, 1, packets)
        src2 = gen_source(workdir, size, 2, packets)
        rec = record_bytes_for(size, src1[0])
        if not args.no_refs:
            log(f"testpmd rxonly, {size}")
            try:
                results["refs"][f"testpmd-{size}"] = run_testpmd(f"testpmd-{size}", workdir, src1, args, packets)
            except Exception as e:
                results["refs"][f"testpmd-{size}"] = {"error": str(e)}
            log(f"dpdk-dumpcap on a testpmd primary, {size}")
            try:
                results["refs"][f"dumpcap-{size}"] = run_dumpcap(f"dumpcap-{size}", workdir,
                                                                 filesystems.get("tmpfs", args.disk_dir) + "/dumpcap",
                                                                 src1, args, packets, rec)
            except Exception as e:
                results["refs"][f"dumpcap-{size}"] = {"error": str(e)}
        for fsname, d in filesystems.items():
            if not args.no_limits:
                # The file system's raw speed right before the captures that are set against it:
                # the load on a shared machine changes over a run of several minutes.
                raw = fsbench_write(d, min(args.fs_mib, 2048), args.block_kb, fsync=True)
                results["limits"][f"fs_{fsname}_{size}"] = raw
                log(f"raw sequential write into {fsname}: {raw.get('gbps', float('nan')):.2f} GB/s")
            for mode in args.workers:
                if mode == "2w2cpu" and size != "64":
                    continue
                tag = f"linecap-{size}-{fsname}-{mode}"
                log(f"{tag}")
                src = src1 if mode == "1w" else src2
                reps = []
                repeat = args.repeat if (not args.repeat_sizes or size in args.repeat_sizes) else 1
                for rep in range(repeat):
                    try:
                        r = run_linecapd(tag, workdir, os.path.join(d, "linecap-out"), src, mode, args, packets)
                    except Exception as e:
                        log(f"{tag}: {e}")
                        r = {"tag": tag, "error": str(e)}
                    reps.append(r)
                    if "error" not in r and repeat > 1:
                        log(f"  repetition {rep + 1}: written {r['written_mpps']:.2f} Mpps of rx {r['rx_mpps']:.2f}, "
                            f"{r['cycles_per_packet']:.0f} cyc/pkt")
                r = aggregate(reps)
                r.update({"size": size, "fs": fsname, "mode": mode, "record_bytes": rec})
                results["runs"].append(r)
                if "error" not in r:
                    drops = {k: round(v, 2) for k, v in r["drops"].items() if v}
                    log(f"  written {r['written_mpps']:.2f} Mpps of rx {r['rx_mpps']:.2f}; drops {drops}; "
                        f"{r['cycles_per_packet']:.0f} cyc/pkt; writer CPU {r['writer_cpu_pct']:.0f}%; "
                        f"{r['writes_over_10ms']} of {r['writes']} writes > 10 ms; per s {r['written_mpps_series']}")
    if args.filter and "tmpfs" in filesystems:
        results["filter"] = filter_pair(args, workdir, filesystems["tmpfs"], packets)
    results["conditions"]["load_end"] = load_now()
    derive(results)
    return results


def filter_pair(args, workdir, directory, packets):
    """The cost of a typical filter end to end: 64-byte TCP/IPv4 frames (1024 flows, about
    one in seven to port 443), one worker, into tmpfs, without and with the filter, same
    source, back to back. The worker evaluates the filter on every packet and copies only
    what it accepts, so the rate it takes from the port (rx) is what the filter costs and
    saves; the difference in cycles per packet is its cost inside the whole loop."""
    src = gen_source(workdir, "64", 1, packets, proto="tcp")
    out = {"expr": args.filter, "size": "64", "proto": "tcp"}
    for key, bpf in (("unfiltered", ""), ("filtered", args.filter)):
        tag = f"linecap-64-tcp-{key}"
        log(tag + (f" ({bpf})" if bpf else ""))
        try:
            r = aggregate([run_linecapd(tag, workdir, os.path.join(directory, "linecap-out"), src, "1w", args,
                                        packets, bpf=bpf) for _ in range(args.repeat)])
        except Exception as e:
            log(f"{tag}: {e}")
            r = {"error": str(e)}
        out[key] = r
        if "error" not in r:
            log(f"  rx {r['rx_mpps']:.2f} Mpps, written {r['written_mpps']:.2f}, filtered {r['filtered_mpps']:.2f}, "
                f"drops {({k: round(v, 2) for k, v in r['drops'].items() if v})}, {r['cycles_per_packet']:.0f} cyc/pkt")
    return out


def filter_rows(results):
    fp = results.get("filter")
    if not fp:
        return []
    rows = []
    for key in ("unfiltered", "filtered"):
        r = fp.get(key, {})
        if "error" in r:
            rows.append([key, "error: " + r["error"][:60]] + [""] * 5)
            continue
        drops = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r["drops"].items()) if v > 0.0005) or "0"
        rows.append([fp["expr"] if key == "filtered" else "(none)", f(r["rx_mpps"]), f(r["written_mpps"]),
                     f(r["filtered_mpps"]), drops, f(r["cycles_per_packet"], "{:.0f}"), f(r["busy_ratio"])])
    return rows


FILTER_HEADERS = ["filter", "rx Mpps", "written Mpps", "filtered Mpps", "drops Mpps by reason", "cyc/pkt", "busy"]


def aggregate(reps):
    """Several repetitions of one point: the median one (by written rate) stands for the point,
    with the spread of the written and received rates and the cycles per packet."""
    ok = [r for r in reps if "error" not in r]
    if not ok:
        return reps[-1]
    ok.sort(key=lambda r: r["written_mpps"])
    r = dict(ok[len(ok) // 2])
    r["repetitions"] = len(ok)
    for k in ("written_mpps", "rx_mpps", "cycles_per_packet"):
        vals = [x[k] for x in ok]
        r[k + "_all"] = [round(v, 2) for v in vals]
        r[k + "_spread"] = [min(vals), max(vals)]
    return r


def derive(results):
    """Machine limit per run = min(source rate (testpmd rxonly), raw fs write speed / record size)."""
    for r in results["runs"]:
        if "error" in r:
            continue
        tp = results["refs"].get(f"testpmd-{r['size']}", {})
        dc = results["refs"].get(f"dumpcap-{r['size']}", {})
        fs = results["limits"].get(f"fs_{r['fs']}_{r['size']}") or results["limits"].get(f"fs_{r['fs']}", {}).get("warm", {})
        src = tp.get("rx_mpps", float("nan"))
        fs_mpps = fs.get("gbps", float("nan")) * 1e9 / r["record_bytes"] / 1e6
        limit = min(x for x in (src, fs_mpps) if x == x) if (src == src or fs_mpps == fs_mpps) else float("nan")
        r["fs_gbps"] = fs.get("gbps", float("nan"))
        r["source_mpps"] = src
        r["fs_limit_mpps"] = fs_mpps
        r["limit_mpps"] = limit
        r["limit_by"] = "source" if src == limit else "filesystem"
        r["of_limit"] = r["written_mpps"] / limit if limit == limit and limit else float("nan")
        r["vs_testpmd"] = r["rx_mpps"] / src if src == src and src else float("nan")
        dw = dc.get("written_mpps", float("nan"))
        r["vs_dumpcap"] = r["written_mpps"] / dw if dw == dw and dw else float("nan")


# --- reporting ----------------------------------------------------------------------------------------------------

def f(x, fmt="{:.2f}"):
    if x is None or (isinstance(x, float) and x != x):
        return "–"
    return fmt.format(x)


def written_cell(r):
    if r.get("repetitions", 1) > 1:
        lo, hi = r["written_mpps_spread"]
        return f"{r['written_mpps']:.2f} ({lo:.1f}–{hi:.1f})"
    return f(r["written_mpps"])


def table_rows(results):
    rows = []
    for r in results["runs"]:
        if "error" in r:
            rows.append([r["size"], r["fs"], r["mode"], "error: " + r["error"][:60]] + [""] * 11)
            continue
        drops = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r["drops"].items()) if v > 0.0005) or "0"
        rows.append([
            r["size"], r["fs"], r["mode"], f(r["rx_mpps"]), written_cell(r), f(r["written_gbit"]),
            drops, f(r["cycles_per_packet"], "{:.0f}"), f(r["busy_ratio"]), f(r["file_gbps"]),
            f(r.get("fs_gbps")),
            f(r["writer_cpu_pct"], "{:.0f}%"), f(r.get("limit_mpps")) + " (" + r.get("limit_by", "?")[:2] + ")",
            f(r.get("of_limit")), f(r.get("vs_testpmd")), f(r.get("vs_dumpcap"), "{:.1f}×"),
        ])
    return rows


HEADERS = ["size", "fs", "workers", "rx Mpps", "written Mpps", "Gbit/s", "drops Mpps by reason", "cyc/pkt",
           "busy", "writer GB/s", "fs raw GB/s", "writer CPU", "limit Mpps", "of limit", "rx/testpmd",
           "vs dumpcap"]


def text_table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    return "\n".join(out)


def md_table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c).replace("|", "/") for c in r) + " |")
    return "\n".join(out)


def refs_rows(results):
    rows = []
    for size in results["args"]["sizes"]:
        tp = results["refs"].get(f"testpmd-{size}", {})
        dc = results["refs"].get(f"dumpcap-{size}", {})
        rows.append([size, f(tp.get("rx_mpps")), f(dc.get("written_mpps")), f(dc.get("drop_pct"), "{:.0f}%"),
                     f(dc.get("primary_rx_mpps")), tp.get("error", "") or dc.get("error", "") or dc.get("note", "")])
    return rows


def conditions_text(results):
    c = results["conditions"]
    a = results["args"]
    lines = [
        f"- {c['date']}, linecap {c['linecap']}, DPDK {c['dpdk']}, kernel {c['kernel']}",
        f"- CPU: {c['cpu_model']}, {c['cpus']} vCPUs ({c['hypervisor']}), {c['cpu_mhz']} MHz, L2 {c['l2']}, "
        f"L3 {c['l3']}; {c['mem_total_gib']} GiB RAM",
        f"- load (1/5/15 min) at start {c['load_start']['loadavg']} ({c['load_start']['cpu_busy_pct']}% CPU busy), "
        f"at end {c['load_end']['loadavg']} ({c['load_end']['cpu_busy_pct']}% busy)",
        f"- source: net_pcap infinite_rx, one file of {a['packets']} frames per queue, UDP/IPv4, 1024 flows; "
        f"sizes are captured frame lengths (no FCS); imix = 7:4:1 of 60/590/1514 bytes",
        f"- linecapd: burst {a['burst']}, blocks {a['blocks']} × {a['block_kb']} KiB per queue (hugepages), "
        f"{a['writer_threads']} writer thread(s), O_DIRECT {a['o_direct']}, files rotate at {a['rotate_mb']} MiB, "
        f"fsync on rotate, no manifest, "
        + (f"background indexer on (files kept {a.get('index_keep_s', 2)} s for it)" if a.get("index") else "no index")
        + "; finished files are deleted by the harness as they appear",
        f"- window: {a['warmup']} s warm-up, then {a['seconds']} s measured (metrics scraped once a second)"
        + (f"; {'sizes ' + ','.join(a['repeat_sizes']) if a.get('repeat_sizes') else 'each point'} measured "
           f"{a['repeat']} times: median, (min–max) of the written rate" if a.get("repeat", 1) > 1 else "")
        + (f"; every measured program ran at nice {a['nice']}" if a.get("nice") else ""),
    ]
    for k in ("fs_tmpfs", "fs_disk"):
        if k in c:
            lines.append(f"- {k[3:]}: {c[k]['path']} ({c[k]['fstype']} {c[k]['source']}, {c[k]['options']})")
    for k, v in results["lcores"].items():
        lines.append(f"- workers `{k}`: {v}")
    lim = results["limits"]
    parts = []
    for k in ("fs_tmpfs", "fs_disk"):
        if k in lim:
            parts.append(f"{k[3:]} {lim[k]['cold'].get('gbps', float('nan')):.2f} GB/s cold, "
                         f"{lim[k]['warm'].get('gbps', float('nan')):.2f} warm")
    if "fs_disk_direct" in lim and "gbps" in lim["fs_disk_direct"]:
        parts.append(f"disk O_DIRECT {lim['fs_disk_direct']['gbps']:.2f} GB/s")
    if "memcpy_1m" in lim:
        parts.append(f"memcpy {lim['memcpy_1m']['gbps']:.1f} GB/s (1 MiB chunks), "
                     f"{lim['memcpy_80']['gbps']:.1f} GB/s (80 B)")
    lines.append("- raw limits measured at the start of this run (1 MiB pwrite, fsync per 256 MiB file; the table's "
                 "*fs raw* is measured again before each size): " + "; ".join(parts))
    return "\n".join(lines)


def micro_rows(results):
    rows = []
    for b in results.get("micro", {}).get("rows", []):
        rows.append([b["name"], b["label"], f(b["ns_per_iter"]), f(b["tsc_per_item"], "{:.1f}"),
                     f(b["mitems_per_s"], "{:.1f}"), f(b["gbytes_per_s"]), b["error"]])
    return rows


def report(results, outdir):
    os.makedirs(outdir, exist_ok=True)
    rows = table_rows(results)
    text = [text_table(HEADERS, rows), ""]
    if filter_rows(results):
        text += ["With a filter (64-byte TCP/IPv4 frames, one worker, tmpfs; same source for both rows):",
                 text_table(FILTER_HEADERS, filter_rows(results)), ""]
    text += ["References on the same source:",
            text_table(["size", "testpmd rxonly Mpps", "dumpcap written Mpps", "dumpcap drops",
                        "testpmd rx under dumpcap", "note"], refs_rows(results))]
    if results.get("micro", {}).get("rows"):
        text += ["", "Micro benchmarks (CPU 1):",
                 text_table(["benchmark", "", "ns/iter", "TSC/item", "M items/s", "GB/s", ""], micro_rows(results))]
    text += ["", "Conditions:", conditions_text(results)]
    print("\n".join(text))
    md = ["# linecap benchmark results", "", conditions_text(results), "",
          "## End to end: net_pcap infinite_rx → linecapd → files", "", md_table(HEADERS, rows), "",
          "Columns: *rx* = what the worker took from the port; *written* = records in files; drops in Mpps "
          "by reason; *cyc/pkt* and *busy* = `linecap_worker_cycles_per_packet` and `linecap_worker_busy_ratio` "
          "(median over the window); *writer GB/s* = bytes appended to files; *fs raw* = the same file system's "
          "sequential write speed (1 MiB pwrite, 2 GiB) measured right before this size's captures; *limit* = min(source rate = testpmd rxonly, fs raw / "
          "record size), (so) = source, (fi) = file system; *of limit* = written / limit.", "",
          ]
    if filter_rows(results):
        md += ["## With a filter", "",
               "64-byte TCP/IPv4 frames (1024 flows, about one in seven to port 443), one worker, into tmpfs, "
               "without and with the filter, same source, back to back. The worker runs the JIT-compiled filter "
               "on every packet and copies only what it accepts: *rx* is what it took from the port, *filtered* "
               "what the filter rejected (not a drop).", "", md_table(FILTER_HEADERS, filter_rows(results)), ""]
    md += ["## References on the same source", "",
          md_table(["size", "testpmd rxonly Mpps", "dumpcap written Mpps", "dumpcap drops",
                    "testpmd rx under dumpcap", "note"], refs_rows(results)), ""]
    if results.get("micro", {}).get("rows"):
        md += ["## Micro benchmarks (pinned to CPU 1)", "",
               md_table(["benchmark", "", "ns/iter", "TSC/item", "M items/s", "GB/s", ""], micro_rows(results)), ""]
    md += ["![Mpps against packet size and workers](results.png)", ""]
    md += extra_sections(outdir)
    with open(os.path.join(outdir, "results.md"), "w") as fh:
        fh.write("\n".join(md))
    with open(os.path.join(outdir, "results.json"), "w") as fh:
        json.dump(results, fh, indent=1, default=str)
    try:
        import plot
        plot.plot(results, os.path.join(outdir, "results.png"))
        log(f"plot: {os.path.join(outdir, 'results.png')}")
    except ImportError as e:
        log(f"no plot ({e}); install python3-matplotlib")
    log(f"results: {outdir}/results.md, results.json")


def rfc2544_section(r):
    rows = []
    for tool, t in r["tools"].items():
        if "error" in t:
            rows.append([tool, "error: " + t["error"][:60], "", "", "", ""])
            continue
        zl = t["zero_loss_pps"]
        trials = ", ".join(f"{'top' if x['offered'] == 'top' else format(x['offered'] / 1e6, '.3f')}: "
                           f"{100 * x['lost'] / max(x['sent'], 1):.2f}%" for x in t["trials"])
        rows.append([tool, f"{'≥ ' if t['at_ceiling'] else ''}{zl / 1e6:.3f}", f"{zl * r['size'] * 8 / 1e9:.2f}",
                     f"{t['ceiling_pps'] / 1e6:.3f}",
                     "0%" if t["at_ceiling"] else f"{t['loss_at_ceiling_pct']:.1f}%", trials])
    fs = r.get("fs", "tmpfs")
    where = (f"files into the real disk ({r['out_dir']['fstype']}; linecapd with output.o_direct)" if fs == "disk"
             else "files into tmpfs")
    return [f"## Live path: zero-loss throughput ({r['size']}-byte frames, {r['trial_s']:.0f} s trials, {fs})", "",
            "tcpreplay `--pps` from a network namespace into a veth pair (generator pinned to CPU 0), captured "
            f"on the other end, {where}: linecapd through net_af_xdp / net_af_packet (worker on CPU 1), "
            "tcpdump `-w` (pinned to CPU 1), dpdk-testpmd rxonly (forwarding core on CPU 1, no files). "
            "Binary search over the offered rate; *generator max* = what tcpreplay reaches at `--topspeed` with "
            "that tool attached (with XDP on the veth the sender's CPU also runs the XDP program and the copy "
            "into the socket, so the generator is slower than into a plain veth). "
            f"Load {r['load_start']['loadavg']} → {r.get('load_end', {}).get('loadavg', '?')}"
            + (f"; generator and capture tools at nice {r['nice']}." if r.get("nice") else "."), "",
            md_table(["tool", "zero-loss Mpps", "Gbit/s", "generator max Mpps", "loss at max",
                      "trials (offered Mpps: loss)"], rows), ""]


def extra_sections(outdir):
    """The live-path search (rfc2544.json) and the soak (soak.json), when they are in `outdir`."""
    md = []
    for json_name in ("rfc2544.json", "rfc2544-disk.json"):
        path = os.path.join(outdir, json_name)
        if os.path.exists(path):
            with open(path) as fh:
                md += rfc2544_section(json.load(fh))
    path = os.path.join(outdir, "soak.json")
    if os.path.exists(path):
        with open(path) as fh:
            k = json.load(fh)
        series = " ".join(f"{t:.0f}s:{v}" for t, v in k["rss_series"])
        md += [f"## Memory over {k['duration_s'] / 60:.0f} minutes", "",
               f"linecapd, {k['size']}-byte frames from net_pcap infinite_rx into {k['fs']['fstype']} "
               f"({k['fs']['path']}), 1 worker, finished files deleted as they appear"
               + (" (kept 2 s for the background indexer, which was on: the tmpfs filled, hence disk_full)"
                  if k.get("index") else "") + ". RSS (VmRSS) sampled every "
               f"10 s: first {k['rss_kib_first'] / 1024:.1f} MiB, last {k['rss_kib_last'] / 1024:.1f} MiB, "
               f"min {k['rss_kib_min'] / 1024:.1f}, max {k['rss_kib_max'] / 1024:.1f} MiB over "
               f"{len(k['rss_series'])} samples; written {k['written_mpps']:.2f} Mpps of {k['rx_mpps']:.2f} received "
               f"on average; drops {k['drops']}.", "", f"RSS in KiB: {series}", ""]
    return md


def soak(args):
    os.sched_setaffinity(0, {0})
    workdir = args.workdir
    os.makedirs(workdir, exist_ok=True)
    size = args.sizes[0]
    src = gen_source(workdir, size, 1, args.packets)
    d = args.tmpfs_dir or args.disk_dir
    log(f"soak: {args.duration} s, {size}-byte frames into {d}, RSS sampled every 10 s")
    r = run_linecapd("soak", workdir, os.path.join(d, "linecap-out"), src, "1w", args, args.packets,
                     seconds=args.duration, warmup=args.warmup, soak=True, sample_period=10.0)
    rss = r["rss_kib"]
    out = {"conditions": machine_conditions(), "duration_s": args.duration, "size": size, "fs": fs_of(d),
           "index": bool(args.index),
           "rss_kib_first": rss[0], "rss_kib_last": rss[-1], "rss_kib_min": min(rss), "rss_kib_max": max(rss),
           "written_mpps": r["written_mpps"], "rx_mpps": r["rx_mpps"], "drops": r["drops_total"],
           "rss_series": list(zip(r["rss_t"], rss)), "written_mpps_series": r["written_mpps_series"]}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "soak.json"), "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"soak {args.duration} s ({size} B into {d}): RSS first {rss[0]} KiB, last {rss[-1]} KiB, "
          f"min {min(rss)}, max {max(rss)} KiB over {len(rss)} samples; written {r['written_mpps']:.2f} Mpps "
          f"of rx {r['rx_mpps']:.2f}; drops {r['drops_total']}")
    print("RSS (s, KiB): " + " ".join(f"{t:.0f}:{k}" for t, k in zip(r["rss_t"], rss)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["suite", "soak", "report"])
    ap.add_argument("--workdir", required=True, help="scratch directory (source pcaps, logs, configs)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--tmpfs-dir", default="", help="a directory on tmpfs")
    ap.add_argument("--disk-dir", default="", help="a directory on the real disk")
    ap.add_argument("--fs", default="tmpfs,disk", type=lambda s: s.split(","))
    ap.add_argument("--sizes", default=",".join(SIZES), type=lambda s: s.split(","))
    ap.add_argument("--workers", default="1w,2w,2w2cpu", type=lambda s: s.split(","))
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--packets", type=int, default=8192, help="frames per source file")
    ap.add_argument("--burst", type=int, default=64)
    ap.add_argument("--block-kb", type=int, default=1024)
    ap.add_argument("--blocks", type=int, default=32)
    ap.add_argument("--writer-threads", type=int, default=1)
    ap.add_argument("--o-direct", action="store_true")
    ap.add_argument("--filter", default="tcp port 443 or udp port 53",
                    help="the filter of the filtered/unfiltered pair ('' = no pair)")
    ap.add_argument("--index", action="store_true",
                    help="output.index on (the daemon's background indexer); off by default so the figures are "
                         "the capture alone")
    ap.add_argument("--index-keep-s", type=float, default=2.0,
                    help="with --index: seconds a finished file stays for the indexer before the harness deletes it")
    ap.add_argument("--rotate-mb", type=int, default=256)
    ap.add_argument("--fs-mib", type=int, default=4096, help="MiB written by each raw write measurement")
    ap.add_argument("--nice", type=int, default=0,
                    help="run every measured program (linecapd, testpmd, dumpcap, fsbench) at this nice level, "
                         "e.g. -20 on a machine shared with other work")
    ap.add_argument("--quick", action="store_true", help="64-byte frames and IMIX only, tmpfs, short windows")
    ap.add_argument("--no-refs", action="store_true", help="skip testpmd/dumpcap")
    ap.add_argument("--repeat", type=int, default=1, help="repetitions of every linecapd point (median + spread)")
    ap.add_argument("--repeat-sizes", default="", type=lambda s: [x for x in s.split(",") if x],
                    help="repeat only these sizes (default: all)")
    ap.add_argument("--no-micro", action="store_true")
    ap.add_argument("--no-limits", action="store_true", help="skip the raw fs / memcpy measurements")
    ap.add_argument("--duration", type=float, default=600, help="soak: seconds")
    ap.add_argument("--results", help="report: re-render from a results.json")
    args = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if args.quick:
        if args.sizes == SIZES:
            args.sizes = ["64", "imix"]
        args.seconds = min(args.seconds, 5)
        args.warmup = min(args.warmup, 2)
        args.fs_mib = min(args.fs_mib, 2048)
    if args.nice:
        NICE[:] = ["nice", "-n", str(args.nice)]
        set_autogroup_nice(os.getpid(), args.nice)  # fsbench and the micro benchmarks run in this session
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        if args.mode == "suite":
            report(suite(args), args.out)
        elif args.mode == "soak":
            soak(args)
        else:
            with open(args.results) as fh:
                results = json.load(fh)
            report(results, args.out)
    finally:
        stop_all()


if __name__ == "__main__":
    main()
