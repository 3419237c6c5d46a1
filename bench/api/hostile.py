#!/usr/bin/env python3
"""What hostile clients cost `linecap serve` (doc/perf/api-hostile.md), in one run:

  quiet      no other client
  idle       IDLE connections that finished the TLS handshake and send nothing
  slowloris  SLOW connections sending a request head one byte a second (never ending
             it within the run: header_timeout is set above the run's length)
  quiet      again, after both are closed

For each phase: serve's RSS and thread count (from /proc), and the latency of QUERIES
sequential authenticated /api/v1/size queries (median, max). A small synthetic store
(tests/store/make_store.py), TLS with a test PKI (openssl CLI), a bearer token.

With --against BASELINE (another build's linecap, e.g. from bench/baseline.sh), the phases
run ROUNDS times with each binary, alternated (A B A B ...) over the same store, so that a
shared machine's load falls on both alike; the report gives per phase each side's median
over the rounds, its spread (min-max) and the ratio this build / baseline.

  python3 bench/api/hostile.py [--linecap build/src/linecap] [--idle 1000] [--slow 200]
                               [--queries 20] [--against BASELINE --rounds 3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from linecap_harness.raw_http import read_to_close, tls_connect  # noqa: E402
from harness import free_port  # noqa: E402
from machine import machine_conditions  # noqa: E402

PHASES = ["quiet", "idle (TLS done, nothing sent)", "slowloris (1 byte/s)", "quiet again"]


def run(cmd, **kw):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


def pki(d):
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
         "-subj", "/CN=bench CA", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem"])
    run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
         "-keyout", f"{d}/server.key", "-out", f"{d}/server.csr"])
    with open(f"{d}/san", "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    run(["openssl", "x509", "-req", "-in", f"{d}/server.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
         "-CAcreateserial", "-days", "2", "-extfile", f"{d}/san", "-out", f"{d}/server.pem"])


def proc_figures(pid):
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd"))


def queries(port, cafile, token, n):
    times = []
    for _ in range(n):
        t0 = time.monotonic()
        s = tls_connect(port, cafile)
        s.settimeout(30)
        s.sendall(f"GET /api/v1/size?filter=tcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                  "Connection: close\r\n\r\n".encode())
        got = read_to_close(s)
        s.close()
        if not got.startswith(b"HTTP/1.1 200"):
            sys.exit(f"query failed: {got[:100]!r}")
        times.append(time.monotonic() - t0)
    return times


def prepare(d, linecap, a):
    """The store, the PKI, the token and serve's configuration, shared by every run."""
    t0 = 1796004600000000000
    streams = [f"p0:{q}:{q + 1}:{t0 + q * 250}:1000:4000" for q in range(4)]
    run([sys.executable, f"{ROOT}/tests/store/make_store.py", "--out", f"{d}/store", "--per-file", "1500",
         "--gen-arg=--mix", "--gen-arg=--both-directions"] + sum((["--stream", s] for s in streams), []))
    run([linecap, "index", "--dir", f"{d}/store"])
    pki(d)
    token = "bench-" + os.urandom(16).hex()
    with open(f"{d}/tokens", "w") as f:
        f.write(f"bench {token}\n")
    os.chmod(f"{d}/tokens", 0o600)
    port = free_port()
    with open(f"{d}/api.yaml", "w") as f:
        f.write(f"""ports:
  - name: p0
    device: "net_null0"
output:
  directory: "{d}/store"
metrics:
  listen: "127.0.0.1:1"
api:
  listen: "127.0.0.1:{port}"
  audit_log: "{d}/audit.log"
  tls_cert: "{d}/server.pem"
  tls_key: "{d}/server.key"
  tokens_file: "{d}/tokens"
  header_timeout: 10m
  max_connections: {a.idle + a.slow + 100}
  max_connections_per_client: {a.idle + a.slow + 100}
""")
    return port, token


def measure(linecap, d, port, token, a):
    """One `linecap serve` through the four phases: {phase: (conns, rss KiB, threads, fds, median s, max s)}."""
    cafile = f"{d}/ca.pem"
    serve = subprocess.Popen([linecap, "serve", "--config", f"{d}/api.yaml"], stderr=subprocess.PIPE, text=True)
    rows = {}
    try:
        if "listening on" not in serve.stderr.readline():
            sys.exit(f"{linecap} serve did not start")

        def phase(name, conns):
            rss, threads, fds = proc_figures(serve.pid)
            t = queries(port, cafile, token, a.queries)
            rows[name] = (conns, rss, threads, fds, statistics.median(t), max(t))

        queries(port, cafile, token, 3)  # warm the page cache and the index
        phase(PHASES[0], 0)
        idle = [tls_connect(port, cafile) for _ in range(a.idle)]
        time.sleep(1)  # a settling pause before reading /proc, not a synchronisation
        phase(PHASES[1], len(idle))
        for s in idle:
            s.close()
        slow = []
        for _ in range(a.slow):
            s = tls_connect(port, cafile)
            s.sendall(b"GET /api/v1/size HTTP/1.1\r\nHost: x\r\n")
            slow.append(s)
        # One byte a second on each while the queries run, from a child process.
        pid = os.fork()
        if pid == 0:
            while True:
                for s in slow:
                    try:
                        s.send(b"X")
                    except OSError:
                        pass
                time.sleep(1)
        try:
            time.sleep(1)
            phase(PHASES[2], len(slow))
        finally:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        for s in slow:
            s.close()
        time.sleep(1)
        phase(PHASES[3], 0)
    finally:
        serve.terminate()
        serve.wait(30)
    return rows


def report_one(rows):
    print(f"{'phase':32} {'conns':>6} {'RSS MiB':>8} {'threads':>7} {'fds':>6} {'median s':>9} {'max s':>7}")
    for name in PHASES:
        conns, rss, threads, fds, med, mx = rows[name]
        print(f"{name:32} {conns:6} {rss / 1024:8.1f} {threads:7} {fds:6} {med:9.4f} {mx:7.4f}")


def report_ab(sides):
    """sides: [(label, [rows per round])], this build first, then the baseline: per phase and
    figure, each side's median (min-max) over the rounds and the ratio this / baseline."""
    (this_label, this_runs), (base_label, base_runs) = sides
    figures = ((1, "RSS MiB", 1 / 1024, ".1f"), (4, "query median s", 1, ".4f"), (5, "query max s", 1, ".4f"))
    print(f"{'phase':32} {'figure':14} {base_label + ' median (min-max)':>30} {this_label + ' median (min-max)':>30} "
          f"{'ratio':>6}")
    for name in PHASES:
        for col, label, scale, fmt in figures:
            cells, medians = [], []
            for runs in (base_runs, this_runs):
                vals = [r[name][col] * scale for r in runs]
                medians.append(statistics.median(vals))
                cells.append(f"{medians[-1]:{fmt}} ({min(vals):{fmt}}-{max(vals):{fmt}})")
            ratio = medians[1] / medians[0] if medians[0] else float("nan")
            print(f"{name:32} {label:14} {cells[0]:>30} {cells[1]:>30} {ratio:6.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--linecap", default=os.path.join(ROOT, "build/src/linecap"))
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--slow", type=int, default=200)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--against", metavar="BASELINE", help="another build's linecap, alternated with --linecap")
    ap.add_argument("--rounds", type=int, default=3, help="runs per binary with --against (default 3)")
    a = ap.parse_args()
    for b in [a.linecap] + ([a.against] if a.against else []):
        if not os.access(b, os.X_OK):
            sys.exit(f"hostile.py: {b} is not executable")
    with tempfile.TemporaryDirectory(prefix="linecap-hostile-bench.") as d:
        port, token = prepare(d, a.linecap, a)
        if not a.against:
            report_one(measure(a.linecap, d, port, token, a))
            return
        sides = [("this", a.linecap, []), ("baseline", a.against, [])]
        for rnd in range(a.rounds):
            for label, binary, runs in sides:
                load = os.getloadavg()[0]
                print(f"round {rnd + 1}/{a.rounds}: {label} ({binary}), load {load:.1f}", file=sys.stderr, flush=True)
                runs.append(measure(binary, d, port, token, a))
        c = machine_conditions()
        print(f"{c['date']}, {c['cpu_model']}, {c['cpus']} CPUs, linecap {c['linecap']}; load {os.getloadavg()[0]:.1f} "
              f"at the end; {a.rounds} rounds alternated, {a.idle} idle, {a.slow} slowloris, {a.queries} queries a phase")
        report_ab([(label, runs) for label, _, runs in sides])


if __name__ == "__main__":
    main()
