#!/usr/bin/env bash
# linecap demo: live capture on this machine without a DPDK NIC.
#
#   sudo scripts/demo.sh [SECONDS]      (default 30)
#
# Installs what it needs (scripts/install-deps.sh run), builds linecapd and linecap,
# reserves hugepages, creates a network namespace with a veth pair, replays generated
# traffic into it with tcpreplay, and runs linecapd on the root-namespace end through
# net_af_xdp. While it runs it shows the Prometheus metrics;
# at the end the finished .pcap files and capinfos' view of them. Everything it set up is
# removed on exit; the capture files stay in /tmp/linecap-demo/ ($LINECAP_DEMO_DIR). Exit 0 when
# linecapd ran, stopped cleanly and finished at least one file. tests/infra/demo_bare_test.sh
# runs it from a bare machine (scripts/run-tests.sh, first).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-30}
[[ $(id -u) -eq 0 ]] || { echo "demo.sh: run as root (DPDK, hugepages, network namespaces)" >&2; exit 1; }

# The run profile: what the build and this demo use, nothing only the tests need. A new
# build directory builds the programs alone; one that exists (the tests') is used as it is.
bash scripts/install-deps.sh run
build=${LINECAP_BUILD_DIR:-build}
[[ -d $build ]] || meson setup "$build" -Dtests=false -Dbench=false >/dev/null
ninja -C "$build" src/linecapd src/linecap >/dev/null
export LINECAPD=${LINECAPD:-$PWD/$build/src/linecapd}

# The test library brings the namespace/veth/replay helpers and one cleanup trap.
TEST_NAME=demo
source tests/lib/common.sh
set +e +o pipefail   # a demo reports and goes on; the trap still cleans up

# Hugepages, hugetlbfs and bpffs: decided from the machine's state (hugepages.sh ready's exit
# status). What is missing is reserved with a private state directory, so the release at exit
# puts back exactly what this run found, whatever anyone else reserved before or meanwhile.
pages=512
if ! bash scripts/hugepages.sh ready "$pages"; then
    hp_state=$(mktemp -d /run/linecap-demo-hp.XXXXXX)
    on_exit "LINECAP_TEST_STATE_DIR='$hp_state' bash scripts/hugepages.sh release; rm -rf '$hp_state'"
    LINECAP_TEST_STATE_DIR=$hp_state bash scripts/hugepages.sh provide "$pages" \
        && bash scripts/hugepages.sh ready "$pages" \
        || { echo "demo.sh: could not prepare hugepages (see above)" >&2; exit 1; }
fi

out=${LINECAP_DEMO_DIR:-/tmp/linecap-demo}
mkdir -p "$out"
make_tmpdir
veth_pair demo
gen_pcap --count 20000 --mix --both-directions --flows 2000 --out "$TEST_TMPDIR/traffic.pcap"

port=9475
cat >"$TEST_TMPDIR/linecap.yaml" <<YAML
eal:
  lcores: "0-1"
ports:
  - name: demo
    # the documented net_af_xdp settings (doc/tuning.md, "Capturing from a Linux interface")
    device: "net_af_xdp0,iface=$CAP_IF,start_queue=0,queue_count=1,busy_budget=0"
    rx_descriptors: 4096
output:
  directory: "$out"
  rotate: { size_mb: 64, interval_s: 10 }
metrics:
  listen: "127.0.0.1:$port"
YAML
echo "==> linecapd capturing $CAP_IF (peer $PEER_IF in netns $NS) into $out for $seconds s"
start_linecapd "$TEST_TMPDIR/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 30 || { cat "$LINECAPD_LOG"; exit 1; }

# Traffic: the generated mix, looped at 20 kpps in the background for the whole run.
ip netns exec "$NS" timeout "$seconds" tcpreplay -q -i "$PEER_IF" --pps=20000 --loop=0 "$TEST_TMPDIR/traffic.pcap" \
    >/dev/null 2>&1 &
replay_pid=$!
on_exit "kill $replay_pid 2>/dev/null || true"
sleep "$((seconds / 2))"   # a demo, not a test: let it run
echo "==> metrics at http://127.0.0.1:$port/metrics (excerpt)"
curl -s "http://127.0.0.1:$port/metrics" 2>/dev/null | grep -E '^linecap_(rx|written|dropped)_packets_total' | head -20 \
    || echo "(metrics endpoint not available in this build)"
wait "$replay_pid" 2>/dev/null
rc=0
# As long as systemd waits for the unit (TimeoutStopSec): a stop drains the indexer first.
stop_linecapd 120 || rc=$?
grep -E 'reached the port|finalised' "$LINECAPD_LOG" | tail -5
((rc == 0)) || { tail -20 "$LINECAPD_LOG"; echo "demo.sh: linecapd exited $rc" >&2; exit 1; }
echo "==> finished files in $out"
compgen -G "$out/*.pcap" >/dev/null || { echo "demo.sh: no finished capture file in $out" >&2; exit 1; }
ls -la "$out"/*.pcap
capinfos -c -d "$out"/*.pcap 2>/dev/null | grep -E 'File name|Number of packets|Capture duration'
exit 0
