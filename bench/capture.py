"""Running linecapd on the benchmark source and summarising a run from its metrics."""

import os
import re
import statistics
import time

from harness import LINECAPD, RUNNING, Daemon, Janitor, free_port, wait_until
from machine import load_now
from linecap_harness import config as linecap_config
from linecap_harness.prometheus import scrape
from metrics import rss_kib, thread_cpu


LCORES = {
    # workers: (eal.lcores, what it means)
    "1w": ("0-1", "1 worker on CPU 1; main/control + writer thread on CPU 0"),
    "2w": ("0@0,1@1,2@1", "2 workers (2 queues) time-sharing CPU 1; main/control + writer on CPU 0"),
    "2w2cpu": ("0@0,1@0,2@1", "2 workers on CPU 0 and CPU 1; the CPU 0 worker shares with main/control + writer"),
}


def bench_output(args):
    """The suite's own output settings (capture alone: no manifest, index only with --index)."""
    return {"rotate": {"size_mb": args.rotate_mb, "interval_s": 0}, "block_size_kb": args.block_kb,
            "blocks_per_queue": args.blocks, "writer_threads": args.writer_threads, "o_direct": args.o_direct,
            "manifest": False, "index": bool(args.index), "fsync": "rotate"}


def linecapd_config(path, outdir, sources, mode, args, metrics_port, packets_per_file, bpf="", output=None,
                    rx_descriptors=1024, burst=None):
    """`output`: the output section without its directory (default: bench_output(args))."""
    lcores = LCORES[mode][0]
    queues = len(sources)
    device = "net_pcap0," + ",".join(f"rx_pcap={s}" for s in sources) + ",infinite_rx=1"
    # infinite_rx keeps every packet of the file in an mbuf from the port's pool and copies
    # from it on every rx: the pool needs those plus the usual descriptors, bursts, caches.
    mbufs = packets_per_file * queues + max(16384, 4 * rx_descriptors * queues)
    # The shipped real-time worker priority (capture.worker_priority: rr:1) assumes a worker
    # alone on its CPU; where workers share a CPU with each other or with the writer, a
    # real-time worker that never idles (infinite_rx) would starve them: plain priority there.
    capture = {"burst_size": burst or args.burst}
    if mode != "1w":
        capture["worker_priority"] = "normal"
    capture["mbufs"] = mbufs
    port = {"rx_queues": queues, "rx_descriptors": rx_descriptors, "mtu": 1500}
    if bpf:
        port["filter"] = bpf
    output = dict(output if output is not None else bench_output(args))
    linecap_config.write(path, linecap_config.daemon(
        device, outdir, f"127.0.0.1:{metrics_port}", name="bench", lcores=lcores, port=port, capture=capture,
        output=output), "bench/capture.py")


def empty_dir(directory):
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isfile(path) or os.path.islink(path):
            os.unlink(path)


def run_linecapd(tag, workdir, outdir, sources, mode, args, packets_per_file, seconds=None, warmup=None,
                 soak=False, sample_period=1.0, bpf="", output=None, keep=False, **config):
    """One linecapd run. Finished files are deleted by a janitor as they appear, unless `keep`:
    then they stay (the configuration's retention deletes the oldest) until the run is over.
    `output` and `config` go to linecapd_config; with output["volumes"], each volume's
    directory is emptied and swept like `outdir`."""
    seconds = seconds if seconds is not None else args.seconds
    warmup = warmup if warmup is not None else args.warmup
    dirs = [v["directory"] for v in (output or {}).get("volumes", [])] or [outdir]
    for d in dirs:
        os.makedirs(d, exist_ok=True)
        empty_dir(d)
    # The previous run's dirty pages are written back now, not during this run's window
    # (on the disk a row otherwise pays for the one before it: an O_DIRECT row queued
    # behind 3 GB of buffered writeback measured 0.02 GB/s).
    os.sync()
    janitors = [] if keep else [Janitor(d, keep_s=args.index_keep_s if args.index else 0.0) for d in dirs]
    port = free_port()
    cfg = os.path.join(workdir, f"{tag}.yaml")
    linecapd_config(cfg, outdir, sources, mode, args, port, packets_per_file, bpf=bpf, output=output, **config)
    url = f"http://127.0.0.1:{port}/metrics"
    load_before = load_now()
    proc = Daemon(LINECAPD, cfg, os.path.join(workdir, f"{tag}.log"))
    RUNNING.append(proc)
    for janitor in janitors:
        janitor.start()
    samples = []
    try:
        proc.wait_ready(url, 60, f"{tag}: linecapd")
        time.sleep(warmup)
        if output and output.get("volumes"):
            wait_all_volumes_written(url, dirs, proc, tag)
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
        for janitor in janitors:
            janitor.stop()
        for d in dirs:
            empty_dir(d)
    load_after = load_now()
    if rc != 0:
        raise RuntimeError(f"{tag}: linecapd exited {rc}: {proc.text()[-2000:]}")
    if len(samples) < 2:
        raise RuntimeError(f"{tag}: not enough samples")
    return summarise_linecapd(tag, samples, proc.text(), load_before, load_after, soak)


def wait_all_volumes_written(url, dirs, proc, tag, timeout=30.0):
    """Returns once every volume has taken a write. A window that starts earlier can see no
    block at all on a volume whose writer is held up (a loaded disk): its rate would be
    measured over a stretch in which the volume was not yet in use."""
    def all_written():
        m = scrape(url)
        return all(m.total("linecap_volume_written_bytes_total", volume=d) > 0 for d in dirs)
    wait_until(all_written, timeout, f"{tag}: a write on every volume after the warm-up", proc)


def summarise_linecapd(tag, samples, logtext, load_before, load_after, soak):
    a, b = samples[0], samples[-1]
    dt = b["t"] - a["t"]

    def delta(name, **want):
        return b["m"].total(name, **want) - a["m"].total(name, **want)

    rx = delta("linecap_rx_packets_total")
    volumes = b["m"].label_values("linecap_volume_written_bytes_total", "volume")
    written = delta("linecap_written_packets_total")
    filtered = delta("linecap_filtered_packets_total")
    wire_bytes = delta("linecap_written_bytes_total")
    file_bytes = delta("linecap_output_file_bytes_total")
    reasons = {r: delta("linecap_dropped_packets_total", reason=r)
               for r in b["m"].label_values("linecap_dropped_packets_total", "reason")}
    cpp = [v for s in samples[1:] for v in s["m"].values("linecap_worker_cycles_per_packet") if v == v]
    busy = [v for s in samples[1:] for v in s["m"].values("linecap_worker_busy_ratio") if v == v]

    # Thread CPU use over the window (share of one CPU), by thread name.
    cpu = {}
    for name, (c1, last) in b["threads"].items():
        c0 = a["threads"].get(name, (c1, last))[0]
        cpu[name] = {"cpu_pct": round(100 * (c1 - c0) / dt, 1), "cpu": last}
    writer_cpu = sum(v["cpu_pct"] for k, v in cpu.items() if k.startswith("lc-writer"))
    hash_cpu = sum(v["cpu_pct"] for k, v in cpu.items() if k.startswith("lc-hash"))
    # Writes that took longer than 10 ms: stalls that the block pool must ride out.
    slow_writes = latency_count_total = 0
    for _, v in b["m"].matching("linecap_write_latency_seconds_bucket", le="0.01"):
        slow_writes = delta("linecap_write_latency_seconds_count") - (
            v - a["m"].total("linecap_write_latency_seconds_bucket", le="0.01"))
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
        "index_queued": b["m"].total("linecap_index_queued_files"),
        "index_busy_s": delta("linecap_index_busy_seconds_total"),
        "written_gbit": wire_bytes * 8 / dt / 1e9,
        "file_gbps": file_bytes / dt / 1e9,
        "drops": {k: v / dt / 1e6 for k, v in reasons.items()},  # Mpps per reason
        "drops_total": {k: int(v) for k, v in reasons.items()},
        # Per capture volume (output.volumes): bytes written there in the window, and since
        # the start. A window can hold no block of a volume (one block per second or less on
        # a loaded disk; and a collection reads a block's stream and volume counters apart).
        "volume_bytes": {v: int(delta("linecap_volume_written_bytes_total", volume=v)) for v in volumes},
        "volume_bytes_total": {v: int(b["m"].total("linecap_volume_written_bytes_total", volume=v)) for v in volumes},
        "drop_pct": 100.0 * (rx - written - filtered) / rx if rx else 0.0,
        "cycles_per_packet": statistics.median(cpp) if cpp else float("nan"),
        "busy_ratio": statistics.median(busy) if busy else float("nan"),
        "writer_cpu_pct": writer_cpu,
        "hash_cpu_pct": hash_cpu,
        # Everything written since the start (warm-up included): the volume the raw write
        # speed is measured for.
        "file_bytes_total": int(b["m"].total("linecap_output_file_bytes_total")),
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
        d = s1["m"].total("linecap_written_packets_total") - s0["m"].total("linecap_written_packets_total")
        series.append(round(d / (s1["t"] - s0["t"]) / 1e6, 2))
    res["written_mpps_series"] = series
    return res
