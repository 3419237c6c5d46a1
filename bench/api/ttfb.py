#!/usr/bin/env python3
"""ttfb.py OUT CMD...: runs CMD with its stdout into a pipe, copies what comes out to OUT,
and prints "ttfb_s total_s bytes": seconds from the start to the first byte on stdout and to
the end of the output. Every retrieval path is timed through it, so all are measured the
same way (a tool that buffers its output shows it in its time to first byte)."""
import os
import signal
import subprocess
import sys
import time

out, cmd = sys.argv[1], sys.argv[2:]
t0 = time.monotonic()
err = open(out + ".stderr", "wb")  # what the program said, shown when it fails
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, bufsize=0)


def stop(signum, _frame):  # a time limit (timeout -s TERM): the measured program goes too
    p.kill()
    p.wait()
    sys.exit(128 + signum)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
first = None
n = 0
with open(out, "wb") as f:
    while True:
        b = p.stdout.read(1 << 20)
        if not b:
            break
        if first is None:
            first = time.monotonic()
        n += len(b)
        f.write(b)
rc = p.wait()
t1 = time.monotonic()
if rc != 0:
    err.close()
    with open(out + ".stderr", errors="replace") as e:
        print(f"{' '.join(cmd)}: exit {rc}: {e.read()[-2000:]}", file=sys.stderr)
    sys.exit(1)
print(f"{(first or t1) - t0:.4f} {t1 - t0:.4f} {n}")
