#!/usr/bin/env bash
# kill -9 in the middle of a capture, then a restart: the in-progress file is found,
# cut back to its last complete record (here also after a torn write, simulated by
# half a record appended to it), finalised under its normal name with a manifest marked
# "recovered", and logged; no hidden file is left; every file reads back (capinfos, the
# strict validator) and the files hold exactly the packets sent, in order, up to the
# kill and after the restart. `linecapd verify` reports the recovered file and the
# restart gap, and nothing else.
#   kill9_test.sh pcap|pcapng
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/storage/storage_lib.sh"
format=${1:?usage: kill9_test.sh pcap|pcapng}
need_root
need_cmd tcpreplay capinfos mergecap
need_hugepages 256
make_tmpdir
veth_pair "kill9-$format"

gen_pcap --count 4000 --mix --seed 51 --flows 100 --out "$TEST_TMPDIR/before.pcap"
gen_pcap --count 1500 --mix --seed 52 --flows 100 --out "$TEST_TMPDIR/after.pcap"
mergecap -a -F nsecpcap -w "$TEST_TMPDIR/sent.pcap" "$TEST_TMPDIR/before.pcap" "$TEST_TMPDIR/after.pcap"
out="$TEST_TMPDIR/out"
mkdir "$out"
storage_config "$TEST_TMPDIR/linecap.yaml" "$(af_packet_device 1)" 1 "$out" output.format="$format" \
    output.block_size_kb=64 output.blocks_per_queue=64 output.rotate.size_mb=1 output.rotate.interval_s=0 output.fsync=rotate
metrics="http://$METRICS_LISTEN/metrics"

start_linecapd "$TEST_TMPDIR/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 60
sent=$(replay_into_ns "$TEST_TMPDIR/before.pcap" 20000)
((sent == 4000)) || fail "tcpreplay sent $sent of 4000"
wait_for_linecapd "[[ \$(metric_sum $metrics linecap_written_packets_total) -ge 4000 ]]" 30 \
    || fail "the packets sent did not reach the files"
shopt -s nullglob
parts=("$out"/.*.part)
((${#parts[@]} == 1)) || fail "expected one in-progress file before the kill, found ${#parts[@]}"
finished_before=$(count_finished "$out")
((finished_before >= 1)) || fail "expected finished files before the kill"

log "kill -9 with ${parts[0]##*/} in progress ($(stat -c %s "${parts[0]}") bytes)"
stop_linecapd 5 KILL || true
((LINECAPD_RC == 137)) || fail "linecapd did not die by SIGKILL (status $LINECAPD_RC)"
# A torn write as power loss can leave it: half a record after the last complete one.
complete_size=$(stat -c %s "${parts[0]}")
python3 - "${parts[0]}" "$format" <<'PY'
import struct, sys
path, fmt = sys.argv[1], sys.argv[2]
with open(path, "ab") as f:
    if fmt == "pcap":
        f.write(struct.pack("<IIII", 1700000000, 5, 1000, 1000) + b"\xab" * 300)
    else:
        f.write(struct.pack("<IIIIIII", 6, 1032, 0, 0, 5, 1000, 1000) + b"\xab" * 300)
PY
torn_size=$(stat -c %s "${parts[0]}")
final_name=${parts[0]##*/.}
final_name=${final_name%.part}
touch "$out/.$final_name.manifest.tmp.Kill09"  # a manifest the kill interrupted (layout::AtomicFile)

LINECAPD_LOG="$TEST_TMPDIR/linecapd-restart.log"  # the second run logs on its own
show_on_failure "$LINECAPD_LOG"
start_linecapd "$TEST_TMPDIR/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 60
grep -q "recovered $out/$final_name: [0-9]* packets, $((torn_size - complete_size)) bytes truncated" "$LINECAPD_LOG" \
    || fail "no recovery of $final_name ($torn_size bytes) logged: $(grep -i recover "$LINECAPD_LOG")"
grep -q "removed stale temporary $out/.$final_name.manifest.tmp.Kill09" "$LINECAPD_LOG" \
    || fail "the stale manifest temporary was not removed"
if [[ $format == pcapng ]]; then
    grep -q "recovered $out/$final_name has no interface statistics block" "$LINECAPD_LOG" \
        || fail "the missing ISB of a recovered pcapng file is not logged"
fi
[[ -f $out/$final_name && -f $out/$final_name.manifest ]] || fail "$final_name and its manifest are not there"
sent=$(replay_into_ns "$TEST_TMPDIR/after.pcap" 20000)
((sent == 1500)) || fail "tcpreplay sent $sent of 1500"
wait_for_linecapd "[[ \$(metric_sum $metrics linecap_written_packets_total) -ge 1500 ]]" 30 \
    || fail "the packets sent after the restart did not reach the files"
stop_linecapd || fail "linecapd exited $LINECAPD_RC"

hidden=$(find "$out" -name '.*' -printf '%f ')
[[ -z $hidden ]] || fail "hidden files left: $hidden"
files=("$out"/*."$format")
for f in "${files[@]}"; do
    capinfos "$f" >/dev/null 2>&1 || fail "capinfos cannot read ${f##*/}"
done
pcap_compare validate "${files[@]}" >/dev/null || fail "a file does not validate: $(pcap_compare validate "${files[@]}" | tail -3)"
n=$(storage_check prefix "$TEST_TMPDIR/sent.pcap" "$out") || fail "the files are not the packets sent, in order: $n"
((n == 5500)) || fail "the files hold $n packets, 5500 were sent (all before the kill had reached the page cache)"
if [[ $format == pcapng ]]; then
    isb=$(storage_check isb "$out/$final_name")
    [[ $isb == *'"isb": null'* ]] || fail "the recovered file has statistics it cannot know: $isb"
fi

rc=0
linecapd_verify "$out" || rc=$?
report=$(cat "$TEST_TMPDIR/verify.out")
((rc == 1)) || fail "verify exited $rc: $report"
grep -q "^RECOVERED $final_name: " <<<"$report" || fail "verify does not report the recovered file: $report"
grep -q "^GAP st:0: the daemon was not capturing between" <<<"$report" || fail "verify does not report the restart: $report"
others=$(grep -v "^RECOVERED \|^GAP st:0: the daemon was not capturing\|^verify " <<<"$report" || true)
[[ -z $others ]] || fail "verify found more: $others"
log "OK: ${#files[@]} $format files, $n packets in order; $(tail -n 1 <<<"$report")"
