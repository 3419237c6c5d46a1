"""The end-to-end suite: machine limits, the references and linecapd on the same source, at
every size, file system and worker layout; the filtered/unfiltered pair."""

import os

import defaults
from capture import LCORES, run_linecapd
from harness import log
from limits import fsbench_memcpy, fsbench_write, run_micro
from machine import fs_of, load_now, machine_conditions
from refs import run_dumpcap, run_testpmd
from sources import gen_source, record_bytes_for


def suite(args):
    """Everything, in the order of the report: the defaults table, the machine's limits, the
    micro benchmarks, then per size the references and linecapd (suite settings) on every
    file system and worker layout, and the filter pair."""
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

    # The table's first rows: the shipped defaults, files kept, and the cost of each feature.
    if not args.no_defaults:
        results["defaults"] = defaults.run(args, workdir, filesystems, packets)
    if args.only_defaults:
        results["conditions"]["load_end"] = load_now()
        return results

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
