#!/usr/bin/env python3
"""Aggregate written rate across capture volumes (output.volumes) against the raw write
speed of the same volumes written together, in one run (bench/run.sh volumes; as root,
hugepages reserved).

For each file system kind (--fs: tmpfs, loop = ext4 on a loop device over an image file in
--workdir) and each volume count (--volumes, default 1,2,4), this script mounts that many
file systems of --volume-mib each, then alternates, --repeat times:
  raw       linecap_fsbench writing --raw-mib MiB into every volume at once (one writer
            per volume, linecap's pattern: 1 MiB pwrites, files of --rotate-mb, fsync per
            file, deleted as written): all bytes over the wall time
  linecapd  the suite's capture source (net_pcap infinite_rx, --queues queues of --size
            byte frames, one worker) into output.volumes = those file systems, one writer
            thread per volume, no manifest or index; finished files deleted as they
            appear; linecap_output_file_bytes_total over the --seconds window
and prints per row the medians, the ratio linecapd/raw, the number of volumes linecapd
wrote to (linecap_volume_written_bytes_total > 0 at the end of the last round; the window
starts once every volume has taken a write), and the load average
around the row. Numbers are as good as the machine is quiet: on a shared machine only the ratios of
one run mean anything. With one worker the source, not the disks, can be the limit: the
row with one volume says what that limit is.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "lib"))
from capture import run_linecapd  # noqa: E402
from harness import log, stop_all  # noqa: E402
from limits import fsbench_write_together  # noqa: E402
from machine import load_now  # noqa: E402
from sources import gen_source  # noqa: E402


class Volumes:
    """COUNT file systems of KIND mounted under WORKDIR; unmounted (and detached) by close()."""

    def __init__(self, kind, count, mib, workdir):
        self.kind, self.dirs, self._undo = kind, [], []
        try:
            for i in range(count):
                base = os.path.join(workdir, f"vol-{kind}-{count}-{i}")
                mnt = os.path.join(base, "mnt")
                os.makedirs(mnt, exist_ok=True)
                if kind == "tmpfs":
                    self._run(["mount", "-t", "tmpfs", "-o", f"size={mib}m,mode=0700", "lc-bench-vol", mnt])
                elif kind == "loop":
                    img = os.path.join(base, "fs.img")
                    self._run(["truncate", "-s", f"{mib}M", img])
                    self._run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", img])
                    dev = subprocess.run(["losetup", "--find", "--show", img], check=True, capture_output=True,
                                         text=True).stdout.strip()
                    self._undo.append(["losetup", "-d", dev])
                    self._run(["mount", "-t", "ext4", dev, mnt])
                else:
                    raise ValueError(f"unknown file system kind {kind!r} (tmpfs, loop)")
                self._undo.append(["umount", mnt])
                self.dirs.append(os.path.join(mnt, "capture"))
                os.makedirs(self.dirs[-1])
        except Exception:
            self.close()
            raise

    def _run(self, cmd):
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

    def close(self):
        for cmd in reversed(self._undo):
            subprocess.run(cmd, stderr=subprocess.DEVNULL)
        self._undo = []


def linecapd_output(args, dirs):
    return {"volumes": [{"directory": d} for d in dirs],
            "rotate": {"size_mb": args.rotate_mb, "interval_s": 0}, "block_size_kb": args.block_kb,
            "blocks_per_queue": args.blocks, "writer_threads": 1, "manifest": False, "index": False,
            "fsync": "rotate"}


def row(args, kind, count, sources):
    vols = Volumes(kind, count, args.volume_mib, args.workdir)
    try:
        load_before = load_now()
        raw, cap, drops = [], [], []
        for r in range(args.repeat):
            res = fsbench_write_together(vols.dirs, args.raw_mib, args.block_kb, fsync=True, file_mib=args.rotate_mb)
            if "error" in res:
                raise RuntimeError(f"{kind} x{count}: raw writer: {res['error']}")
            raw.append(res["gbps"])
            res = run_linecapd(f"volumes-{kind}-{count}-{r}", args.workdir, vols.dirs[0], sources, "1w", args,
                               args.packets, output=linecapd_output(args, vols.dirs))
            cap.append(res["file_gbps"])
            drops.append(sum(res["drops_total"].values()))
            per_volume = {d: res["volume_bytes"].get(d, 0) for d in vols.dirs}
            totals = {d: res["volume_bytes_total"].get(d, 0) for d in vols.dirs}
            used = sum(1 for b in totals.values() if b > 0)
            log(f"{kind} x{count} round {r + 1}: raw {raw[-1]:.3f} GB/s, linecapd {cap[-1]:.3f} GB/s")
        return {"fs": kind, "volumes": count, "raw_gbps": statistics.median(raw), "linecapd_gbps": statistics.median(cap),
                "ratio": statistics.median(cap) / statistics.median(raw), "raw_each": raw, "linecapd_each": cap,
                "drops": drops, "volumes_written": used, "volume_bytes": per_volume,
                "volume_bytes_total": totals,
                "volume_labels": sorted(res["volume_bytes"]), "window_s": res["seconds"], "load_before": load_before, "load_after": load_now()}
    finally:
        vols.close()


def table(rows, args):
    lines = [f"aggregate written rate vs volumes vs raw (same run; {args.queues} queues of {args.size}-byte frames, "
             f"1 worker, {args.seconds:g} s windows, raw {args.raw_mib} MiB per volume, median of {args.repeat})",
             f"{'fs':6} {'volumes':>7} {'raw GB/s':>9} {'linecapd GB/s':>14} {'linecapd/raw':>13} "
             f"{'vs 1 volume':>12} {'written to':>10}  load (1 min) before/after"]
    base = {}
    for r in rows:
        base.setdefault(r["fs"], r["linecapd_gbps"])
        scale = r["linecapd_gbps"] / base[r["fs"]] if base[r["fs"]] else float("nan")
        lines.append(f"{r['fs']:6} {r['volumes']:>7} {r['raw_gbps']:>9.3f} {r['linecapd_gbps']:>14.3f} "
                     f"{r['ratio']:>13.2f} {scale:>12.2f} {r['volumes_written']:>10}  "
                     f"{r['load_before']['loadavg'][0]:.1f} / {r['load_after']['loadavg'][0]:.1f}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", required=True, help="scratch directory (mount points, loop images, logs)")
    ap.add_argument("--fs", default="tmpfs,loop", type=lambda s: s.split(","))
    ap.add_argument("--volumes", default="1,2,4", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--volume-mib", type=int, default=1024, help="size of each volume's file system")
    ap.add_argument("--raw-mib", type=int, default=1024, help="MiB the raw writer writes into each volume")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--queues", type=int, default=4, help="capture queues (streams spread over the volumes)")
    ap.add_argument("--size", default="1514")
    ap.add_argument("--packets", type=int, default=8192, help="frames per source file")
    ap.add_argument("--rotate-mb", type=int, default=64)
    ap.add_argument("--block-kb", type=int, default=1024)
    ap.add_argument("--blocks", type=int, default=32)
    ap.add_argument("--burst", type=int, default=64)
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args()
    if max(a.volumes) > a.queues:
        ap.error("--queues must be at least the largest --volumes (one stream per volume at least)")
    # What capture.run_linecapd reads of the suite's options.
    args = types.SimpleNamespace(**vars(a), index=False, index_keep_s=0.0)
    os.makedirs(a.workdir, exist_ok=True)
    sources = gen_source(a.workdir, a.size, a.queues, a.packets)
    rows = []
    try:
        for kind in a.fs:
            for count in a.volumes:
                rows.append(row(args, kind, count, sources))
    finally:
        stop_all()
    print(table(rows, a))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
