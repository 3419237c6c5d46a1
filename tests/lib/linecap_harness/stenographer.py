"""Debian's Stenographer (packages stenographer, stenographer-client) as the benchmarks run it.

  stenotype alone      the live-path rig (bench/rfc2544.py): stenotype_argv(), READY_LINE,
                       file_packets(), drops()
  Server               the stenographer server over one thread's store, capturing from an
                       interface through the stenotype it runs, and answering POST /query over
                       TLS with client certificates; stenoread_argv() is the client as an
                       analyst runs it (the query table, bench/store/query_table.sh)

stenotype's options, for both (stenotype_flags): a TPACKET_V3 ring of `blocks` 1 MiB blocks,
O_DIRECT writes of whole blocks, its indexer on. Against the unit's defaults:
  --seccomp=none       its sandbox's syscall list predates this kernel and libc (under 'kill'
                       it dies on the first unlisted call)
  --uid/--gid=root     the benchmarks' directories are root's (mode 0700); by default it drops
                       to nobody and could not write into them
  --blockage_sec=1     a partial block reaches the disk within 1 s (the unit's 10 s would hold
                       a trial's or a replay's tail)
  --aiops              at most --blocks (stenotype refuses more)
  -v --stats_sec=1     its cumulative `drops=` (the socket's PACKET_STATISTICS) in the log

The server's certificates are made by Debian's own stenokeys (as the package's postinst makes
/etc/stenographer/certs): a CA, and a server and a client certificate whose subject's CN is the
configured Host (127.0.0.1), without a subjectAltName. curl accepts that: it compares the CN
with the host only when a certificate has no subjectAltName at all. Its config's Host must be
an IP address (stenographer refuses a name).
"""

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import time

from .daemon import Process, wait_until

BLOCK = 1 << 20  # stenotype's packet files are whole TPACKET_V3 blocks of this size
READY_LINE = "starting to process packets"  # stenotype, once its ring is set up


def stenotype_flags(blocks, blockage_sec=1, fileage_sec=2, stats_sec=1):
    return [f"--blocks={blocks}", f"--aiops={min(128, blocks)}", f"--blockage_sec={blockage_sec}",
            f"--fileage_sec={fileage_sec}", "--no_watchdogs", "--seccomp=none", "--uid=root", "--gid=root",
            "-v", f"--stats_sec={stats_sec}"]


def stenotype_argv(iface, directory, blocks, **flags):
    """stenotype alone, one thread, into DIRECTORY/PKT0 and DIRECTORY/IDX0 (made here)."""
    for sub in ("PKT0", "IDX0"):
        os.makedirs(os.path.join(directory, sub), exist_ok=True)
    return ["stenotype", f"--iface={iface}", f"--dir={directory}", "--threads=1"] + stenotype_flags(blocks, **flags)


def file_packets(path):
    """The packets in one of stenotype's packet files: each block's TPACKET_V3 header counts
    its packets (a block stenotype had not filled is all zeros)."""
    total = 0
    with open(path, "rb") as fh:
        while True:
            head = fh.read(16)
            if len(head) < 16:
                return total
            version, _, status, packets = struct.unpack("<4I", head)
            if version == 2 and status:  # the block descriptor's version field says TPACKET_V3
                total += packets
            fh.seek(BLOCK - 16, os.SEEK_CUR)


def drops(text):
    """The last cumulative `drops=` of stenotype's stats lines (0 before the first)."""
    m = re.findall(r"drops=(\d+)", text)
    return int(m[-1]) if m else 0


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class Server:
    """The stenographer server over WORKDIR/thread0/{packets,index}, its certificates (made
    once, by stenokeys) in WORKDIR/certs, its config in WORKDIR/config. It runs stenotype on
    IFACE with stenotype_flags(blocks, **flags) as the config's Flags; the server and its
    stenotype are one process group (stop() ends both). `pgid` lets another process stop a
    server this one started (stop_group)."""

    def __init__(self, workdir, iface, blocks=256, port=None):
        self.workdir, self.iface, self.blocks = workdir, iface, blocks
        self.packets_dir = os.path.join(workdir, "thread0", "packets")
        self.index_dir = os.path.join(workdir, "thread0", "index")
        self.certs = os.path.join(workdir, "certs")
        self.config = os.path.join(workdir, "config")
        # The server makes a directory of links for stenotype in $TMPDIR and removes it only
        # on a clean exit: here it goes with the rest.
        self.tmp = os.path.join(workdir, "tmp")
        for d in (self.packets_dir, self.index_dir, self.tmp):
            os.makedirs(d, exist_ok=True)
        self.port = port or _free_port()
        self.proc = None

    def write_config(self, **flags):
        conf = {"Threads": [{"PacketsDirectory": self.packets_dir, "IndexDirectory": self.index_dir,
                             "MaxDirectoryFiles": 30000, "DiskFreePercentage": 1}],
                "StenotypePath": shutil.which("stenotype") or "/usr/sbin/stenotype",
                "Interface": self.iface, "Port": self.port, "Host": "127.0.0.1",
                "Flags": stenotype_flags(self.blocks, **flags), "CertPath": self.certs}
        with open(self.config, "w") as fh:
            json.dump(conf, fh, indent=1)

    def make_certs(self):
        if os.path.exists(os.path.join(self.certs, "client_key.pem")):
            return
        os.makedirs(self.certs, exist_ok=True)
        r = subprocess.run(["stenokeys", "root", "root"], env={**os.environ, "STENOGRAPHER_CONFIG": self.config},
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"stenokeys: {(r.stderr or r.stdout).strip()[-1000:]}")

    def start(self, timeout=120, **flags):
        """Starts the server; returns once stenotype captures, the server has listed the
        finished files there are, and it accepts connections."""
        self.write_config(**flags)
        self.make_certs()
        expected = len([n for n in os.listdir(self.index_dir) if not n.startswith(".")])
        starts = len([n for n in os.listdir(self.workdir) if n.startswith("stenographer-")])
        log = os.path.join(self.workdir, f"stenographer-{starts + 1}.log")
        self.proc = Process([shutil.which("stenographer") or "/usr/sbin/stenographer", f"-config={self.config}",
                             "-syslog=false", "-v=1"], log, env={**os.environ, "TMPDIR": self.tmp})

        def ready():
            text = self.proc.text()
            if READY_LINE not in text:
                return False
            found = sum(int(n) for n in re.findall(r"found (\d+) new blockfiles", text))
            return found >= expected and _listening(self.port)
        wait_until(ready, timeout, "stenographer start", self.proc)
        return self

    @property
    def pgid(self):
        return self.proc.pid

    def text(self):
        return self.proc.text() if self.proc else ""

    def stop(self):
        # SIGKILL: stenotype's unfinished (hidden, empty) file is removed by the next start,
        # where a clean stop would leave one more empty file pair for every query to open.
        if self.proc:
            self.proc.stop(sig=signal.SIGKILL, timeout=10)
            self.proc = None

    def finished_files(self):
        """The packet files stenotype finished and indexed."""
        idx = {n for n in os.listdir(self.index_dir) if not n.startswith(".")}
        return sorted(n for n in os.listdir(self.packets_dir) if n in idx)

    def captured(self):
        """Packets in the finished, indexed files."""
        return sum(file_packets(os.path.join(self.packets_dir, n)) for n in self.finished_files())

    def wait_captured(self, expected, settle_s, timeout):
        """Waits until the finished files hold EXPECTED packets, or nothing changed for
        SETTLE_S (past --fileage_sec); returns what they hold."""
        deadline, last, since = time.time() + timeout, -1, time.time()
        while time.time() < deadline:
            got = self.captured()
            if got >= expected:
                return got
            if got != last:
                last, since = got, time.time()
            elif time.time() - since > settle_s:
                return got
            if self.proc and not self.proc.alive():
                raise RuntimeError(f"stenographer exited: {self.text()[-2000:]}")
            time.sleep(0.5)
        return self.captured()

    def stenoread_argv(self, query, out):
        """Debian's stenoread as an analyst runs it: its answer through tcpdump -w OUT."""
        return ["env", f"STENOGRAPHER_CONFIG={self.config}", "stenoread", query, "-w", out]


def stop_group(pgid):
    """Ends a server's process group (the server and its stenotype) started by another
    process of the benchmark."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise RuntimeError(f"process group {pgid} still runs")
