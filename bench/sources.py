"""The benchmark's traffic: one generated pcap per queue (net_pcap infinite_rx replays it)."""

import os
import subprocess
import sys

from harness import GEN_PCAP
from linecap_harness import pcap

SIZES = ["64", "128", "512", "1024", "1514", "imix"]


def gen_source(workdir, size, queues, count, proto="udp"):
    """One pcap per queue: `count` frames of `size` bytes (or IMIX), UDP/IPv4 (or TCP), many flows."""
    files = []
    for q in range(queues):
        path = os.path.join(workdir, f"src-{size}-{proto}-q{q}.pcap")
        if not os.path.exists(path):
            args = [sys.executable, GEN_PCAP, "-q", "--count", str(count), "--seed", str(100 + q),
                    "--flows", "1024", "--proto", proto, "--out", path]
            args += ["--imix"] if size == "imix" else ["--size", size]
            subprocess.run(args, check=True)
        files.append(path)
    return files


def mean_frame_len(path):
    """Average captured length of the frames in a pcap file."""
    lengths = [r.caplen for r in pcap.Capture(path)]
    return sum(lengths) / len(lengths) if lengths else 0.0


def record_bytes_for(size, src):
    """Bytes a frame of this size takes in a pcap file: the 16-byte record header and the frame."""
    return 16 + (mean_frame_len(src) if size == "imix" else int(size))
