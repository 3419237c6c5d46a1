#!/usr/bin/env bash
# A real Prometheus server (the Debian package's /usr/bin/prometheus) on loopback scrapes a
# live linecapd every second during a capture, with config/prometheus/linecap-rules.yml
# loaded. Once the capture has drained and Prometheus holds the final totals, PromQL over
# its HTTP API must show the accounting exactly:
#   sum(linecap_port_received_packets_total) == tcpreplay's sent count
#   sum(received) - (sum(written) + sum(filtered) + sum(dropped)) == 0
# and the recording rules evaluate: no drops, so the drop ratios read 0 (per port and per
# reason), the in-flight rule reads 0, the received rate is positive, every rule is healthy
# and no drop alert is pending or firing.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/metrics/integration/lib.sh"
# shellcheck disable=SC2034  # used by common.sh (log lines, temp dir names)
TEST_NAME=prometheus
need_root
need_cmd tcpreplay python3 ip promtool editcap
PROMETHEUS=${PROMETHEUS:-/usr/bin/prometheus}
[[ -x $PROMETHEUS ]] || skip "needs the Prometheus server ($PROMETHEUS; Debian package 'prometheus')"
need_hugepages 256
need_bpffs
need_linecapd
RULES="$LINECAP_SRC/config/prometheus/linecap-rules.yml"
[[ -r $RULES ]] || fail "cannot read $RULES"
make_tmpdir
show_on_failure "$TEST_TMPDIR/tcpreplay.log" "$TEST_TMPDIR/prometheus.log"
veth_pair prom
mkdir "$TEST_TMPDIR/out"

gen_pcap --count 4000 --mix --seed 41 --flows 200 --both-directions --out "$TEST_TMPDIR/sent.pcap"
loops=2
rate=${LINECAP_LIVE_PPS:-10000}
afxdp_config "$TEST_TMPDIR/linecap.yaml" "$TEST_TMPDIR/out" output.rotate.size_mb=64 output.rotate.interval_s=0

# --- Prometheus ------------------------------------------------------------------------
prom_port=$(free_tcp_port)
PROM="http://127.0.0.1:$prom_port"
cat >"$TEST_TMPDIR/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - "$RULES"
scrape_configs:
  - job_name: linecap          # the rules' alerts assume job="linecap"
    static_configs:
      - targets: ["$METRICS_LISTEN"]
YAML
promtool check config "$TEST_TMPDIR/prometheus.yml" >"$TEST_TMPDIR/promtool.log" 2>&1 \
    || fail "promtool rejects the test's Prometheus config: $(cat "$TEST_TMPDIR/promtool.log")"
"$PROMETHEUS" --config.file="$TEST_TMPDIR/prometheus.yml" \
    --storage.tsdb.path="$TEST_TMPDIR/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" \
    --log.level=info >"$TEST_TMPDIR/prometheus.log" 2>&1 &
prom_pid=$!
on_exit "kill $prom_pid 2>/dev/null; wait $prom_pid 2>/dev/null || true"
_lc_reaper_add "kill $prom_pid"
wait_for "http_get $PROM/-/ready 10" 120 || fail "Prometheus did not become ready"
log "Prometheus $("$PROMETHEUS" --version 2>&1 | head -n 1 | awk '{ print $3 }') ready on $PROM (pid $prom_pid)"
promql() { accounting promql "$PROM" "$@"; }

# --- capture while Prometheus scrapes ----------------------------------------------------
start_capture "$TEST_TMPDIR/linecap.yaml"
wait_for "accounting promql '$PROM' 'up{job=\"linecap\"}' --expect 1 --quiet" 120 \
    || fail "Prometheus does not scrape linecapd: $(accounting promql "$PROM" 'up' || true)"

# No drop by construction (see replay_paced): chunks the AF_XDP fill ring and the write
# blocks can hold, the next one only once linecapd has written the previous one.
scrape_during() {
    scrape_to "$TEST_TMPDIR/scrape.during"
    accounting in-flight "$TEST_TMPDIR/scrape.during" >/dev/null || fail "in-flight < 0 during the capture"
    if [[ -n ${LINECAP_SCRAPE_SAVE:-} ]]; then cp "$TEST_TMPDIR/scrape.during" "$LINECAP_SCRAPE_SAVE"; fi
}
kernel_counters "$TEST_TMPDIR/kernel.before"
replay_paced "$TEST_TMPDIR/sent.pcap" 1000 "$rate" accounted "$loops" scrape_during
expected=$(($(pcap_compare count -q "$TEST_TMPDIR/sent.pcap") * loops))
((SENT == expected)) || fail "tcpreplay sent $SENT of $expected packets"
log "tcpreplay sent $SENT packets at $rate pps"

accounting wait-drained "http://$METRICS_LISTEN/metrics" --out "$TEST_TMPDIR/scrape.final" --timeout 120 \
    || fail "the daemon did not drain"
kernel_counters "$TEST_TMPDIR/kernel.after"
written=$(accounting value "$TEST_TMPDIR/scrape.final" linecap_written_packets_total)
received=$(accounting value "$TEST_TMPDIR/scrape.final" linecap_port_received_packets_total)

# Prometheus has the final totals once its latest samples equal the daemon's own.
wait_for "promql 'sum(linecap_written_packets_total{job=\"linecap\"})' --expect $written --quiet \
       && promql 'sum(linecap_port_received_packets_total{job=\"linecap\"})' --expect $received --quiet" 120 \
    || fail "Prometheus never scraped the final totals (written $written, received $received): $(promql 'sum(linecap_written_packets_total)' || true)"

# ... and the rules have been evaluated on them (in-flight is a rule over the same samples).
wait_for "promql 'port:linecap_packets_in_flight:current{job=\"linecap\",port=\"p0\"}' --expect 0 --quiet" 120 \
    || fail "recording rule port:linecap_packets_in_flight:current is not 0: $(promql 'port:linecap_packets_in_flight:current' || true)"
min_rules=$(grep -cE '^[[:space:]]*- (record|alert):' "$RULES")
wait_for "accounting rules-healthy '$PROM' --min-rules $min_rules --quiet" 120 \
    || fail "not every rule evaluates: $(accounting rules-healthy "$PROM" || true)"

checks=(
    # expression                                                                    expected
    "sum(linecap_port_received_packets_total{job=\"linecap\"})"                     "$SENT"
    "sum(linecap_written_packets_total{job=\"linecap\"}) + sum(linecap_filtered_packets_total{job=\"linecap\"}) + sum(linecap_dropped_packets_total{job=\"linecap\"})" "$SENT"
    "sum(linecap_port_received_packets_total{job=\"linecap\"}) - (sum(linecap_written_packets_total{job=\"linecap\"}) + sum(linecap_filtered_packets_total{job=\"linecap\"}) + sum(linecap_dropped_packets_total{job=\"linecap\"}))" 0
    "sum(linecap_dropped_packets_total{job=\"linecap\"})"                           0
    "port:linecap_drop_ratio:rate5m{job=\"linecap\",port=\"p0\"}"                   0
    "max(port_reason:linecap_drop_ratio:rate5m{job=\"linecap\",port=\"p0\"})"       0
    # one per drop reason: writer_full write_error disk_full nic_missed nic_error no_mbuf
    # xsk_fill_empty xsk_ring_full
    "count(port_reason:linecap_drop_ratio:rate5m{job=\"linecap\",port=\"p0\"})"     8
    "port:linecap_packets_in_flight:current{job=\"linecap\",port=\"p0\"}"          0
    "count(port:linecap_received_packets:rate5m{job=\"linecap\",port=\"p0\"} > 0)"  1
)
for ((i = 0; i < ${#checks[@]}; i += 2)); do
    promql "${checks[i]}" --expect "${checks[i + 1]}" || fail "PromQL: ${checks[i]} is not ${checks[i + 1]}"
done
for alert in LinecapPacketsDropped LinecapDropRatioHigh; do
    promql "ALERTS{alertname=\"$alert\"}" --expect-empty --quiet || fail "alert $alert is pending or firing without a drop"
done

stop_linecapd 30 || fail "linecapd exited $LINECAPD_RC"
accounting check --scrape "$TEST_TMPDIR/scrape.final" --log "$LINECAPD_LOG" --out-dir "$TEST_TMPDIR/out" \
    --sent "$SENT" --kernel-before "$TEST_TMPDIR/kernel.before" --kernel-after "$TEST_TMPDIR/kernel.after" \
    --xdp-drops-visible >"$TEST_TMPDIR/check.log" || { cat "$TEST_TMPDIR/check.log"; fail "drop accounting is not exact"; }
log "OK: Prometheus agrees with linecapd and tcpreplay: $SENT packets reached the port, $written written, none dropped"
