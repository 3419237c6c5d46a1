#!/usr/bin/env python3
"""The systemd notify protocol, spoken by a running linecapd (net_null port, no hugepages,
lcores 0-1): this test plays systemd - it binds the NOTIFY_SOCKET datagram socket and sets
WATCHDOG_USEC=200000 - and checks what arrives.

  basic  READY=1 once capture runs; WATCHDOG=1 about every 100 ms; STATUS= lines once a
         second; SIGHUP -> RELOADING=1 then READY=1; SIGTERM -> STOPPING=1 and exit 0.
  stall  worker 0 stalls for 3 s, 2 s after start (the daemon's test hook
         LINECAP_TEST_STALL_WORKER=AFTER_S:FOR_S): WATCHDOG=1 stops for the stall while
         STATUS= goes on, the log says which worker, and the pings resume afterwards.
         Skipped (77) when the daemon has no such hook.

Exit 0 = pass, 1 = fail, 77 = skipped (with the reason printed).
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

STALL_HOOK = "LINECAP_TEST_STALL_WORKER"
STALL_AFTER_S, STALL_FOR_S = 2.0, 3.0
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
    device: net_null0
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


class Notifications:
    """The NOTIFY_SOCKET end: every datagram with its arrival time."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
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
                data = self.sock.recv(4096)
            except socket.timeout:
                return
            now = time.monotonic()
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
    if mode == "stall":
        with open(linecapd, "rb") as f:
            if STALL_HOOK.encode() not in f.read():
                skip(f"linecapd has no worker-stall test hook (environment variable "
                     f"{STALL_HOOK}=AFTER_S:FOR_S: stall worker 0 once)")

    with tempfile.TemporaryDirectory(prefix="lc-notify.") as tmp:
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        cfg = os.path.join(tmp, "linecap.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(out=out))
        sock_path = os.path.join(tmp, "notify.sock")
        notes = Notifications(sock_path)
        env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC=str(WATCHDOG_USEC))
        env.pop("WATCHDOG_PID", None)
        if mode == "stall":
            env[STALL_HOOK] = f"{STALL_AFTER_S}:{STALL_FOR_S}"
        logf = open(os.path.join(tmp, "linecapd.log"), "w+")
        proc = subprocess.Popen([linecapd, "--config", cfg], env=env, stdout=logf, stderr=subprocess.STDOUT)
        ok = False
        try:
            if mode == "basic":
                basic(proc, notes)
            else:
                stall(proc, notes)
            ok = True
        finally:
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


def stall(proc, notes):
    ready = notes.wait_for("READY=1", 60, proc)
    if ready is None:
        fail(f"no READY=1 within 60 s (daemon exit status: {proc.poll()})")
    # The stall starts STALL_AFTER_S after the control loop starts (about READY=1) and
    # lasts STALL_FOR_S; watch until well after it.
    notes.poll(STALL_AFTER_S + STALL_FOR_S + 2.5)
    if proc.poll() is not None:
        fail(f"linecapd exited ({proc.poll()}) during the stall")
    pings = notes.since(ready[0], "WATCHDOG=1")
    if len(pings) < 5:
        fail(f"only {len(pings)} WATCHDOG=1 in {STALL_AFTER_S + STALL_FOR_S + 2.5:.1f} s")
    gaps = [(b[0] - a[0], a[0], b[0]) for a, b in zip(pings, pings[1:])]
    gap, quiet_from, quiet_to = max(gaps)
    # The watchdog must go quiet for (most of) the stall: systemd would kill the daemon.
    if gap < STALL_FOR_S - 1.0:
        fail(f"the longest pause between WATCHDOG=1 pings is {gap:.2f} s, but worker 0 stalled for "
             f"{STALL_FOR_S} s: the watchdog was fed for a stalled worker")
    # ... while the control loop itself kept going ...
    status = [m for m in notes.messages if quiet_from < m[0] < quiet_to and m[1].startswith("STATUS=")]
    if not status:
        fail("no STATUS= while the watchdog was quiet: the control loop stopped, not just the worker")
    # ... and is fed again once the worker is back.
    if not any(m[0] > quiet_to for m in pings):
        fail("WATCHDOG=1 did not resume after the stall")
    others = sorted(g[0] for g in gaps)[-2] if len(gaps) > 1 else 0
    if others > WATCHDOG_USEC / 1e6:
        fail(f"a second long pause ({others:.2f} s) between pings outside the stall")
    log(f"watchdog quiet for {gap:.2f} s during the {STALL_FOR_S} s stall, {len(status)} STATUS= meanwhile, "
        "then resumed")


if __name__ == "__main__":
    main()
