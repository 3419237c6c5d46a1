"""The shipped defaults and what each optional feature costs.

First rows: linecapd with config/linecap.yaml's output settings as shipped — manifests, the
index, rotation, blocks, fsync — one worker, files KEPT: no janitor; a retention budget
(output.retention.max_bytes, --budget-mib) deletes the oldest finished files as production
would. Into tmpfs and into the real disk, at 64 and 1514 bytes and IMIX. Then one row per
optional feature at 64 and 1514 bytes: manifest off, index off, O_DIRECT on (disk only: tmpfs
has no direct I/O), a filter that every frame of the source passes (so the written volume stays
comparable and the row shows the filter's cost alone).

Every row is set against the raw write speed of the same file system for the same volume with
files kept under the same budget, in files of the same rotation size, with the same fsync and
O_DIRECT — linecap_fsbench, run right after the row in the same run, from the same empty
directory (memory a VM never touched or recently freed is slow to write the first time, so
only like against like means anything). For the same reason each file system is written
once, the budget's volume, before its first row (not counted: a running appliance's memory
and page cache are not fresh either), and each feature row runs right after the defaults row
it is compared with; the table still lists the defaults first.
"""

import os
import shutil
import statistics

import capture
from capture import run_linecapd
from harness import ROOT, log
from machine import load_now, page_reporting_delay, reporting_text
from limits import fsbench_write
from sources import gen_source, record_bytes_for

SHIPPED = os.path.join(ROOT, "config", "linecap.yaml")
SIZES = ["64", "1514", "imix"]
FEATURE_SIZES = ["64", "1514"]
# A filter every generated frame (UDP/IPv4) passes: its cost without a change in volume.
PASS_FILTER = "not tcp port 22"


def shipped():
    """config/linecap.yaml: the output section, the port's rx_descriptors and the burst size."""
    import yaml  # python3-yaml (bench/run.sh installs it)
    with open(SHIPPED) as fh:
        cfg = yaml.safe_load(fh)
    output = {k: v for k, v in cfg["output"].items() if k not in ("directory", "retention")}
    return output, cfg["ports"][0].get("rx_descriptors", 4096), cfg.get("capture", {}).get("burst_size", 64)


# (row name, change to the shipped output section, filter, O_DIRECT, the feature's on/off sense)
# sense: "off" = the row turns a default feature off (on/off = defaults / row);
#        "on"  = the row turns an optional feature on (on/off = row / defaults).
FEATURES = [
    ("manifest off", {"manifest": False}, "", "off"),
    ("index off", {"index": False}, "", "off"),
    ("O_DIRECT", {"o_direct": True}, "", "on"),
    ("filter", {}, PASS_FILTER, "on"),
]


def run(args, workdir, filesystems, packets):
    """The rows, defaults first. Each: linecapd's summary plus raw_gbps, of_raw, on_off."""
    output, rx_descriptors, burst = shipped()
    budget = args.budget_mib
    rows = []
    defaults = {}
    plan = []
    for fs in filesystems:
        for size in SIZES:
            plan.append((fs, size, "shipped defaults", {}, "", None))
            for name, change, bpf, sense in FEATURES if size in FEATURE_SIZES else []:
                if change.get("o_direct") and fs == "tmpfs":
                    continue
                plan.append((fs, size, name, change, bpf, sense))
    warmed = set()
    for fs, size, name, change, bpf, sense in plan:
        d = filesystems[fs]
        if fs not in warmed:
            warmed.add(fs)
            warm = os.path.join(d, "linecap-warm-up")
            os.makedirs(warm, exist_ok=True)
            w = fsbench_write(warm, budget, int(output.get("block_size_kb", 1024)), fsync=False,
                              file_mib=int(output.get("rotate", {}).get("size_mb", 1024)) or 1024, budget_mib=budget)
            shutil.rmtree(warm)
            log(f"{fs}: warm-up, {budget} MiB written and deleted at {w.get('gbps', float('nan')):.2f} GB/s (not counted)")
        src = gen_source(workdir, size, 1, packets)
        out = dict(output, **change)
        out["retention"] = {"max_bytes": f"{budget}M"}
        tag = f"defaults-{fs}-{size}-{name.replace(' ', '_')}"
        log(tag + (f" ({bpf})" if bpf else ""))
        outdir = os.path.join(d, "linecap-out")
        try:
            r = run_linecapd(tag, workdir, outdir, src, "1w", args, packets, bpf=bpf, output=out, keep=True,
                             rx_descriptors=rx_descriptors, burst=burst)
        except Exception as e:  # one failed row must not cost the table
            log(f"{tag}: {e}")
            rows.append({"fs": fs, "size": size, "config": name, "error": str(e)})
            continue
        # The same volume, kept under the same budget, right after, from the same empty directory.
        mib = max(64, r["file_bytes_total"] >> 20)
        raw = fsbench_write(outdir, mib, int(out.get("block_size_kb", 1024)),
                            fsync=out.get("fsync", "rotate") != "none", direct=bool(out.get("o_direct")),
                            file_mib=int(out.get("rotate", {}).get("size_mb", 1024)) or 1024, budget_mib=budget)
        rec = record_bytes_for(size, src[0])
        r.update({"fs": fs, "size": size, "config": name, "filter": bpf, "record_bytes": rec, "raw": raw,
                  "raw_gbps": raw.get("gbps", float("nan")), "budget_mib": budget})
        r["raw_mpps"] = r["raw_gbps"] * 1e9 / rec / 1e6
        r["of_raw"] = r["file_gbps"] / r["raw_gbps"] if r["raw_gbps"] == r["raw_gbps"] and r["raw_gbps"] else float("nan")
        if sense is None:
            defaults[(fs, size)] = r
        else:
            base = defaults.get((fs, size), {}).get("written_mpps", float("nan"))
            on, off = (base, r["written_mpps"]) if sense == "off" else (r["written_mpps"], base)
            r["on_off"] = on / off if off == off and off else float("nan")
        rows.append(r)
        log(f"  written {r['written_mpps']:.2f} Mpps ({r['file_gbps']:.2f} GB/s) of rx {r['rx_mpps']:.2f}; "
            f"raw {r['raw_gbps']:.2f} GB/s for {mib} MiB kept; of raw {r['of_raw']:.2f}; "
            f"drops {({k: round(v, 2) for k, v in r['drops'].items() if v})}; writer CPU {r['writer_cpu_pct']:.0f}%, "
            f"hash CPU {r['hash_cpu_pct']:.0f}%")
    rows.sort(key=lambda r: r.get("config") != "shipped defaults")  # stable: the defaults first, in plan order
    return {"budget_mib": budget, "shipped": output, "rx_descriptors": rx_descriptors, "burst": burst,
            "filter": PASS_FILTER, "rows": rows}


def manifest_ab(args, workdir, fs, fs_dir, packets):
    """Manifest on/off of two linecapd binaries (or, without --baseline, of this tree's alone),
    alternated in one run (A-on A-off B-on B-off, then A-off A-on B-off B-on, repeated), so that
    a shared machine's load and memory fall on every cell alike: the shipped defaults against
    the same with manifest off, per binary, per size. Prints the medians and on/off."""
    output, rx_descriptors, burst = shipped()
    sides = ([("before", args.baseline)] if args.baseline else []) + [("after", capture.LINECAPD)]
    cells = {}
    loads = []
    for size in args.sizes:
        src = gen_source(workdir, size, 1, packets)
        for rep in range(args.repeat):
            for side, binary in sides:
                # The order alternates too: a run can inherit the previous one's freed memory.
                order = [("on", {}), ("off", {"manifest": False})]
                for cfg, change in (order if rep % 2 == 0 else order[::-1]):
                    capture.LINECAPD = binary  # run_linecapd starts whatever this names
                    out = dict(output, **change)
                    out["retention"] = {"max_bytes": f"{args.budget_mib}M"}
                    tag = f"mab-{fs}-{size}-{side}-{cfg}-{rep}"
                    loads.append(load_now()["loadavg"][0])
                    try:
                        r = run_linecapd(tag, workdir, os.path.join(fs_dir, "linecap-out"), src, "1w", args, packets,
                                         output=out, keep=True, rx_descriptors=rx_descriptors, burst=burst)
                    except Exception as e:  # a failed repetition is reported, the others still count
                        log(f"{tag}: {e}")
                        continue
                    cells.setdefault((size, side, cfg), []).append(r["written_mpps"])
                    log(f"{tag}: written {r['written_mpps']:.2f} Mpps of rx {r['rx_mpps']:.2f}; writer CPU "
                        f"{r['writer_cpu_pct']:.0f}%, hash CPU {r['hash_cpu_pct']:.0f}%; load {loads[-1]}")
    capture.LINECAPD = sides[-1][1]
    med = {k: statistics.median(v) for k, v in cells.items()}
    print(f"manifest on/off A/B on {fs}, {args.repeat} alternations, {args.seconds:g} s windows; "
          f"before = {args.baseline}, after = {sides[-1][1]}; load (1-min) {min(loads)}..{max(loads)}; "
          f"free memory reported to the host {reporting_text(page_reporting_delay())}")
    print(f"{'size':<6}{'side':<8}{'on Mpps':<22}{'off Mpps':<22}{'on/off'}")
    for size in args.sizes:
        for side, _ in sides:
            on, off = cells.get((size, side, "on"), []), cells.get((size, side, "off"), [])
            ratio = med.get((size, side, "on"), float("nan")) / med.get((size, side, "off"), float("nan"))
            print(f"{size:<6}{side:<8}{' '.join(f'{x:.2f}' for x in on):<22}{' '.join(f'{x:.2f}' for x in off):<22}"
                  f"{ratio:.2f}")
