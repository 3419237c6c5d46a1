"""Starting linecapd (or any program a test or benchmark runs beside it), waiting until it
is ready by the signal it gives, stopping it and collecting its exit status and log."""

import os
import signal
import subprocess
import time

from . import prometheus

READY_LINE = "capture running"  # logged once every worker polls its queues


class Process:
    """A child in its own session (so stop() ends its whole process group), its stdout and
    stderr in a log file."""

    def __init__(self, argv, log_path, env=None):
        self.argv = list(argv)
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.p = subprocess.Popen(self.argv, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True, stdin=subprocess.DEVNULL)
        self.pid = self.p.pid

    def alive(self):
        return self.p.poll() is None

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Send SIG to the group, SIGKILL after TIMEOUT s; the exit status (-N: killed by N)."""
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()
        self._log.close()
        return self.p.returncode


def wait_until(cond, timeout, what, proc=None, interval=0.1):
    """Poll COND until true; RuntimeError after TIMEOUT s, or at once when PROC exits."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        if proc is not None and not proc.alive():
            raise RuntimeError(f"{what}: process exited: {proc.text()[-2000:]}")
        time.sleep(interval)
    raise RuntimeError(f"{what}: not after {timeout}s")


class Linecapd(Process):
    """linecapd --config CONFIG [ARGS] (PREFIX, e.g. ["nice", "-n", "-5"], goes before it)."""

    def __init__(self, binary, config, log_path, args=(), prefix=(), env=None):
        super().__init__(list(prefix) + [binary, "--config", config] + list(args), log_path, env)

    def wait_ready(self, metrics_url=None, timeout=60, what="linecapd"):
        """Until the capture runs (its log line) and, given METRICS_URL, /metrics is served."""
        wait_until(lambda: READY_LINE in self.text(), timeout, f"{what} start", self)
        if metrics_url:
            wait_until(lambda: prometheus.reachable(metrics_url), 30, f"{what} metrics", self)
