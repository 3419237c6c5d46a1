"""What every benchmark script shares: where the programs are, the child processes it
starts (each in its own process group, stopped on exit), the priority they run at, and the
janitor that empties an output directory as files appear (the live-path search uses it)."""

import os
import socket
import sys
import threading
import time

from linecap_harness.daemon import Linecapd, Process, wait_until  # noqa: F401  (wait_until: for the modules)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("LINECAP_BUILD", os.path.join(ROOT, "build-bench"))
LINECAPD = os.environ.get("LINECAPD", os.path.join(BUILD, "src", "linecapd"))
FSBENCH = os.path.join(BUILD, "bench", "linecap_fsbench")
MICRO = os.path.join(BUILD, "bench", "linecap_micro")
GEN_PCAP = os.path.join(ROOT, "tests", "tools", "gen_pcap.py")
TESTPMD = os.environ.get("DPDK_TESTPMD", "dpdk-testpmd")
DUMPCAP = os.environ.get("DPDK_DUMPCAP", "dpdk-dumpcap")
LINE_RATE_64 = 14.88  # Mpps, 10 GbE, 64-byte frames (incl. FCS) + 20 bytes preamble/IFG


NICE = []  # ["nice", "-n", "-N"] with --nice: every measured program gets the same priority


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)



class Proc(Process):
    """A child process in its own process group, logged to a file, at the benchmark's
    priority (--nice); stop() ends the group."""

    def __init__(self, args, logpath, env=None):
        super().__init__(args, logpath, env)
        if NICE:
            set_autogroup_nice(self.pid, int(NICE[2]))


class Daemon(Linecapd):
    """linecapd at the benchmark's priority (--nice)."""

    def __init__(self, binary, config, logpath):
        super().__init__(binary, config, logpath, prefix=NICE)
        if NICE:
            set_autogroup_nice(self.pid, int(NICE[2]))


RUNNING = []


def set_autogroup_nice(pid, nice):
    """With sched_autogroup (a session = a scheduling group), nice only ranks threads inside
    their session; what decides between sessions is the autogroup's own nice."""
    try:
        with open(f"/proc/{pid}/autogroup", "w") as fh:
            fh.write(str(nice))
    except OSError:
        pass


def stop_all():
    for p in RUNNING:
        try:
            p.stop(timeout=10)
        except Exception:
            pass
    RUNNING.clear()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Janitor(threading.Thread):
    """Deletes finished capture files (*.pcap, *.pcapng) as they appear, so a run of any length
    fits a small tmpfs; counts what it deleted. linecap's own retention would do this in
    production; here it must cost the daemon nothing, so it runs in the harness (on CPU 0)."""

    def __init__(self, directory, period=0.2, keep_s=0.0):
        super().__init__(daemon=True)
        self.directory, self.period, self.keep_s = directory, period, keep_s
        self.halt = threading.Event()
        self.deleted_bytes = 0
        self.deleted_files = 0

    def sweep(self, everything=False):
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return
        for name in names:
            if everything or name.endswith((".pcap", ".pcapng", ".idx")):
                path = os.path.join(self.directory, name)
                try:
                    st = os.stat(path)
                    size = st.st_size
                    # With indexing on, a finished file stays `keep_s` seconds for the indexer.
                    if not everything and self.keep_s and time.time() - st.st_mtime < self.keep_s:
                        continue
                    os.unlink(path)
                    self.deleted_bytes += size
                    self.deleted_files += 1
                except (FileNotFoundError, IsADirectoryError):
                    pass

    def run(self):
        while not self.halt.wait(self.period):
            self.sweep()

    def stop(self):
        self.halt.set()
        self.join()
        self.sweep(everything=True)
