#!/usr/bin/env bash
# Retention inside the daemon, one run per budget, each through many 1 MiB rotations of
# live traffic on two queues (net_af_packet on a veth) into a small tmpfs. While the
# traffic runs the directory is sampled continuously:
#   max_bytes 7 MiB (+ legal hold)  usage never above 7 MiB; the held file survives
#   max_percent 25 of 28 MiB        usage never above 7 MiB
#   min_free 21 MiB of 28 MiB       free space never below 21 MiB
#   max_age 3 s (interval rotation) no file whose last packet is older than 3 s stays
#                                   beyond the next check; the horizon metric follows
# Deletions are logged one per file, oldest first across both queues, with their
# manifests; the metrics count them.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/storage/storage_lib.sh"
need_root
need_cmd tcpreplay
need_hugepages 256
make_tmpdir
veth_pair retention
mount_small_fs out 28m

gen_pcap --count 4000 --size 1000 --seed 71 --flows 200 --out "$TEST_TMPDIR/bulk.pcap"  # ~4 MB
gen_pcap --count 300 --size 1000 --seed 72 --flows 200 --out "$TEST_TMPDIR/small.pcap"
metrics() { metric_sum "http://$METRICS_LISTEN/metrics" "$@"; }
MiB=$((1 << 20))

# Records the largest usage and the smallest free space seen (files: the subshells of
# wait_for cannot set variables).
sample() {
    local used free
    used=$(dir_usage "$out")
    free=$(fs_free "$out")
    (($(cat "$TEST_TMPDIR/max_used") >= used)) || echo "$used" >"$TEST_TMPDIR/max_used"
    (($(cat "$TEST_TMPDIR/min_free") <= free)) || echo "$free" >"$TEST_TMPDIR/min_free"
}

# start [SECTION.KEY=VALUE...]: a fresh output directory and daemon with those settings
# (retention; 1 MiB files unless output.rotate says otherwise).
start() {
    find "$out" -mindepth 1 -delete
    echo 0 >"$TEST_TMPDIR/max_used"
    echo $((1 << 40)) >"$TEST_TMPDIR/min_free"
    storage_config "$TEST_TMPDIR/linecap.yaml" "$(af_packet_device 2)" 2 "$out" output.block_size_kb=64 \
        output.blocks_per_queue=64 output.rotate.size_mb=1 output.rotate.interval_s=0 "$@"
    LINECAPD_LOG="$TEST_TMPDIR/linecapd-$((++runs)).log"
    show_on_failure "$LINECAPD_LOG"
    start_linecapd "$TEST_TMPDIR/linecap.yaml"
    wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 60
}
runs=0
# start_linecapd registers its kill on exit only when it picks the log itself; start()
# names one log per run, so register it here.
on_exit "_lc_kill_linecapd"

# traffic PCAP PPS LOOPS: tcpreplay in the background while sampling; waits for its end.
traffic() {
    (replay_into_ns "$1" "$2" "$3" >"$TEST_TMPDIR/sent") &
    local pid=$!
    wait_for "sample; ! kill -0 $pid" 120 || fail "tcpreplay did not finish"
    wait "$pid" || fail "tcpreplay failed"
    sample
}

# rotations: traffic until retention has deleted at least 8 files (the kernel side of
# a veth may lose packets on a busy machine, so the volume needed varies).
rotations() {
    local i
    for i in 1 2 3 4 5 6; do
        traffic "$TEST_TMPDIR/bulk.pcap" 10000 2
        (($(grep -c "retention: deleted" "$LINECAPD_LOG" || true) >= 8)) && return 0
    done
    fail "only $(grep -c "retention: deleted" "$LINECAPD_LOG") files deleted after 6 rounds of traffic"
}

# finish: stop the daemon and check the deletions (oldest first, one log line each,
# counted by the metrics before the stop). Extra args: held file names.
finish() {
    local deleted counted
    counted=$(metrics linecap_retention_deleted_files_total)  # collected before the grep
    deleted=$(grep -c "retention: deleted" "$LINECAPD_LOG" || true)
    stop_linecapd || fail "linecapd exited $LINECAPD_RC"
    ((deleted >= 5)) || fail "only $deleted files deleted: not many rotations?"
    ((counted <= deleted)) || fail "metric says $counted deleted, the log $deleted"
    storage_check order "$LINECAPD_LOG" "$out" --held "$@" >/dev/null || fail "$(storage_check order "$LINECAPD_LOG" "$out" --held "$@")"
    grep -q "retention: deleted .*-st-q0.pcap" "$LINECAPD_LOG" && grep -q "retention: deleted .*-st-q1.pcap" "$LINECAPD_LOG" \
        || fail "retention did not delete from both queues"
    [[ -z $(find "$out" -name '*.manifest' -printf '%f\n' | sed 's/\.manifest$//' | while read -r m; do [[ -e $out/$m ]] || echo "$m"; done) ]] \
        || fail "manifests of deleted files are left"
    log "$1: $deleted files deleted oldest first; largest usage seen $(($(cat "$TEST_TMPDIR/max_used") / 1024)) KiB"
}

# --- max_bytes, with a legal hold ---------------------------------------------------------
echo "# nothing held yet" >"$TEST_TMPDIR/hold.list"
start output.retention.max_bytes=7M output.retention.hold_file="$TEST_TMPDIR/hold.list"
traffic "$TEST_TMPDIR/bulk.pcap" 10000 1
wait_for_linecapd "(( \$(count_finished '$out') >= 2 ))" 20 || fail "no finished files to hold"
held=$(cd "$out" && find . -maxdepth 1 -name '*.pcap' -printf '%f\n' | sort | head -n 1)
printf '# legal hold for the test\n%s\n' "$held" >"$TEST_TMPDIR/hold.list"
wait_for_linecapd "grep -q 'legal hold list $TEST_TMPDIR/hold.list: 1 entries' '$LINECAPD_LOG'" 10
rotations
(($(metrics linecap_retention_held_files) == 1)) || fail "held files metric: $(metrics linecap_retention_held_files)"
(($(cat "$TEST_TMPDIR/max_used") <= 7 * MiB)) || fail "usage reached $(cat "$TEST_TMPDIR/max_used") bytes, above max_bytes 7 MiB"
[[ -e $out/$held && -e $out/$held.manifest ]] || fail "the held file $held was deleted"
grep -q "$held is on the legal hold list; not deleted" "$LINECAPD_LOG" || fail "skipping the held file is not logged"
finish max_bytes "$held"
# Deleting around the held file leaves a hole in its stream, which verify reports.
rc=0
linecapd_verify "$out" || rc=$?
grep -q "^GAP st:[01]: .* file(s) missing" "$TEST_TMPDIR/verify.out" || fail "verify: $(cat "$TEST_TMPDIR/verify.out")"
[[ -z $(grep -v "^GAP \|^verify " "$TEST_TMPDIR/verify.out") ]] || fail "verify: $(cat "$TEST_TMPDIR/verify.out")"

# --- max_percent --------------------------------------------------------------------------
start output.retention.max_percent=25
rotations
(($(cat "$TEST_TMPDIR/max_used") <= 7 * MiB)) || fail "usage reached $(cat "$TEST_TMPDIR/max_used") bytes, above 25% of 28 MiB"
finish max_percent

# --- min_free_bytes -----------------------------------------------------------------------
start output.retention.min_free_bytes=21M
rotations
(($(cat "$TEST_TMPDIR/min_free") >= 21 * MiB)) || fail "free space fell to $(cat "$TEST_TMPDIR/min_free") bytes, below 21 MiB"
finish min_free_bytes

# --- max_age, with interval rotation and the horizon ---------------------------------------
start output.retention.max_age=3s output.rotate.size_mb=0 output.rotate.interval_s=1
echo 0 >"$TEST_TMPDIR/horizon_max"
: >"$TEST_TMPDIR/age_violations"
# One sample: no kept file ended more than max_age + 1 s (file interval) + 1 s (retention
# period) + 2 s (slack for a busy machine) ago; the largest horizon seen.
age_sample() {
    local now m last h
    now=$(date +%s%N)
    for m in "$out"/*.manifest; do
        last=$(sed -n 's/.*"last_ns": \([0-9]*\).*/\1/p' "$m" 2>/dev/null) || continue
        [[ -z $last ]] || ((now - last <= 7000000000)) \
            || echo "${m##*/}: last packet $(((now - last) / 1000000)) ms ago" >>"$TEST_TMPDIR/age_violations"
    done
    h=$(metrics linecap_retention_horizon_seconds)
    h=${h%%.*}
    (($(cat "$TEST_TMPDIR/horizon_max") >= h)) || echo "$h" >"$TEST_TMPDIR/horizon_max"
}
(replay_into_ns "$TEST_TMPDIR/small.pcap" 100 1 >"$TEST_TMPDIR/sent") &
pid=$!
# Sampled while the traffic runs and until everything has aged out.
wait_for "age_sample; ! kill -0 $pid && (( \$(count_finished '$out') == 0 )) && (( \$(grep -c 'retention: deleted' '$LINECAPD_LOG') > 0 ))" 30 \
    || fail "files older than max_age remain: $(ls "$out")"
wait "$pid" || fail "tcpreplay failed"
[[ ! -s $TEST_TMPDIR/age_violations ]] || fail "max_age not enforced: $(cat "$TEST_TMPDIR/age_violations")"
horizon_max=$(cat "$TEST_TMPDIR/horizon_max")
((horizon_max >= 1 && horizon_max <= 7)) || fail "the horizon reached ${horizon_max}s with max_age 3s and 1-s files"
grep -q "retention: deleted .*: max_age" "$LINECAPD_LOG" || fail "nothing deleted for max_age"
# Nothing kept: the horizon is 0 again.
wait_for_linecapd "[[ \$(metrics linecap_retention_horizon_seconds) == 0 ]]" 5 \
    || fail "the horizon stays at $(metrics linecap_retention_horizon_seconds)"
log "max_age: largest horizon seen ${horizon_max}s"
finish max_age
log "OK: every budget held through many rotations"
