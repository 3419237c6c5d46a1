#!/usr/bin/env bash
# Rotation on wall-clock boundaries (rotate.interval_s: 2, no size rotation) with live
# traffic a few packets at a time: a file is finished at the end of its interval even
# when no packet follows (first, a quiet stretch of ~7 s after a few packets); an
# interval without packets produces no file (documented: no empty files); and over
# several intervals every file holds only packets of one 2-s interval, is named after its
# first packet, and is finished shortly after its interval's end — the same short delay
# every time, no drift (the manifest's span_end_ns is the moment it was finished).
# Every moment is judged from the daemon's records (packet timestamps, span_end_ns), never
# from when this shell looked: on a loaded machine it can look seconds late.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/storage/storage_lib.sh"
need_root
need_cmd tcpreplay
need_hugepages 256
make_tmpdir
veth_pair interval
out="$TEST_TMPDIR/out"
mkdir "$out"
gen_pcap --count 4 --size 200 --seed 81 --out "$TEST_TMPDIR/few.pcap"
storage_config "$TEST_TMPDIR/linecap.yaml" "$(af_packet_device 1)" 1 "$out" output.block_size_kb=64 \
    output.rotate.size_mb=0 output.rotate.interval_s=2
interval_ns=2000000000
# Finished at most this long after its interval's end. The worker notices the boundary
# within a millisecond and the writer finishes the file at once; the rest is headroom for
# a busy 2-core machine.
max_delay=1.5

# in_middle AFTER: true while the wall clock is 0.3 .. 1.2 s into an interval later than
# interval number AFTER.
in_middle() {
    local now=${EPOCHREALTIME/[.,]/}000
    (( now / interval_ns > $1 && now % interval_ns >= 300000000 && now % interval_ns <= 1200000000 ))
}
interval_now() { local now=${EPOCHREALTIME/[.,]/}000; echo $((now / interval_ns)); }
send() {
    local sent
    sent=$(replay_into_ns "$TEST_TMPDIR/few.pcap" 1000)
    ((sent == 4)) || fail "tcpreplay sent $sent of 4"
}

start_linecapd "$TEST_TMPDIR/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 60

# A few packets, then nothing: the file is finished at the boundary all the same.
current=$(interval_now)
wait_for "in_middle $current" 5 || fail "clock"
send
sent_in=$(interval_now)
wait_for_linecapd "(( \$(count_finished '$out') == 1 ))" 10 || fail "the file was not finished at the end of its interval"
wait_for "[[ -z \$(find '$out' -name '*.manifest-pending') ]]" 30 || fail "the manifest of the first file was not written"
storage_check interval "$out" 2 "$max_delay" >"$TEST_TMPDIR/quiet.out" \
    || fail "the quiet file was not finished at its interval's end: $(cat "$TEST_TMPDIR/quiet.out")"
# Three more intervals without a packet: no new file (an empty interval makes none).
if wait_for "(( \$(count_finished '$out') > 1 )) || (( \$(interval_now) > sent_in + 3 ))" 8 \
    && (($(count_finished "$out") > 1)); then
    fail "a file appeared without traffic: $(ls "$out")"
fi
log "quiet: one file, finished at its boundary; none for the 3 empty intervals after it"

# Several intervals with a few packets each, one left out. Which interval a send's packets
# fell in is their timestamps' to say (a send held up past a boundary lands in the next):
# there is one file per interval that had packets, and every packet is in a finished file
# before the stop.
last=$(interval_now)
sends=1
for round in 1 2 3 4 5 6; do
    wait_for "in_middle $last" 5 || fail "clock"
    last=$(interval_now)
    ((round == 4)) && continue   # an interval without traffic
    send
    sends=$((sends + 1))
done
wait_for_linecapd "(( \$(pcap_compare count --quiet '$out') == 4 * sends ))" 10 \
    || fail "$(pcap_compare count --quiet "$out") of $((4 * sends)) packets in finished files: one was not finished at its boundary"
files=$(count_finished "$out")
stop_linecapd || fail "linecapd exited $LINECAPD_RC"
(($(count_finished "$out") == files)) || fail "stopping made $(count_finished "$out") files of $files: the stop finished one"
storage_check interval "$out" 2 "$max_delay" >"$TEST_TMPDIR/interval.out" || fail "$(cat "$TEST_TMPDIR/interval.out")"
cat "$TEST_TMPDIR/interval.out" >&2
linecapd_verify "$out" || fail "verify: $(cat "$TEST_TMPDIR/verify.out")"
log "OK: $files files for $sends sends over $((last - sent_in + 1)) intervals, each finished within ${max_delay}s of its boundary"
