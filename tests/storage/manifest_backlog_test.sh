#!/usr/bin/env bash
# Manifests off the write path. net_pcap floods the writer while an ordinary
# busy loop keeps every CPU taken, so the manifest hasher (idle priority) falls behind:
# finished files wait with their manifest pending (NAME.manifest-pending beside them),
# `linecapd verify` reports them PENDING (not a finding), `linecap stats` counts them, and
# the backlog metrics show them. A SIGTERM in the middle of that backlog works on it for the
# stop budget only; each file left pending keeps the writer's manifest (all but the digest)
# in its marker, and a later start writes those manifests as the writer recorded them (not
# "recovered"). Then kill -9 in the middle of a backlog: the next start computes
# the manifests of a killed run's files from their bytes. Afterwards every finished file
# has a manifest whose sha256 is sha256sum's, no marker is left, and verify finds nothing
# wrong with a manifest.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/storage/storage_lib.sh"
need_root
need_cmd sha256sum taskset
need_hugepages 512
need_linecap
make_tmpdir

gen_pcap --count 2000 --mix --seed 61 --out "$TEST_TMPDIR/in.pcap"
mount_small_fs out 160m
METRICS_LISTEN=127.0.0.1:$(free_tcp_port)
metrics="http://$METRICS_LISTEN/metrics"
config() {  # config FILE DEVICE
    # infinite_rx keeps the whole file in mbufs.
    write_config "$1" "$2" "$out" port.name=flood port.rx_descriptors=1024 capture.mbufs=16383 \
        output.block_size_kb=512 output.manifest=true output.index=false output.rotate.size_mb=4 \
        output.rotate.interval_s=0 output.retention.max_bytes=64M
}
config "$TEST_TMPDIR/flood.yaml" "net_pcap0,rx_pcap=$TEST_TMPDIR/in.pcap,infinite_rx=1"
config "$TEST_TMPDIR/quiet.yaml" "net_pcap0,rx_pcap=$TEST_TMPDIR/in.pcap"

# One ordinary (normal priority) busy loop per CPU: the idle-priority hasher gets almost
# nothing, the writer its fair share.
hogs=()
start_hogs() {
    local cpu
    for cpu in $(seq 0 $(($(nproc) - 1))); do
        taskset -c "$cpu" bash -c 'while :; do :; done' &
        hogs+=($!)
        on_exit "kill ${hogs[-1]} 2>/dev/null || true"
    done
}
stop_hogs() {
    for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
    hogs=()
}
# flood_until_backlog LOG: the flood under the hogs until 3 files wait for their manifest.
flood_until_backlog() {
    LINECAPD_LOG=$1
    show_on_failure "$LINECAPD_LOG"
    start_hogs
    start_linecapd "$TEST_TMPDIR/flood.yaml"
    wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 60
    wait_for_linecapd "(( \$(metric_sum $metrics linecap_manifest_backlog_files) >= 3 ))" 60 \
        || fail "no manifest backlog built up"
}

flood_until_backlog "$TEST_TMPDIR/linecapd.log"
backlog_files=$(metric_sum "$metrics" linecap_manifest_backlog_files)
backlog_bytes=$(metric_sum "$metrics" linecap_manifest_backlog_bytes)
((backlog_bytes > 0)) || fail "linecap_manifest_backlog_bytes is $backlog_bytes with $backlog_files files pending"
shopt -s nullglob
markers=("$out"/*.manifest-pending)
((${#markers[@]} >= 1)) || fail "no NAME.manifest-pending marker beside the pending files"
pending=${markers[0]%.manifest-pending}
[[ ! -e $pending.manifest ]] || fail "${pending##*/} has a manifest and a pending marker"
"$LINECAPD" verify "$out" >"$TEST_TMPDIR/verify-live.out" 2>&1 || true
grep -q "^PENDING " "$TEST_TMPDIR/verify-live.out" || fail "verify does not report pending manifests"
grep -q "^NO-MANIFEST " "$TEST_TMPDIR/verify-live.out" \
    && fail "verify calls a pending file one without manifest: $(grep -m1 '^NO-MANIFEST' "$TEST_TMPDIR/verify-live.out")"
"$LINECAP" stats --dir "$out" >"$TEST_TMPDIR/stats.out" 2>&1 || true
grep -q "^manifests  [0-9]* pending" "$TEST_TMPDIR/stats.out" \
    || fail "linecap stats does not count the pending manifests: $(cat "$TEST_TMPDIR/stats.out")"

# A stop with the backlog (the hogs still spinning): nothing of the writer's record lost.
started=$EPOCHREALTIME
stop_linecapd 60 || fail "linecapd exited $LINECAPD_RC after SIGTERM"
stop_ms=$(python3 -c "print(round(($EPOCHREALTIME - $started) * 1000))")
stop_hogs
drafted=()
for marker in "$out"/*.manifest-pending; do
    [[ -s $marker ]] || fail "${marker##*/} is empty after a stop: the writer's manifest was not kept"
    drafted+=("${marker%.manifest-pending}")
done
log "SIGTERM with $backlog_files manifests pending ($backlog_bytes bytes not hashed): exited in $stop_ms ms," \
    "${#drafted[@]} left with the writer's manifest in their marker"

flood_until_backlog "$TEST_TMPDIR/linecapd-killed.log"
backlog_files=$(metric_sum "$metrics" linecap_manifest_backlog_files)
log "kill -9 with $backlog_files manifests pending"
stop_hogs
stop_linecapd 5 KILL || true
((LINECAPD_RC == 137)) || fail "linecapd did not die by SIGKILL (status $LINECAPD_RC)"
markers=("$out"/*.manifest-pending)
((${#markers[@]} >= 1)) || fail "the kill left no pending marker (the backlog was gone already?)"

LINECAPD_LOG="$TEST_TMPDIR/linecapd-restart.log"
show_on_failure "$LINECAPD_LOG"
start_linecapd "$TEST_TMPDIR/quiet.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 60
grep -q "manifest hasher: [0-9]* file(s) left with their manifest pending by the previous run" "$LINECAPD_LOG" \
    || fail "the restart did not pick up the pending manifests"
# The hasher runs at idle priority, which on a loaded machine may mean slowly: the wait is
# for the backlog to clear, not for a time.
wait_for_linecapd "(( \$(metric_sum $metrics linecap_manifest_backlog_files) == 0 ))" 120 \
    || fail "the pending manifests were not completed: $(metric_sum "$metrics" linecap_manifest_backlog_files) left"
stop_linecapd 60 || fail "linecapd exited $LINECAPD_RC"

markers=("$out"/*.manifest-pending)
((${#markers[@]} == 0)) || fail "markers left: ${markers[*]##*/}"
files=("$out"/*.pcap)
((${#files[@]} >= 3)) || fail "only ${#files[@]} capture files kept"
for f in "${files[@]}"; do
    [[ -f $f.manifest ]] || fail "${f##*/} has no manifest"
    want=$(sha256sum "$f" | cut -d' ' -f1)
    got=$(json_field "$f.manifest" sha256)
    [[ $got == "$want" ]] || fail "${f##*/}: manifest sha256 $got, sha256sum $want"
done
# The files the SIGTERM left pending (those retention kept): their manifests are the writer's.
for f in "${drafted[@]}"; do
    [[ -e $f ]] || continue
    python3 - "$f.manifest" <<'PY' || fail "${f##*/}: not the writer's manifest after a stop: $(cat "$f.manifest")"
import json, sys
m = json.load(open(sys.argv[1]))
sys.exit(0 if not m.get("recovered") and "seq" in m and m.get("run") else 1)
PY
done
rc=0
"$LINECAPD" verify "$out" >"$TEST_TMPDIR/verify.out" 2>&1 || rc=$?
show_on_failure "$TEST_TMPDIR/verify.out"
# The flood drops (LOSS), the kill recovers a file and leaves gaps (RECOVERED, GAP): findings
# about the capture, not about manifests.
if grep -E "^(MISMATCH|NO-MANIFEST|PENDING|BAD-MANIFEST|ORPHAN|INVALID) " "$TEST_TMPDIR/verify.out"; then
    fail "verify finds manifest problems (exit $rc)"
fi
log "${#files[@]} files, every manifest equal to sha256sum after kill -9 with $backlog_files pending"
