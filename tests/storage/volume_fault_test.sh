#!/usr/bin/env bash
# Two capture volumes (output.volumes) under live capture at a fixed rate, one of them
# failed for real under the daemon's writer, then repaired:
#
#   volume_fault_test.sh eio|enospc|erofs   volume A on faultfs (tests/lib/linecap_harness/
#                                           faultfs.py) whose changes fail with that errno
#   volume_fault_test.sh remount_ro         volume A on ext4 on a loop device that goes
#                                           read-only under its writer (errors=remount-ro),
#                                           repaired by unmount, e2fsck and mount
#   volume_fault_test.sh stall              volume A on faultfs, every change held 10 s
#
# Volume B is a tmpfs. af_packet on a veth, two queues (two streams, spread over both
# volumes). Three phases at 2000 packets/s: before the fault, during it, after it clears.
# Checked, exactly, from the daemon's final metrics and its files:
#   - capture goes on: every packet sent during the fault is accounted, and B's written
#     packets grow by what A stopped taking; A is marked failed (linecap_volume_healthy 0)
#   - sent = written + filtered + dropped(reason) across the run (accounting.py check:
#     also the summary line, /status, the kernel's veth counters and the files' contents)
#   - every finished file on both volumes reads (pcap module) and its manifest verifies
#   - `linecap extract --config` over both volumes == tcpdump over all the files
#   - A is re-admitted (healthy 1, linecap_volume_readmissions_total) and new files land
#     on it; stall: the worker never stops (rx grows through the stall, nic_missed 0)
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/storage/storage_lib.sh"
source "$LINECAP_SRC/tests/metrics/integration/lib.sh"
mode=${1:?usage: volume_fault_test.sh eio|enospc|erofs|remount_ro|stall}
# shellcheck disable=SC2034  # used by common.sh (log lines, temp dir names)
TEST_NAME="volume-$mode"
need_root
need_linecapd
need_linecap
need_cmd tcpreplay tcpdump editcap
need_hugepages 256
make_tmpdir
show_on_failure "$TEST_TMPDIR/tcpreplay.log" "$TEST_TMPDIR/check.out"

case $mode in
    eio | enospc | erofs | stall) mount_faultfs fs_a ;;
    remount_ro) need_cmd e2fsck; mount_loop_ext4 fs_a 128M ;;
    *) fail "unknown mode $mode" ;;
esac
mount_small_fs fs_b 256m
# shellcheck disable=SC2154  # fs_a and fs_b are set by the mount helpers
vol_a="$fs_a/capture" vol_b="$fs_b/capture"
mkdir "$vol_a" "$vol_b"
veth_pair "vol-$mode" 1500 2

rate=2000
fault_packets=6000
[[ $mode != stall ]] || fault_packets=24000 # 12 s at 2000/s: the 10 s stall and after
mkdir "$TEST_TMPDIR/sent"
gen_pcap --count 4000 --mix --size 700 --seed 71 --flows 200 --out "$TEST_TMPDIR/sent/1-before.pcap"
gen_pcap --count "$fault_packets" --mix --size 700 --seed 72 --flows 200 --out "$TEST_TMPDIR/sent/2-during.pcap"
gen_pcap --count 6000 --mix --size 700 --seed 73 --flows 200 --out "$TEST_TMPDIR/sent/3-after.pcap"

storage_config "$TEST_TMPDIR/linecap.yaml" "$(af_packet_device 2)" 2 "$vol_a" \
    output.volumes="[{\"directory\": \"$vol_a\"}, {\"directory\": \"$vol_b\"}]" \
    output.volume_stall_timeout_ms=2000 output.volume_probe_interval_s=1 \
    output.rotate.size_mb=1 output.rotate.interval_s=2 output.block_size_kb=64 output.blocks_per_queue=64 \
    output.manifest=true output.index=true
URL="http://$METRICS_LISTEN/metrics"
metrics() { metric_sum "$URL" "$@"; }
healthy() { metrics linecap_volume_healthy volume="$1"; }
written_on() { metrics linecap_volume_written_packets_total volume="$1"; }
accounted() { accounting wait-for "$URL" accounted --at-least "$1" --timeout "${2:-60}" --pid "$LINECAPD_PID"; }

start_capture "$TEST_TMPDIR/linecap.yaml"
scrape_to "$TEST_TMPDIR/scrape.start"
grep -q "^linecap_volume_healthy{.*volume=\"$vol_b\"" "$TEST_TMPDIR/scrape.start" \
    || skip "linecapd does not write output.volumes yet (no linecap_volume_healthy{volume=\"$vol_b\"} in /metrics)"
(($(healthy "$vol_a") == 1 && $(healthy "$vol_b") == 1)) || fail "a volume is not healthy at the start"

kernel_counters "$TEST_TMPDIR/kernel.before"
# --- before the fault: both volumes take writes ----------------------------------------
sent=$(replay_into_ns "$TEST_TMPDIR/sent/1-before.pcap" "$rate")
accounted "$sent" || fail "the first phase was not accounted for"
wait_for_linecapd "(( \$(written_on '$vol_a') > 0 && \$(written_on '$vol_b') > 0 ))" 20 \
    || fail "the two streams are not spread over both volumes"
a_before=$(written_on "$vol_a") b_before=$(written_on "$vol_b")
log "before the fault: $a_before packets on A, $b_before on B"

# --- the fault ----------------------------------------------------------------------------
case $mode in
    eio | enospc | erofs) faultfs_set "$fs_a" "$mode" ;;
    stall) faultfs_set "$fs_a" stall 10 ;;
    remount_ro) loop_ext4_fail "$fs_a" ;;
esac
fault_at=$EPOCHREALTIME
rx0=$(metrics linecap_rx_packets_total)
replay_bg "$TEST_TMPDIR/sent/2-during.pcap" "$rate"
if [[ $mode == stall ]]; then
    # The worker goes on while A's writer is held: rx grows during the stall as /metrics
    # shows it (scrapes that ended within the stall's first 9.5 s, each answering within a
    # 2 s socket timeout: a collection held by the stalled disk would show the daemon
    # standing still, and Prometheus would see it down).
    scrape_fast() {
        local t0=$EPOCHREALTIME
        http_get "$URL" 2 >"$TEST_TMPDIR/scrape.stall" \
            || fail "/metrics did not answer within 2 s, $(echo "$EPOCHREALTIME - $fault_at" | bc) s into the stall"
        log "stall: a scrape took $(echo "$EPOCHREALTIME - $t0" | bc) s"
    }
    heartbeat() { python3 -m linecap_harness.prometheus sum "$TEST_TMPDIR/scrape.stall" linecap_worker_heartbeat_total; }
    # Seen within the stall: a scrape that ended before the stall's 10 s were over.
    in_stall() { [[ $(echo "$EPOCHREALTIME < $fault_at + 9.5" | bc) == 1 ]]; }
    heartbeats=() rx=0
    while true; do
        scrape_fast
        in_stall || break
        rx=$(python3 -m linecap_harness.prometheus sum "$TEST_TMPDIR/scrape.stall" linecap_rx_packets_total)
        ((rx < rx0 + 6000)) || break
        heartbeats+=("$(heartbeat)")
        sleep 0.25
    done
    if ((rx < rx0 + 6000)); then
        n=${#heartbeats[@]}
        ((n < 2)) || [[ ${heartbeats[n - 1]} != "${heartbeats[n - 2]}" ]] \
            || fail "/metrics stood still during the 10 s stall: rx +$((rx - rx0)), the worker heartbeat in each scrape" \
                "${heartbeats[*]}: the daemon's collection was held by the stalled volume"
        fail "the worker did not go on during the stall: rx +$((rx - rx0)) in 9.5 s at $rate packets/s"
    fi
    stalled_for=$(echo "$EPOCHREALTIME - $fault_at" | bc)
    log "stall: 6000 packets received ${stalled_for}s into the 10 s stall"
fi
# Marked failed: counted (the stall may be over, and A re-admitted, by the time we look);
# while a lasting fault holds, the gauge says so too.
wait_for_linecapd "(( \$(metrics linecap_volume_failures_total volume='$vol_a') >= 1 ))" 20 \
    || fail "volume A was not marked failed"
[[ $mode == stall ]] || (($(healthy "$vol_a") == 0)) || fail "volume A is healthy while its fault lasts"
replay_wait
sent=$((sent + SENT))
accounted "$sent" || fail "packets sent during the fault were not accounted for"
(($(healthy "$vol_b") == 1)) || fail "volume B was marked failed too"
b_during=$(written_on "$vol_b")
((b_during - b_before > fault_packets / 2)) \
    || fail "capture did not go on on volume B: $((b_during - b_before)) of $fault_packets written there"
log "during the fault: $((b_during - b_before)) of $fault_packets packets written on B, \
$(metrics linecap_dropped_packets_total reason=write_error) write_error drops, \
failures $(metrics linecap_volume_failures_total volume="$vol_a")"

# --- the fault clears: A is re-admitted -------------------------------------------------
case $mode in
    eio | enospc | erofs) faultfs_set "$fs_a" ok ;;
    stall) wait_for "[[ \$('$FAULTFS' status '$fs_a') == mode=ok* ]]" 15 || fail "the stall did not end" ;;
    remount_ro) loop_ext4_repair "$fs_a" ;;
esac
wait_for_linecapd "(( \$(healthy '$vol_a') == 1 ))" 30 || fail "volume A was not re-admitted after the fault cleared"
(($(metrics linecap_volume_readmissions_total volume="$vol_a") >= 1)) || fail "no re-admission counted"
a_files_before=$(count_finished "$vol_a")
a_readmitted=$(written_on "$vol_a")
sent2=$(replay_into_ns "$TEST_TMPDIR/sent/3-after.pcap" "$rate")
sent=$((sent + sent2))
accounted "$sent" || fail "packets sent after the re-admission were not accounted for"
wait_for_linecapd "(( \$(written_on '$vol_a') > $a_readmitted ))" 20 || fail "nothing written on A after its re-admission"

accounting wait-drained "$URL" --out "$TEST_TMPDIR/scrape.final" --timeout 60 || fail "the daemon did not drain"
wait_for "[[ -z \$(find '$vol_a' '$vol_b' -name '*.manifest-pending') ]]" 30 || fail "manifests still pending"
kernel_counters "$TEST_TMPDIR/kernel.after"
stop_linecapd 60 || fail "linecapd exited $LINECAPD_RC"
((sent == 4000 + fault_packets + 6000)) || fail "tcpreplay sent $sent of $((4000 + fault_packets + 6000))"
(($(count_finished "$vol_a") > a_files_before)) || fail "no new file finished on A after its re-admission"

# --- what the run cost, exactly -------------------------------------------------------------
# The file open on A when its fault hit is finished as far as it was written, or (when
# even that fails) left under its in-progress name and finished by the daemon once A is
# re-admitted: what the repaired file system no longer holds of it is counted
# (linecap_volume_lost_after_write_*), and the check wants files == written - that. One
# still left at the stop (counted as in the file) is recovered by the next start (below).
accounting check --scrape "$TEST_TMPDIR/scrape.final" --log "$LINECAPD_LOG" --out-dir "$vol_a" --out-dir "$vol_b" \
    --port st --sent "$sent" --kernel-before "$TEST_TMPDIR/kernel.before" --kernel-after "$TEST_TMPDIR/kernel.after" \
    --expect write_error='*' --expect disk_full='*' --expect writer_full='*' --left-for-recovery >"$TEST_TMPDIR/check.out" \
    || {
        # What the files hold beyond what was sent, and what the port had counted before the
        # first replay: where a packet the kernel did not count as received came from.
        show_on_failure "$TEST_TMPDIR/check.out"
        python3 -m linecap_harness.pcap cat "$TEST_TMPDIR/sent-all.pcap" "$TEST_TMPDIR"/sent/*.pcap
        pcap_compare multiset "$TEST_TMPDIR/sent-all.pcap" "$vol_a" "$vol_b" >"$TEST_TMPDIR/files.cmp" || true
        show_on_failure "$TEST_TMPDIR/files.cmp"
        fail "the accounting is not exact ($mode): $(grep FAIL "$TEST_TMPDIR/check.out");" \
            "reached at the start: $(accounting value "$TEST_TMPDIR/scrape.start" linecap_port_received_packets_total)"
    }
missed=$(accounting value "$TEST_TMPDIR/scrape.final" linecap_dropped_packets_total reason=nic_missed)
((missed == 0)) || fail "$missed packets missed at the NIC: the worker was held up"
grep -q "invariant holds exactly" "$TEST_TMPDIR/check.out" || fail "accounting check: $(cat "$TEST_TMPDIR/check.out")"
[[ -z $(find "$vol_b" -name '.*.part') ]] || fail "a file on the healthy volume B was left in progress"
mapfile -t left < <(find "$vol_a" -name '.*.part')
if ((${#left[@]} > 0)); then
    log "left for recovery on A: ${left[*]##*/}; starting linecapd again to recover them"
    in_parts=$(python3 -m linecap_harness.pcap count "${left[@]}")
    before_files=$(pcap_compare count -q "$vol_a")
    start_capture "$TEST_TMPDIR/linecap.yaml"
    stop_linecapd 60 || fail "linecapd exited $LINECAPD_RC after the recovery start"
    [[ -z $(find "$vol_a" -name '.*.part') ]] || fail "the next start did not recover ${left[*]##*/}"
    (($(pcap_compare count -q "$vol_a") == before_files + in_parts)) \
        || fail "the recovered files do not hold the $in_parts packets of ${left[*]##*/}"
fi

# Every finished file on both volumes reads whole and has its manifest, and `linecapd
# verify` finds each file as its manifest says. verify reads one directory; a stream's
# files are spread over both volumes (its sequence numbers go on across a failover), so it
# reads a copy of both volumes' files in one directory (it lists regular files only, not
# symlinks): no gap either.
mkdir "$TEST_TMPDIR/store"
for vol in "$vol_a" "$vol_b"; do
    pcap_compare validate "$vol" >/dev/null || fail "a finished file on $vol does not validate"
    for f in "$vol"/*.pcap; do
        [[ -s $f.manifest ]] || fail "${f##*/} has no manifest"
        cp -p "$f" "$f.manifest" "$TEST_TMPDIR/store/"
    done
done
linecapd_verify "$TEST_TMPDIR/store" || true
# A file left for recovery is finished by the next start from its bytes alone: its run and
# sequence number died with the daemon that wrote it, so its stream's chain shows the one
# file missing there. That GAP, and only that one, is expected: it must name the files
# just before and after the recovered one.
recovered=()
for f in "${left[@]}"; do f=${f##*/.}; recovered+=("${f%.part}"); done
others=$(grep -v "^LOSS \|^verify \|^RECOVERED " "$TEST_TMPDIR/verify.out" || true)
while IFS= read -r line; do
    [[ -n $line ]] || continue
    explained=0
    # The recovery start is a run of its own: between the two runs the daemon was not
    # capturing, as verify says.
    ((${#left[@]} > 0)) && [[ $line =~ ^GAP\ [^:]+:[0-9]+:\ the\ daemon\ was\ not\ capturing\ between\  ]] && explained=1
    if [[ $line =~ ^GAP\ [^:]+:[0-9]+:\ 1\ file\(s\)\ missing\ .*\ between\ ([^ ]+)\ and\ ([^ ]+): ]]; then
        for r in "${recovered[@]}"; do
            [[ ${BASH_REMATCH[1]} < $r && $r < ${BASH_REMATCH[2]} ]] && explained=1
        done
    fi
    ((explained)) || fail "verify over both volumes: $line"
done <<<"$others"
(($(grep -c "^RECOVERED " "$TEST_TMPDIR/verify.out") == ${#left[@]})) \
    || fail "verify: $(grep -c "^RECOVERED " "$TEST_TMPDIR/verify.out") files RECOVERED, ${#left[@]} were left for recovery"
grep -q "^verify $TEST_TMPDIR/store: $(($(count_finished "$vol_a") + $(count_finished "$vol_b"))) capture files" "$TEST_TMPDIR/verify.out" \
    || fail "verify did not check every file: $(tail -n 1 "$TEST_TMPDIR/verify.out")"

# extract over both volumes (the configuration names them) == tcpdump over every file.
filter="tcp or udp"
mkdir "$TEST_TMPDIR/want"
for f in "$vol_a"/*.pcap "$vol_b"/*.pcap; do
    tcpdump -r "$f" -w "$TEST_TMPDIR/want/$(basename "$(dirname "$(dirname "$f")")")-${f##*/}" "$filter" 2>/dev/null \
        || fail "tcpdump cannot read $f"
done
"$LINECAP" extract --config "$TEST_TMPDIR/linecap.yaml" --filter "$filter" -o "$TEST_TMPDIR/got.pcap" 2>"$TEST_TMPDIR/extract.err" \
    || fail "linecap extract: $(cat "$TEST_TMPDIR/extract.err")"
pcap_compare multiset "$TEST_TMPDIR/got.pcap" "$TEST_TMPDIR/want" >"$TEST_TMPDIR/extract.cmp" \
    || fail "extract over both volumes differs from tcpdump over all files: $(head -n 3 "$TEST_TMPDIR/extract.cmp")"
# ... and the files hold only what was sent, each packet at most once.
python3 -m linecap_harness.pcap cat "$TEST_TMPDIR/sent-all.pcap" "$TEST_TMPDIR"/sent/*.pcap
verdict=$(pcap_compare multiset "$TEST_TMPDIR/sent-all.pcap" "$vol_a" "$vol_b" | head -n 1 || true)
[[ $verdict == *", extra 0 "* ]] || fail "the files hold packets that were not sent: $verdict"
log "OK ($mode): $(grep -o 'port st: .*' "$LINECAPD_LOG" | tail -n 1); A: $(count_finished "$vol_a") files, B: $(count_finished "$vol_b")"
