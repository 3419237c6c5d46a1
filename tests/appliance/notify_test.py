#!/usr/bin/env python3
"""The systemd notify protocol, spoken by a running linecapd (net_null port, no hugepages,
lcores 0-1): this test plays systemd - it binds the NOTIFY_SOCKET datagram socket and sets
WATCHDOG_USEC=200000 - and checks what arrives.

  basic  READY=1 once capture runs; WATCHDOG=1 about every 100 ms; STATUS= lines once a
         second; SIGHUP -> RELOADING=1 then READY=1; SIGTERM -> STOPPING=1 and exit 0.
  stall  the worker stalls for 3 s inside its PMD, with no hook in the daemon: the port is
         net_pcap reading a FIFO that this test holds open after writing only the pcap
         header, so the worker's first rte_eth_rx_burst blocks in read(2) until the test
         closes the FIFO (end of file: the worker polls again). WATCHDOG=1 stays away for
         the stall while STATUS= goes on, the log says which worker, and the pings start
         once the worker is back.

Exit 0 = pass, 1 = fail, 77 = skipped (with the reason printed).
"""
import os
import signal
import socket
import subprocess
import sys
import struct
import tempfile
import threading
import time

STALL_FOR_S = 3.0
WATCHDOG_USEC = 200000


def skip(reason):
    print(f"SKIP: {reason}", file=sys.stderr)
    sys.exit(77)


def fail(reason):
    print(f"FAIL: {reason}", file=sys.stderr)
    sys.exit(1)


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')} notify] {msg}", file=sys.stderr, flush=True)


CONFIG = """\
eal: {{lcores: "0-1", hugepages: false, memory_mb: 256}}
ports:
  - name: p0
    device: {device}
    rx_queues: 1
    rx_descriptors: 512
    # net_null's packets are never written: nothing reaches the disk
    filter: "ether host 02:00:00:00:00:01"
output:
  directory: "{out}"
  block_size_kb: 256
  blocks_per_queue: 4
metrics:
  enabled: false
log:
  level: info
"""


# Linux's SO_TIMESTAMPNS (asm-generic/socket.h) where Python does not name it.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


class Notifications:
    """The NOTIFY_SOCKET end: every datagram with the time the kernel queued it (SO_TIMESTAMPNS),
    that is when linecapd sent it. The time this test read it is not that: on a loaded machine
    the test may be off its CPU while several pings queue, which would show as a long gap
    that the daemon never left."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock.bind(path)
        self.messages = []  # (monotonic time, line)

    def poll(self, seconds):
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            self.sock.settimeout(left)
            try:
                data, ancillary, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(16))
            except socket.timeout:
                return
            now = time.monotonic()
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", value[:16])
                    # The kernel's stamp is CLOCK_REALTIME: moved onto this test's clock.
                    now = sec + nsec / 1e9 - (time.time() - time.monotonic())
            for line in data.decode(errors="replace").split("\n"):
                if line:
                    self.messages.append((now, line))

    def wait_for(self, line, seconds, proc=None, after=0.0):
        """Polls until `line` arrives (at or after `after`): returns (time, line), or None
        when the time is up or the daemon exited without sending it."""
        end = time.monotonic() + seconds
        while True:
            for m in self.messages:
                if m[0] >= after and m[1] == line:
                    return m
            if time.monotonic() >= end:
                return None
            if proc is not None and proc.poll() is not None:
                self.poll(0.2)  # what it sent just before exiting
                return next((m for m in self.messages if m[0] >= after and m[1] == line), None)
            self.poll(0.1)

    def since(self, t, prefix):
        return [m for m in self.messages if m[0] >= t and m[1].startswith(prefix)]

    def close(self):
        self.sock.close()


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "basic"
    linecapd = os.environ.get("LINECAPD", "")
    if not linecapd or not os.access(linecapd, os.X_OK):
        skip(f"linecapd binary not found at '{linecapd}' (build first, or set LINECAPD)")
    if os.cpu_count() is None or os.cpu_count() < 2:
        skip("needs 2 CPUs (lcores 0-1)")

    with tempfile.TemporaryDirectory(prefix="lc-notify.") as tmp:
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        cfg = os.path.join(tmp, "linecap.yaml")
        device = "net_null0"
        fifo = None
        if mode == "stall":
            fifo = StallingFifo(os.path.join(tmp, "stall.fifo"))
            device = f"net_pcap0,rx_pcap={fifo.path}"
        with open(cfg, "w") as f:
            f.write(CONFIG.format(out=out, device=device))
        sock_path = os.path.join(tmp, "notify.sock")
        notes = Notifications(sock_path)
        env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC=str(WATCHDOG_USEC))
        env.pop("WATCHDOG_PID", None)
        logf = open(os.path.join(tmp, "linecapd.log"), "w+")
        proc = subprocess.Popen([linecapd, "--config", cfg], env=env, stdout=logf, stderr=subprocess.STDOUT)
        ok = False
        try:
            if mode == "basic":
                basic(proc, notes)
            else:
                stall(proc, notes, fifo)
            ok = True
        finally:
            if fifo is not None:
                fifo.release()  # a worker still blocked in read(2) gets end of file and can stop
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            notes.close()
            logf.seek(0)
            text = logf.read()
            logf.close()
            if not ok or os.environ.get("LINECAP_VERBOSE") == "1":
                print("----- linecapd log -----\n" + text[-6000:] + "----- end -----", file=sys.stderr)
            if ok and mode == "stall" and "heartbeat stopped" not in text:
                fail("the log does not say which worker's heartbeat stopped")
    log(f"{mode}: ok")


def basic(proc, notes):
    ready = notes.wait_for("READY=1", 60, proc)
    if ready is None:
        fail(f"no READY=1 within 60 s (daemon exit status: {proc.poll()})")
    log("READY=1")

    notes.poll(2.5)
    t0 = ready[0]
    pings = notes.since(t0, "WATCHDOG=1")
    # WATCHDOG_USEC/2 = 100 ms between pings: about 25 in 2.5 s; allow a slow machine.
    if len(pings) < 8:
        fail(f"{len(pings)} WATCHDOG=1 in the 2.5 s after READY=1, expected about 25")
    gaps = [b[0] - a[0] for a, b in zip(pings, pings[1:])]
    if max(gaps) > WATCHDOG_USEC / 1e6:
        fail(f"a gap of {max(gaps) * 1000:.0f} ms between WATCHDOG=1 pings exceeds WATCHDOG_USEC")
    log(f"{len(pings)} WATCHDOG=1, largest gap {max(gaps) * 1000:.0f} ms")
    status = notes.since(t0, "STATUS=")
    if len(status) < 2:
        fail(f"{len(status)} STATUS= lines in the 2.5 s after READY=1, expected one a second")
    log(f"STATUS: {status[-1][1]}")
    if "pkt/s" not in status[-1][1]:
        fail(f"STATUS= without rates: {status[-1][1]}")

    proc.send_signal(signal.SIGHUP)
    reloading = notes.wait_for("RELOADING=1", 10, proc, after=ready[0])
    if reloading is None:
        fail("no RELOADING=1 after SIGHUP")
    if notes.wait_for("READY=1", 10, proc, after=reloading[0]) is None:
        fail("no READY=1 after the reload")
    log("SIGHUP: RELOADING=1, READY=1")

    proc.send_signal(signal.SIGTERM)
    if notes.wait_for("STOPPING=1", 20, proc) is None:
        fail("no STOPPING=1 after SIGTERM")
    try:
        rc = proc.wait(20)
    except subprocess.TimeoutExpired:
        fail("linecapd still running 20 s after SIGTERM")
    if rc != 0:
        fail(f"linecapd exited {rc} after SIGTERM, expected 0")
    log("SIGTERM: STOPPING=1, exit 0")


class StallingFifo:
    """A FIFO that net_pcap opens as its rx file: the test writes the pcap file header (EAL's
    probe reads it) and keeps the FIFO open, so every read after it blocks: the worker
    stalls in its first rte_eth_rx_burst. release() closes it: read(2) returns end of file,
    net_pcap returns no packets from then on, and the worker polls normally."""

    def __init__(self, path):
        self.path = path
        os.mkfifo(path)
        self.fd = None
        self.opened = threading.Event()
        # open(2) for writing blocks until the reader (EAL probing net_pcap) opens it.
        threading.Thread(target=self._open, daemon=True).start()

    def _open(self):
        self.fd = os.open(self.path, os.O_WRONLY)
        os.write(self.fd, struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        self.opened.set()

    def release(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        elif not self.opened.is_set():
            # Unblock our own open(2) if linecapd never opened the FIFO.
            try:
                os.close(os.open(self.path, os.O_RDONLY | os.O_NONBLOCK))
            except OSError:
                pass


def stall(proc, notes, fifo):
    ready = notes.wait_for("READY=1", 60, proc)
    if ready is None:
        fail(f"no READY=1 within 60 s (daemon exit status: {proc.poll()})")
    # The worker is blocked in the FIFO's read(2) from its first poll on.
    notes.poll(STALL_FOR_S)
    if proc.poll() is not None:
        fail(f"linecapd exited ({proc.poll()}) during the stall")
    stalled_pings = notes.since(ready[0], "WATCHDOG=1")
    if stalled_pings:
        fail(f"{len(stalled_pings)} WATCHDOG=1 while the worker was blocked: the watchdog was fed for a "
             "stalled worker")
    released = time.monotonic()
    fifo.release()
    notes.poll(2.5)
    if proc.poll() is not None:
        fail(f"linecapd exited ({proc.poll()}) after the stall")
    # ... while the control loop itself kept going ...
    status = [m for m in notes.messages if ready[0] < m[0] < released and m[1].startswith("STATUS=")]
    if not status:
        fail("no STATUS= while the watchdog was quiet: the control loop stopped, not just the worker")
    # ... and is fed again once the worker is back, without long pauses.
    pings = notes.since(released, "WATCHDOG=1")
    if len(pings) < 5:
        fail(f"only {len(pings)} WATCHDOG=1 in the 2.5 s after the stall ended")
    gaps = [b[0] - a[0] for a, b in zip(pings, pings[1:])]
    if gaps and max(gaps) > WATCHDOG_USEC / 1e6:
        at = ", ".join(f"{m[0] - released:.2f}" for m in pings)
        fail(f"a long pause ({max(gaps):.2f} s) between pings after the stall (sent at +{at} s)")
    log(f"watchdog quiet for the {STALL_FOR_S} s stall ({len(status)} STATUS= meanwhile), then "
        f"{len(pings)} pings in 2.5 s")

if __name__ == "__main__":
    main()
