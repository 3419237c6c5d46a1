"""The machine's own limits, measured the way linecap works: sequential write speed of a
file system (linecap_fsbench), memcpy bandwidth, and the micro benchmarks."""

import json
import os
import subprocess
import time

from harness import FSBENCH, MICRO, NICE


def _fsbench_write_args(directory, mib, block_kb, fsync, direct, file_mib, budget_mib):
    args = NICE + [FSBENCH, "write", directory, str(mib), "--block", str(block_kb), "--file", str(file_mib)]
    if fsync:
        args.append("--fsync")
    if direct:
        args.append("--direct")
    if budget_mib is not None:
        args += ["--keep", "--budget", str(budget_mib)]
    return args


def _fsbench_write_result(out, direct, fsync, block_kb, budget_mib, file_mib):
    if out.returncode != 0:
        return {"error": out.stderr.strip()}
    kv = dict(x.split("=", 1) for x in out.stdout.split())
    return {"gbps": float(kv["gbps"]), "series": [float(x) for x in kv["series_gbps"].split(",") if x],
            "bytes": int(kv["bytes"]), "direct": direct, "fsync": fsync, "block_kb": block_kb,
            "kept": budget_mib is not None, "budget_mib": budget_mib, "file_mib": file_mib}


def fsbench_write(directory, mib, block_kb, fsync, direct=False, file_mib=256, budget_mib=None):
    """Sequential 1 MiB-style writes of `mib` MiB into files of `file_mib` MiB; with
    `budget_mib` the files are kept and the oldest deleted beyond the budget (as linecapd's
    retention does), else each is deleted when written."""
    os.sync()  # as run_linecapd: nobody else's writeback in this window
    out = subprocess.run(_fsbench_write_args(directory, mib, block_kb, fsync, direct, file_mib, budget_mib),
                         capture_output=True, text=True)
    return _fsbench_write_result(out, direct, fsync, block_kb, budget_mib, file_mib)


def fsbench_write_together(directories, mib, block_kb, fsync, direct=False, file_mib=256):
    """fsbench_write into every directory at once (one writer each, `mib` MiB each): the
    aggregate raw speed of several volumes written together. gbps = all bytes over the wall
    time from the first start to the last end; `each` the writers' own results."""
    os.sync()
    t0 = time.monotonic()
    procs = [subprocess.Popen(_fsbench_write_args(d, mib, block_kb, fsync, direct, file_mib, None),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for d in directories]
    each = []
    for p in procs:
        stdout, stderr = p.communicate()
        each.append(_fsbench_write_result(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr),
                                          direct, fsync, block_kb, None, file_mib))
    wall = time.monotonic() - t0
    errors = [r["error"] for r in each if "error" in r]
    if errors:
        return {"error": "; ".join(errors)}
    total = sum(r["bytes"] for r in each)
    return {"gbps": total / wall / 1e9, "bytes": total, "seconds": wall, "each": each}


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
