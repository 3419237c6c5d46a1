#!/usr/bin/env python3
"""The benchmark plot: Mpps written against packet size, and against the number of workers,
with the references (testpmd rxonly = the source's rate, dpdk-dumpcap) and the limits
(10 GbE line rate, the output file system's raw write speed / record size).

  plot.py results.json out.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# 10 GbE line rate in Mpps: 10e9 / ((frame on the wire + 20 bytes preamble and gap) * 8); the
# 64-byte figure is the classic 14.88 (64 bytes on the wire including the FCS); imix = simple
# IMIX 7:4:1 of 64/594/1518-byte frames on the wire.
LINE_RATE = {"64": 14.88, "128": 8.45, "512": 2.35, "1024": 1.20, "1514": 0.81, "imix": 3.27}


def _num(x):
    return x is not None and x == x


def plot(results, path):
    sizes = results["args"]["sizes"]
    xs = list(range(len(sizes)))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 6.2), gridspec_kw={"width_ratios": [3, 1.4]})

    def series(fs, mode, key="written_mpps"):
        ys = []
        for s in sizes:
            r = next((r for r in results["runs"] if r.get("size") == s and r.get("fs") == fs
                      and r.get("mode") == mode and "error" not in r), None)
            ys.append(r[key] if r else float("nan"))
        return ys

    styles = [("tmpfs", "1w", "linecapd → tmpfs, 1 worker", "C0", "o-"),
              ("tmpfs", "2w", "linecapd → tmpfs, 2 workers on CPU 1", "C0", "s--"),
              ("disk", "1w", "linecapd → disk, 1 worker", "C1", "o-"),
              ("disk", "2w", "linecapd → disk, 2 workers on CPU 1", "C1", "s--")]
    for fs, mode, label, color, fmt in styles:
        ys = series(fs, mode)
        if any(_num(y) for y in ys):
            ax1.plot(xs, ys, fmt, color=color, label=label)
    tp = [results["refs"].get(f"testpmd-{s}", {}).get("rx_mpps", float("nan")) for s in sizes]
    dc = [results["refs"].get(f"dumpcap-{s}", {}).get("written_mpps", float("nan")) for s in sizes]
    if any(_num(y) for y in tp):
        ax1.plot(xs, tp, "^:", color="C2", label="dpdk-testpmd rxonly (source rate, no output)")
    if any(_num(y) for y in dc):
        ax1.plot(xs, dc, "v-", color="C3", label="dpdk-dumpcap -P → tmpfs (written)")
    fs_lim = series("tmpfs", "1w", "fs_limit_mpps")
    if any(_num(y) for y in fs_lim):
        ax1.plot(xs, fs_lim, "_", color="grey", markersize=18, mew=2, linestyle="none",
                 label="tmpfs raw write speed / record size")
    lr = [LINE_RATE.get(s, float("nan")) for s in sizes]
    ax1.plot(xs, lr, "x", color="black", markersize=8, linestyle="none", label="10 GbE line rate")
    ax1.set_xticks(xs, [s if s == "imix" else f"{s} B" for s in sizes])
    ax1.set_yscale("log")
    ax1.set_ylabel("Mpps (log)")
    ax1.set_xlabel("captured frame size")
    ax1.set_title("Mpps written into files against packet size")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, frameon=False)

    modes = [m for m in ("1w", "2w", "2w2cpu") if any(r.get("mode") == m for r in results["runs"])]
    labels = {"1w": "1 worker\n(CPU 1)", "2w": "2 workers\n(both CPU 1)", "2w2cpu": "2 workers\n(CPU 0 + 1)"}
    width = 0.38
    for i, fs in enumerate(("tmpfs", "disk")):
        rx, wr = [], []
        for m in modes:
            r = next((r for r in results["runs"] if r.get("size") == "64" and r.get("fs") == fs
                      and r.get("mode") == m and "error" not in r), None)
            rx.append(r["rx_mpps"] if r else float("nan"))
            wr.append(r["written_mpps"] if r else float("nan"))
        if not any(_num(y) for y in wr):
            continue
        pos = [j + (i - 0.5) * width for j in range(len(modes))]
        ax2.bar(pos, rx, width, color=f"C{i}", alpha=0.3, label=f"{fs}: received")
        ax2.bar(pos, wr, width, color=f"C{i}", label=f"{fs}: written")
    ax2.axhline(14.88, color="black", linestyle=":", linewidth=1, label="14.88 Mpps")
    ax2.set_xticks(range(len(modes)), [labels[m] for m in modes], fontsize=8)
    ax2.set_ylabel("Mpps")
    ax2.set_title("64 B frames against workers")
    ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    ax2.grid(True, axis="y", alpha=0.3)
    c = results["conditions"]
    fig.suptitle(f"linecap, {c['cpu_model']} ({c['cpus']} vCPUs, {c['hypervisor']}), {c['date']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    with open(sys.argv[1]) as fh:
        plot(json.load(fh), sys.argv[2])
