"""The references on the same source: dpdk-testpmd rxonly (the source's own rate) and
dpdk-dumpcap writing pcap from a testpmd primary."""

import os
import re
import signal
import statistics
import tempfile
import time

from harness import DUMPCAP, NICE, RUNNING, TESTPMD, Proc, log, wait_until
from machine import load_now, sh


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
