"""Rendering results: the text table on stdout, results.md, results.json, the plot, and the
sections of the live-path search and the soak when their JSON files are there."""

import json
import os

from linecap_harness import config
from harness import log
from machine import reporting_text


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
        f"L3 {c['l3']}; {c['mem_total_gib']} GiB RAM; free memory reported to the host "
        f"{reporting_text(c.get('page_reporting_delay_ms'))}",
        f"- load (1/5/15 min) at start {c['load_start']['loadavg']} ({c['load_start']['cpu_busy_pct']}% CPU busy), "
        f"at end {c['load_end']['loadavg']} ({c['load_end']['cpu_busy_pct']}% busy)",
        f"- source: net_pcap infinite_rx, one file of {a['packets']} frames per queue, UDP/IPv4, 1024 flows; "
        f"sizes are captured frame lengths (no FCS); imix = 7:4:1 of 60/590/1514 bytes",
        f"- window: {a['warmup']} s warm-up, then {a['seconds']} s measured (metrics scraped once a second)"
        + (f"; {'sizes ' + ','.join(a['repeat_sizes']) if a.get('repeat_sizes') else 'each point'} measured "
           f"{a['repeat']} times: median, (min–max) of the written rate" if a.get("repeat", 1) > 1 else "")
        + (f"; every measured program ran at nice {a['nice']}" if a.get("nice") else ""),
    ]
    if results.get("runs"):
        lines.insert(4, f"- linecapd in the suite rows (the defaults table uses the shipped settings): burst "
                     f"{a['burst']}, blocks {a['blocks']} × {a['block_kb']} KiB per queue (hugepages), "
                     f"{a['writer_threads']} writer thread(s), O_DIRECT {a['o_direct']}, files rotate at "
                     f"{a['rotate_mb']} MiB, fsync on rotate, no manifest, "
                     + (f"background indexer on (files kept {a.get('index_keep_s', 2)} s for it)" if a.get("index")
                        else "no index")
                     + "; finished files are deleted by the harness as they appear")
    for k in ("fs_tmpfs", "fs_disk"):
        if k in c:
            lines.append(f"- {k[3:]}: {c[k]['path']} ({c[k]['fstype']} {c[k]['source']}, {c[k]['options']})")
    for k, v in results["lcores"].items():
        if k == "1w" or results.get("runs"):
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
    if parts:
        lines.append("- raw limits measured at the start of this run (1 MiB pwrite, fsync per 256 MiB file; the "
                     "table's *fs raw* is measured again before each size): " + "; ".join(parts))
    return "\n".join(lines)


def micro_rows(results):
    rows = []
    for b in results.get("micro", {}).get("rows", []):
        rows.append([b["name"], b["label"], f(b["ns_per_iter"]), f(b["tsc_per_item"], "{:.1f}"),
                     f(b["mitems_per_s"], "{:.1f}"), f(b["gbytes_per_s"]), b["error"]])
    return rows


DEFAULTS_HEADERS = ["fs", "size", "configuration", "rx Mpps", "written Mpps", "written GB/s", "drops Mpps by reason",
                    "raw GB/s (same volume, kept)", "raw Mpps", "written/raw", "feature on/off", "writer CPU",
                    "hash CPU", "index queued"]


def defaults_rows(results):
    rows = []
    for r in results.get("defaults", {}).get("rows", []):
        if "error" in r:
            rows.append([r["fs"], r["size"], r["config"], "error: " + r["error"][:60]] + [""] * 10)
            continue
        drops = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r["drops"].items()) if v > 0.0005) or "0"
        rows.append([r["fs"], r["size"], r["config"], f(r["rx_mpps"]), f(r["written_mpps"]), f(r["file_gbps"]), drops,
                     f(r.get("raw_gbps")), f(r.get("raw_mpps")), f(r.get("of_raw")), f(r.get("on_off")),
                     f(r["writer_cpu_pct"], "{:.0f}%"), f(r.get("hash_cpu_pct"), "{:.0f}%"),
                     f(r.get("index_queued"), "{:.0f}")])
    return rows


def defaults_text(results):
    d = results.get("defaults")
    if not d:
        return ""
    shipped = ", ".join(f"{k}: {config.flow(v)}" for k, v in d["shipped"].items())
    return (f"config/linecap.yaml's output settings ({shipped}), "
            f"rx_descriptors {d['rx_descriptors']}, burst {d['burst']}, one worker, net_pcap infinite_rx source; "
            f"files kept, output.retention.max_bytes {d['budget_mib']} MiB deletes the oldest (no janitor). "
            f"*raw* = linecap_fsbench right after each row, same file system, same volume (everything the row "
            f"wrote, warm-up included), files of the rotation size kept under the same budget, same fsync and "
            f"O_DIRECT. *written/raw* = written GB/s / raw GB/s. *feature on/off* = written rate with the feature / "
            f"without it (the shipped-defaults row of the same fs and size is the other side); the filter row "
            f"uses `{d['filter']}`, which every frame passes. *hash CPU* = the manifest hasher thread.")


def report(results, outdir):
    os.makedirs(outdir, exist_ok=True)
    rows = table_rows(results)
    text = []
    if defaults_rows(results):
        text += ["Shipped defaults, files kept, and the cost of each feature:",
                 text_table(DEFAULTS_HEADERS, defaults_rows(results)), "", defaults_text(results), ""]
    if not rows and not results.get("refs"):
        text += ["Conditions:", conditions_text(results)]
        print("\n".join(text))
        write_files(results, outdir, defaults_only=True)
        return
    text += [text_table(HEADERS, rows), ""]
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
    md = ["# linecap benchmark results", "", conditions_text(results), ""] + defaults_md(results) + [
          "## End to end: net_pcap infinite_rx → linecapd → files (suite settings)", "", md_table(HEADERS, rows), "",
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
    write_files(results, outdir, md)


def defaults_md(results):
    if not defaults_rows(results):
        return []
    return ["## Shipped defaults, files kept, and the cost of each feature", "", md_table(DEFAULTS_HEADERS,
            defaults_rows(results)), "", defaults_text(results), ""]


def write_files(results, outdir, md=None, defaults_only=False):
    if md is None:
        md = ["# linecap benchmark results", "", conditions_text(results), ""] + defaults_md(results)
    with open(os.path.join(outdir, "results.md"), "w") as fh:
        fh.write("\n".join(md))
    with open(os.path.join(outdir, "results.json"), "w") as fh:
        json.dump(results, fh, indent=1, default=str)
    if defaults_only:
        log(f"results: {outdir}/results.md, results.json")
        return
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
