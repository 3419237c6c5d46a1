#!/usr/bin/env bash
# Every metric name the Grafana dashboard (config/grafana/linecap.json) and the Prometheus
# rules (config/prometheus/linecap-rules.yml) use exists in a LIVE daemon's /metrics, taken
# during a capture (recording-rule outputs, with colons, must be rules of the rules file).
# The unit-level twin, tests/metrics/check_metric_names.py --exporter, checks the exporter
# alone; this one also catches names that only another part of the daemon would register
# (its EXPORTED_ELSEWHERE list). The live scrape must also pass `promtool check metrics`.
#
#   live_names_test.sh [--known-missing NAME]...   names known not to be exported yet are
#                                                  reported, not failed (see meson.build)
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/metrics/integration/lib.sh"
# shellcheck disable=SC2034  # used by common.sh (log lines, temp dir names)
TEST_NAME=live-names
need_root
need_cmd tcpreplay python3 ip promtool
python3 -c 'import yaml' 2>/dev/null || skip "python3 has no yaml module (Debian: python3-yaml)"
need_hugepages 256
need_bpffs
need_linecapd
make_tmpdir
show_on_failure "$TEST_TMPDIR/tcpreplay.log"
veth_pair names
mkdir "$TEST_TMPDIR/out"

# Retention and the archive are configured so that whatever the daemon exports only when
# they are on is there (the archive's store is unreachable: its metrics say so).
afxdp_config "$TEST_TMPDIR/linecap.yaml" "$TEST_TMPDIR/out" output.rotate.size_mb=64 output.rotate.interval_s=0 \
    output.retention.max_age=14d output.archive.url=s3://linecap-names/live output.archive.endpoint=http://127.0.0.1:1
export AWS_ACCESS_KEY_ID=linecap-names AWS_SECRET_ACCESS_KEY=linecap-names
gen_pcap --count 2000 --mix --seed 51 --flows 100 --out "$TEST_TMPDIR/sent.pcap"
start_capture "$TEST_TMPDIR/linecap.yaml"

# A capture in progress: the write-latency histogram and the per-queue series have data.
replay_bg "$TEST_TMPDIR/sent.pcap" 10000
wait_for "(( \$(metric_sum http://$METRICS_LISTEN/metrics linecap_written_packets_total) > 0 ))" 60 \
    || fail "nothing written while traffic flows"
scrape_to "$TEST_TMPDIR/scrape.txt"
replay_wait

promtool check metrics <"$TEST_TMPDIR/scrape.txt" >"$TEST_TMPDIR/promtool.log" 2>&1 \
    || fail "promtool check metrics rejects the live /metrics: $(cat "$TEST_TMPDIR/promtool.log")"
python3 "$LINECAP_SRC/tests/metrics/check_metric_names.py" --scrape "$TEST_TMPDIR/scrape.txt" \
    --rules "$LINECAP_SRC/config/prometheus/linecap-rules.yml" \
    --dashboard "$LINECAP_SRC/config/grafana/linecap.json" "$@" \
    || fail "the dashboard or the rules use names the live daemon does not export"
stop_linecapd 30 || fail "linecapd exited $LINECAPD_RC"
log "OK: $(grep -c '^# TYPE linecap_' "$TEST_TMPDIR/scrape.txt") linecap_ families in the live /metrics cover the dashboard and the rules"
