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

  python3 bench/api/hostile.py [--linecap build/src/linecap] [--idle 1000] [--slow 200]
                               [--queries 20]
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from linecap_harness.raw_http import read_to_close, tls_connect  # noqa: E402


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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--linecap", default=os.path.join(ROOT, "build/src/linecap"))
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--slow", type=int, default=200)
    ap.add_argument("--queries", type=int, default=20)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="linecap-hostile-bench.") as d:
        t0 = 1796004600000000000
        streams = [f"p0:{q}:{q + 1}:{t0 + q * 250}:1000:4000" for q in range(4)]
        run([sys.executable, f"{ROOT}/tests/store/make_store.py", "--out", f"{d}/store", "--per-file", "1500",
             "--gen-arg=--mix", "--gen-arg=--both-directions"] + sum((["--stream", s] for s in streams), []))
        run([a.linecap, "index", "--dir", f"{d}/store"])
        pki(d)
        token = "bench-" + os.urandom(16).hex()
        with open(f"{d}/tokens", "w") as f:
            f.write(f"bench {token}\n")
        os.chmod(f"{d}/tokens", 0o600)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
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
        serve = subprocess.Popen([a.linecap, "serve", "--config", f"{d}/api.yaml"], stderr=subprocess.PIPE, text=True)
        try:
            if "listening on" not in serve.stderr.readline():
                sys.exit("serve did not start")
            rows = []

            def phase(name, conns):
                rss, threads, fds = proc_figures(serve.pid)
                t = queries(port, f"{d}/ca.pem", token, a.queries)
                rows.append((name, conns, rss, threads, fds, statistics.median(t), max(t)))

            queries(port, f"{d}/ca.pem", token, 3)  # warm the page cache and the index
            phase("quiet", 0)
            idle = []
            for _ in range(a.idle):
                idle.append(tls_connect(port, f"{d}/ca.pem"))
            time.sleep(1)
            phase("idle (TLS done, nothing sent)", len(idle))
            for s in idle:
                s.close()
            idle.clear()
            slow = []
            for _ in range(a.slow):
                s = tls_connect(port, f"{d}/ca.pem")
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
                phase("slowloris (1 byte/s)", len(slow))
            finally:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            for s in slow:
                s.close()
            time.sleep(1)
            phase("quiet again", 0)
        finally:
            serve.terminate()
            serve.wait(30)
    print(f"{'phase':32} {'conns':>6} {'RSS MiB':>8} {'threads':>7} {'fds':>6} {'median s':>9} {'max s':>7}")
    for name, conns, rss, threads, fds, med, mx in rows:
        print(f"{name:32} {conns:6} {rss / 1024:8.1f} {threads:7} {fds:6} {med:9.4f} {mx:7.4f}")


if __name__ == "__main__":
    main()
