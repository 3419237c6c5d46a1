#!/usr/bin/env bash
# A disk that fills in the middle of a capture (a small tmpfs, mostly taken by a ballast
# file): the daemon keeps running, counts what it cannot write as disk_full drops (the
# metric and the summary), logs the episode once, never leaves a partial file under a
# finished name, and resumes by itself once space is freed; the manifest of the file
# that spans the episode records the loss. Then, with retention on (max_age far away: on
# but not limiting), a full disk makes retention delete the oldest capture files, and
# writing resumes without anyone freeing space.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/storage/storage_lib.sh"
need_root
need_cmd tcpreplay capinfos
need_hugepages 256
make_tmpdir
veth_pair diskfull
mount_small_fs out 16m

gen_pcap --count 8000 --size 700 --seed 61 --flows 100 --out "$TEST_TMPDIR/a.pcap"
gen_pcap --count 2000 --size 700 --seed 62 --flows 100 --out "$TEST_TMPDIR/b.pcap"
gen_pcap --count 3000 --size 700 --seed 63 --flows 100 --out "$TEST_TMPDIR/c.pcap"
# No indexes: the ballast arithmetic below leaves room for the capture files and their
# manifests only (indexes are covered by the store tests; their own ENOSPC is a logged,
# counted index failure).
config() {  # [SECTION.KEY=VALUE...]: more settings
    storage_config "$TEST_TMPDIR/linecap.yaml" "$(af_packet_device 1)" 1 "$out" output.block_size_kb=64 \
        output.blocks_per_queue=64 output.rotate.size_mb=1 output.rotate.interval_s=0 output.index=false "$@"
}
metrics() { metric_sum "http://$METRICS_LISTEN/metrics" "$@"; }
# Leaves about $1 bytes free.
ballast() {
    local free
    free=$(fs_free "$out")
    head -c $((free - $1)) /dev/zero >"$out/ballast.bin" 2>/dev/null || true
}
check_files() {
    local f
    [[ -z $(find "$out" -name '.*') ]] || fail "hidden files left: $(find "$out" -name '.*' -printf '%f ')"
    for f in "$out"/*.pcap; do
        capinfos "$f" >/dev/null 2>&1 || fail "capinfos cannot read ${f##*/}"
    done
    pcap_compare validate "$out"/*.pcap >/dev/null || fail "a finished file does not validate"
}

# --- no retention: drops until space is freed -------------------------------------------
config
ballast $((3 << 20))
start_linecapd "$TEST_TMPDIR/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 60
sent=$(replay_into_ns "$TEST_TMPDIR/a.pcap" 20000)
((sent == 8000)) || fail "tcpreplay sent $sent of 8000"
accounted() { echo $(($(metrics linecap_written_packets_total) + $(metrics linecap_dropped_packets_total))); }
wait_for_linecapd "(( \$(accounted) >= 8000 ))" 30 || fail "not every packet accounted for: $(accounted)"
full=$(metrics linecap_dropped_packets_total reason=disk_full)
written_a=$(metrics linecap_written_packets_total)
log "disk full: $written_a written, $full disk_full drops"
((full > 0 && written_a > 0)) || fail "expected both written packets and disk_full drops"
(($(metrics linecap_dropped_packets_total reason=write_error) == 0)) || fail "ENOSPC counted as write_error"
episodes=$(grep -c "counting packets as lost (disk_full)" "$LINECAPD_LOG" || true)
((episodes == 1)) || fail "the full disk was logged $episodes times, not once per episode"
linecapd_running || fail "linecapd died on a full disk"
check_files
grep -q "output.retention sets no limit, so no capture file is deleted" "$LINECAPD_LOG" \
    || fail "the full disk without retention limits is not logged"

rm -f "$out/ballast.bin"
sent=$(replay_into_ns "$TEST_TMPDIR/b.pcap" 20000)
((sent == 2000)) || fail "tcpreplay sent $sent of 2000"
wait_for_linecapd "(( \$(metrics linecap_written_packets_total) >= written_a + 2000 ))" 30 \
    || fail "writing did not resume after space was freed"
grep -q "resumed after $full packets lost" "$LINECAPD_LOG" || fail "the end of the episode is not logged"
stop_linecapd || fail "linecapd exited $LINECAPD_RC"
grep -q "disk_full=$full\$" "$LINECAPD_LOG" || fail "summary: $(grep 'reached the port' "$LINECAPD_LOG")"
check_files
in_files=$(pcap_compare count --quiet "$out")
((in_files + full == 10000)) || fail "files hold $in_files packets, $full dropped: not the 10000 sent"
pcap_compare multiset --min "$TEST_TMPDIR/b.pcap" "$out" >/dev/null || fail "packets sent after the disk had room again are missing"
rc=0
linecapd_verify "$out" || rc=$?
report=$(cat "$TEST_TMPDIR/verify.out")
grep -q "^LOSS .*disk_full=$full)" <<<"$report" || fail "no manifest records the $full disk_full drops: $report"
others=$(grep -v "^LOSS \|^verify " <<<"$report" || true)
[[ -z $others ]] || fail "verify: $others"

# --- retention on: a full disk deletes the oldest files -----------------------------------
files_before=$(count_finished "$out")
oldest=$(cd "$out" && ls ./*.pcap | sort | head -n 1)
config output.retention.max_age=1w
LINECAPD_LOG="$TEST_TMPDIR/linecapd-retention.log"
show_on_failure "$LINECAPD_LOG"
start_linecapd "$TEST_TMPDIR/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 60
# Filled once running: preflight refuses to start with less than two rotations free.
ballast $((512 << 10))
sent=$(replay_into_ns "$TEST_TMPDIR/c.pcap" 10000)
((sent == 3000)) || fail "tcpreplay sent $sent of 3000"
wait_for_linecapd "(( \$(accounted) >= 3000 ))" 30 || fail "not every packet accounted for: $(accounted)"
written_c=$(metrics linecap_written_packets_total)
full_c=$(metrics linecap_dropped_packets_total reason=disk_full)
stop_linecapd || fail "linecapd exited $LINECAPD_RC"
deleted=$(grep -c "retention: deleted .*: disk full" "$LINECAPD_LOG" || true)
log "retention on: $written_c written, $full_c disk_full drops, $deleted files deleted to make room"
((deleted >= 1)) || fail "retention deleted nothing on a full disk"
[[ ! -e $out/$oldest ]] || fail "the oldest file $oldest was kept"
[[ -e $out/ballast.bin ]] || fail "retention deleted a file that is not a capture file"
((written_c > 2000)) || fail "only $written_c of 3000 packets written although retention made room"
storage_check order "$LINECAPD_LOG" "$out" >/dev/null || fail "$(storage_check order "$LINECAPD_LOG" "$out")"
check_files
log "OK: $full disk_full drops without retention, resumed after space was freed; with retention, $deleted oldest files made room ($files_before files before)"
