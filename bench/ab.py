"""A/B of two linecapd binaries on the capture path, in one run.

A refactoring must not cost the worker anything: this runs the suite's capture point (one
worker, tmpfs, the suite's output settings, net_pcap infinite_rx source) with the baseline
binary and with this tree's binary, alternated (A B A B ...) so that a shared machine's load
falls on both sides alike, and prints per size the median written rate and cycles per
packet of each side, their spread and the ratio after/before. Both binaries read the same
generated configuration, so the baseline must accept the suite's keys (any linecapd since
the suite's settings were introduced does).
"""

import os
import statistics

import capture
from harness import log
from machine import load_now, machine_conditions
from sources import gen_source

AB_SIZES = ["64", "imix"]


def _median(runs, key):
    vals = [r[key] for r in runs if key in r and r[key] == r[key]]
    return (statistics.median(vals), min(vals), max(vals)) if vals else (float("nan"),) * 3


def ab(args):
    os.sched_setaffinity(0, {0})  # the harness stays off the worker's CPU
    sides = [("before", args.baseline), ("after", capture.LINECAPD)]
    for name, binary in sides:
        if not os.access(binary, os.X_OK):
            raise SystemExit(f"bench ab: {name} binary {binary} is not executable")
    sizes = args.sizes if args.sizes_given else AB_SIZES
    outdir = os.path.join(args.tmpfs_dir, "linecap-out")
    cond = machine_conditions()
    cond["load_start"] = load_now()
    runs = {(size, name): [] for size in sizes for name, _ in sides}
    for size in sizes:
        src = gen_source(args.workdir, size, 1, args.packets)
        for rep in range(args.repeat):
            for name, binary in sides:
                capture.LINECAPD = binary  # run_linecapd starts whatever this names
                tag = f"ab-{size}-{name}-{rep}"
                try:
                    r = capture.run_linecapd(tag, args.workdir, outdir, src, "1w", args, args.packets)
                except Exception as e:  # a failed repetition is reported, the others still count
                    log(f"{tag}: {e}")
                    continue
                runs[(size, name)].append(r)
                log(f"{tag}: written {r['written_mpps']:.2f} Mpps of rx {r['rx_mpps']:.2f}, "
                    f"{r['cycles_per_packet']:.0f} cyc/pkt")
    capture.LINECAPD = sides[1][1]
    cond["load_end"] = load_now()

    print(f"A/B, before = {args.baseline}, after = {sides[1][1]}")
    print(f"{'size':<6}{'before Mpps (min-max)':<26}{'after Mpps (min-max)':<26}{'after/before':<14}"
          f"{'cyc/pkt before':<16}{'cyc/pkt after':<15}{'runs'}")
    for size in sizes:
        b, a = runs[(size, "before")], runs[(size, "after")]
        bm, bl, bh = _median(b, "written_mpps")
        am, al, ah = _median(a, "written_mpps")
        bc = _median(b, "cycles_per_packet")[0]
        ac = _median(a, "cycles_per_packet")[0]
        ratio = am / bm if bm == bm and bm else float("nan")
        print(f"{size:<6}{f'{bm:.2f} ({bl:.2f}-{bh:.2f})':<26}{f'{am:.2f} ({al:.2f}-{ah:.2f})':<26}"
              f"{ratio:<14.3f}{bc:<16.0f}{ac:<15.0f}{len(b)}/{len(a)}")
    print(f"\nConditions: {cond.get('date', '')} load {cond['load_start']} -> {cond['load_end']}; "
          f"{args.seconds:g} s windows after {args.warmup:g} s warm-up, {args.repeat} alternated "
          f"repetitions per side; one worker, tmpfs, suite output settings (no manifest, no index), "
          f"burst {args.burst}; median of the repetitions, spread in brackets.")
