#!/usr/bin/env bash
# Self-test of tests/lib/common.sh's daemon and polling helpers against a stand-in daemon
# (a small python HTTP server that takes --config and answers /metrics): write_config,
# start_linecapd, wait_for_linecapd, http_get, metric_sum, stop_linecapd (exit status,
# SIGKILL after the timeout), a daemon that dies at start, wait_for's bound.
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

need_cmd python3
make_tmpdir
cd "$TEST_TMPDIR" || fail "cd $TEST_TMPDIR"

# wait_for: true at once, false until the bound, fractional timeouts.
wait_for true 1 || fail "wait_for true"
t0=$(_lc_now_us)
if wait_for false 0.5 2>/dev/null; then fail "wait_for false succeeded"; fi
dt=$((($(_lc_now_us) - t0) / 1000))
((dt >= 500 && dt < 2000)) || fail "wait_for false 0.5 took $dt ms"
touch later.flag.src
(sleep 0.3 && mv later.flag.src later.flag) &
wait_for "[[ -e later.flag ]]" 5 || fail "wait_for missed a condition that became true"
wait

cat >fake-linecapd <<'EOF'
#!/usr/bin/env python3
# Stand-in for linecapd: --config FILE, metrics on the config's metrics.listen.
# FAKE_MODE: ok (exit FAKE_EXIT on SIGTERM), stubborn (ignores SIGTERM), die (exit 78 at once)
import http.server, os, re, signal, sys, threading
cfg = sys.argv[sys.argv.index("--config") + 1]
mode = os.environ.get("FAKE_MODE", "ok")
if mode == "die":
    print(f"{cfg}:1: bad config (deliberately)", file=sys.stderr)
    sys.exit(78)
host, port = re.search(r'listen:\s*"?([0-9.]+):([0-9]+)', open(cfg).read()).groups()
METRICS = b"""# HELP linecap_rx_packets_total packets
# TYPE linecap_rx_packets_total counter
linecap_rx_packets_total{port="p0",queue="0"} 5
linecap_rx_packets_total{port="p0",queue="1"} 7
linecap_rx_packets_total{port="p1",queue="0"} 100
linecap_dropped_packets_total{port="p0",reason="writer_full"} 0
linecap_dropped_packets_total{port="p0",reason="filter \\"x\\""} 2.5
"""
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/metrics" else 404)
        self.end_headers()
        self.wfile.write(METRICS)
    def log_message(self, *a):
        pass
srv = http.server.ThreadingHTTPServer((host, int(port)), H)
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
else:
    signal.signal(signal.SIGTERM, lambda *a: threading.Thread(target=srv.shutdown).start())
print(f"fake linecapd on {host}:{port}", flush=True)
srv.serve_forever()
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
EOF
chmod +x fake-linecapd
LINECAPD=$TEST_TMPDIR/fake-linecapd

write_config cfg.yaml "net_null0" "$TEST_TMPDIR/out"
grep -q 'device: "net_null0"' cfg.yaml && grep -q "listen: \"$METRICS_LISTEN\"" cfg.yaml \
    || { cat cfg.yaml >&2; fail "write_config"; }
URL="http://$METRICS_LISTEN/metrics"

export FAKE_MODE=ok FAKE_EXIT=0
start_linecapd cfg.yaml
wait_for_linecapd "http_get $URL" 10
[[ $(metric_sum "$URL" linecap_rx_packets_total) == 112 ]] || fail "metric_sum: all samples"
[[ $(metric_sum "$URL" linecap_rx_packets_total port=p0) == 12 ]] || fail "metric_sum: port=p0"
[[ $(metric_sum "$URL" linecap_rx_packets_total port=p0 queue=1) == 7 ]] || fail "metric_sum: two labels"
[[ $(metric_sum "$URL" linecap_dropped_packets_total) == 2.5 ]] || fail "metric_sum: fractional, escaped label"
[[ $(metric_sum "$URL" linecap_nonexistent_total) == 0 ]] || fail "metric_sum: absent metric"
linecapd_running || fail "linecapd_running"
rc=0
stop_linecapd 10 || rc=$?
[[ $rc == 0 && $LINECAPD_RC == 0 ]] || fail "stop_linecapd: status $rc"
linecapd_running && fail "still running after stop_linecapd"

export FAKE_EXIT=3
start_linecapd cfg.yaml
wait_for_linecapd "http_get $URL" 10
rc=0
stop_linecapd 10 || rc=$?
[[ $rc == 3 ]] || fail "stop_linecapd should return the daemon's status 3, got $rc"

export FAKE_MODE=stubborn
start_linecapd cfg.yaml
wait_for_linecapd "http_get $URL" 10
rc=0
stop_linecapd 1 || rc=$?
[[ $rc == 137 ]] || fail "stop_linecapd on a daemon ignoring SIGTERM: status $rc, expected 137"

# A daemon that dies at start: wait_for_linecapd fails at once, not after its timeout.
cat >child.sh <<EOF
source "\$LINECAP_SRC/tests/lib/common.sh"
LINECAPD='$LINECAPD'
METRICS_LISTEN='$METRICS_LISTEN'
export FAKE_MODE=die
start_linecapd '$TEST_TMPDIR/cfg.yaml'
wait_for_linecapd "http_get $URL" 30
EOF
t0=$(_lc_now_us)
rc=0
bash child.sh >child.log 2>&1 || rc=$?
dt=$((($(_lc_now_us) - t0) / 1000))
[[ $rc == 1 ]] || { cat child.log >&2; fail "dying daemon: child exit $rc, expected 1"; }
((dt < 10000)) || fail "dying daemon noticed only after $dt ms"
grep -q 'exited (status 78)' child.log || { cat child.log >&2; fail "no exit status in message"; }
grep -q 'bad config (deliberately)' child.log || { cat child.log >&2; fail "daemon log not shown on failure"; }

log "all checks passed"
