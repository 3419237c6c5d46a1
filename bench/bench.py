#!/usr/bin/env python3
"""linecap benchmark suite: end to end capture into files, the references on the same
source (dpdk-testpmd rxonly, dpdk-dumpcap), the machine's own limits (file system raw
write speed, memcpy bandwidth), and the micro benchmarks. Run through bench/run.sh, which
prepares the machine (build, hugepages, a tmpfs) and undoes it afterwards.

  bench.py suite [--quick] [--seconds S] [--warmup S] ...   the table (stdout), results.md,
                                                             results.json and the PNG plot
  bench.py soak --duration SECONDS                           RSS over a long run
  bench.py report --results results.json                     re-render a run's tables
  bench.py ab --baseline OLD/linecapd [--repeat N]            two binaries alternated on the
                                                             capture path (64 B and IMIX)
  bench.py manifest-ab [--baseline OLD/linecapd] --fs F ...  manifest on/off alternated

One module per job (see bench/README.md): harness (programs, processes), machine
(conditions), metrics (scraping linecapd), sources (traffic), capture (linecapd runs), refs
(testpmd, dumpcap), limits (raw file system, memcpy, micro), defaults (the shipped
configuration and the cost of each feature), suite, report, soak. This file is the command
line. Everything it starts it stops; the output directories it is given are emptied as it
goes. Python 3 standard library only (matplotlib for the plot, optional; PyYAML to read the
shipped configuration).
"""

import argparse
import json
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "lib"))  # linecap_harness

# The live-path search (rfc2544.py) uses these through `import bench`.
from harness import (GEN_PCAP, LINECAPD, NICE, ROOT, RUNNING, TESTPMD, Daemon, Janitor, Proc,  # noqa: E402,F401
                     free_port, log, set_autogroup_nice, stop_all, wait_until)
from machine import (KernelSetting, delayed_page_reporting, fs_of, load_now, machine_conditions,  # noqa: E402,F401
                     sysctl)
from ab import ab  # noqa: E402
import defaults  # noqa: E402
from report import report  # noqa: E402
from soak import soak  # noqa: E402
from sources import SIZES  # noqa: E402
from suite import suite  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["suite", "soak", "report", "ab", "manifest-ab"])
    ap.add_argument("--workdir", required=True, help="scratch directory (source pcaps, logs, configs)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--tmpfs-dir", default="", help="a directory on tmpfs")
    ap.add_argument("--disk-dir", default="", help="a directory on the real disk")
    ap.add_argument("--fs", default="tmpfs,disk", type=lambda s: s.split(","))
    ap.add_argument("--sizes", default=",".join(SIZES), type=lambda s: s.split(","))
    ap.add_argument("--workers", default="1w,2w,2w2cpu", type=lambda s: s.split(","))
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--packets", type=int, default=8192, help="frames per source file")
    ap.add_argument("--burst", type=int, default=64)
    ap.add_argument("--block-kb", type=int, default=1024)
    ap.add_argument("--blocks", type=int, default=32)
    ap.add_argument("--writer-threads", type=int, default=1)
    ap.add_argument("--o-direct", action="store_true")
    ap.add_argument("--filter", default="tcp port 443 or udp port 53",
                    help="the filter of the filtered/unfiltered pair ('' = no pair)")
    ap.add_argument("--index", action="store_true",
                    help="output.index on (the daemon's background indexer); off by default so the figures are "
                         "the capture alone")
    ap.add_argument("--index-keep-s", type=float, default=2.0,
                    help="with --index: seconds a finished file stays for the indexer before the harness deletes it")
    ap.add_argument("--rotate-mb", type=int, default=256)
    ap.add_argument("--fs-mib", type=int, default=4096, help="MiB written by each raw write measurement")
    ap.add_argument("--nice", type=int, default=0,
                    help="run every measured program (linecapd, testpmd, dumpcap, fsbench) at this nice level, "
                         "e.g. -20 on a machine shared with other work")
    ap.add_argument("--quick", action="store_true",
                    help="only the shipped-defaults table (tmpfs and disk, 64/1514/IMIX, each feature's row), "
                         "short windows")
    ap.add_argument("--no-defaults", action="store_true", help="skip the shipped-defaults table")
    ap.add_argument("--only-defaults", action="store_true", help="only the shipped-defaults table")
    ap.add_argument("--budget-mib", type=int, default=3072,
                    help="defaults table: output.retention.max_bytes in MiB (files are kept; the oldest are "
                         "deleted beyond it), and the same budget for the raw write measurement")
    ap.add_argument("--no-refs", action="store_true", help="skip testpmd/dumpcap")
    ap.add_argument("--repeat", type=int, default=1, help="repetitions of every linecapd point (median + spread)")
    ap.add_argument("--repeat-sizes", default="", type=lambda s: [x for x in s.split(",") if x],
                    help="repeat only these sizes (default: all)")
    ap.add_argument("--no-micro", action="store_true")
    ap.add_argument("--no-limits", action="store_true", help="skip the raw fs / memcpy measurements")
    ap.add_argument("--duration", type=float, default=600, help="soak: seconds")
    ap.add_argument("--results", help="report: re-render from a results.json")
    ap.add_argument("--page-reporting-delay-ms", type=int, default=None,
                    help="on a VM whose kernel reports free memory to the host (page_reporting): keep freed "
                         "memory unreported this long during the run (at most 60000; restored after), so rows "
                         "are not slowed by the host taking back what the row before freed")
    ap.add_argument("--baseline", help="ab, manifest-ab: the linecapd binary to compare this tree's against "
                    "(manifest-ab without it: this tree's alone)")
    args = ap.parse_args()
    args.sizes_given = any(a == "--sizes" or a.startswith("--sizes=") for a in sys.argv[1:])
    if args.quick:
        args.only_defaults = True
        args.seconds = min(args.seconds, 5)
        args.warmup = min(args.warmup, 2)
        args.fs_mib = min(args.fs_mib, 2048)
    if args.nice:
        NICE[:] = ["nice", "-n", str(args.nice)]
        set_autogroup_nice(os.getpid(), args.nice)  # fsbench and the micro benchmarks run in this session
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        with delayed_page_reporting(args.page_reporting_delay_ms):
            run_mode(ap, args)
    finally:
        stop_all()


def run_mode(ap, args):
    if args.mode == "suite":
        report(suite(args), args.out)
    elif args.mode == "soak":
        soak(args)
    elif args.mode == "manifest-ab":
        for fs in args.fs:
            defaults.manifest_ab(args, args.workdir, fs, args.tmpfs_dir if fs == "tmpfs" else args.disk_dir,
                                 args.packets)
    elif args.mode == "ab":
        if not args.baseline:
            ap.error("ab needs --baseline PATH-TO-LINECAPD")
        if not any(a.startswith("--repeat") for a in sys.argv[1:]):
            args.repeat = 5
        ab(args)
    else:
        with open(args.results) as fh:
            results = json.load(fh)
        report(results, args.out)


if __name__ == "__main__":
    main()
