"""The memory soak: linecapd for a long run, RSS sampled every 10 s."""

import json
import os

from capture import run_linecapd
from harness import log
from machine import fs_of, machine_conditions
from sources import gen_source


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
