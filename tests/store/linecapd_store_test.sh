#!/usr/bin/env bash
# End to end over a store written by the real linecapd: net_pcap replays two generated
# files into two rx queues (mix with IPv6, VLAN, ARP, ICMP, jumbo frames), the daemon
# writes and rotates the capture files and indexes each finished file in the background
# (so `linecap index` afterwards finds nothing to do); a restart indexes files whose index
# is missing or stale; `linecap stats` and `linecap extract` (several queries, with and
# without the index) must agree with tcpdump over all the daemon's files merged. The daemon stamps packets once per burst, so many
# packets share a timestamp: within equal timestamps linecap's order (file name, then file
# position) may differ from mergecap's, so that comparison allows reordering of ties only.
# FORMAT=pcapng: the daemon writes pcapng (output.format), which the store indexes and
# extracts exactly like pcap. Either way `extract --format pcapng` keeps one interface per
# port queue, which tshark must report.
FORMAT=${FORMAT:-pcap}
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/store/daemon_queries.sh"
need_root
need_cmd tcpdump mergecap tshark python3
need_hugepages 256
need_linecapd
need_linecap
make_tmpdir
T=$TEST_TMPDIR
REF="python3 $LINECAP_SRC/tests/store/ref_compare.py"

gen_pcap --count 6000 --mix --both-directions --seed 21 --flows 300 --out "$T/q0.pcap"
gen_pcap --count 5000 --mix --jumbo --both-directions --seed 22 --flows 200 --out "$T/q1.pcap"
mkdir "$T/out"
lcores="0-2"
(($(nproc) >= 3)) || lcores="0@0,1@1,2@1"
write_config "$T/linecap.yaml" "net_pcap0,rx_pcap=$T/q0.pcap,rx_pcap=$T/q1.pcap" "$T/out" eal.lcores="$lcores" \
    port.name=tap port.rx_queues=2 port.rx_descriptors=1024 port.mtu=9000 output.format="$FORMAT" \
    output.blocks_per_queue=64 output.block_size_kb=256 output.rotate.size_mb=1 output.rotate.interval_s=0 \
    metrics.enabled=false

start_linecapd "$T/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 30 || fail "daemon did not start"
# Packets written so far, in finished and in-progress files (the daemon's record layout:
# pcap records after a 24-byte header, or pcapng EPBs among other blocks).
records() {
    python3 - "$T"/out/*."$FORMAT" "$T"/out/.*.part <<'PY'
import struct, sys
n = 0
for path in sys.argv[1:]:
    try:
        data = open(path, "rb").read()
    except OSError:
        continue
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        pos = 0
        while pos + 12 <= len(data):
            t, length = struct.unpack_from("<II", data, pos)
            if length < 12 or pos + length > len(data):
                break
            n += t == 6
            pos += length
    else:
        pos = 24
        while pos + 16 <= len(data):
            caplen = struct.unpack_from("<I", data, pos + 8)[0]
            if pos + 16 + caplen > len(data):
                break
            n += 1
            pos += 16 + caplen
print(n)
PY
}
expected=11000
wait_for_linecapd "(( \$(records) >= expected ))" 60 || fail "capture incomplete: $(records) of $expected packets"
stop_linecapd || fail "linecapd exited $LINECAPD_RC"

shopt -s nullglob
files=("$T"/out/*."$FORMAT")
((${#files[@]} >= 4)) || fail "expected rotation into several files, got ${#files[@]}"
log "linecapd wrote ${#files[@]} files"
mergecap -F nsecpcap -w "$T/all.pcap" "${files[@]}"
eval "$($REF sample "$T/all.pcap")"

# The daemon indexed every file it finished, before it exited.
for f in "${files[@]}"; do [[ -f $f.idx ]] || fail "the daemon did not index $f"; done
"$LINECAP" index --dir "$T/out" 2>"$T/index.log" || fail "index: $(cat "$T/index.log")"
grep -q "^linecap: 0 indexed, ${#files[@]} up to date, 0 failed" "$T/index.log" \
    || fail "daemon-built indexes not current: $(cat "$T/index.log")"
grep -q "indexer:.*finished files left unindexed" "$LINECAPD_LOG" && fail "indexer gave up at stop: $(grep indexer: "$LINECAPD_LOG")"

# Restart over the same directory: one index missing, one stale (its file changed after
# indexing: mtime), one damaged header. The daemon's start-up sweep rebuilds all three.
rm "${files[0]}.idx"
touch -d '@1' "${files[1]}"
printf 'garbage!' | dd of="${files[2]}.idx" conv=notrunc status=none
touch "$T/restart-marker"
start_linecapd "$T/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 30 || fail "daemon did not restart"
# At least the three (files this run finished before the sweep looked may count too).
wait_for_linecapd "grep -Eq 'indexer: ([3-9]|[1-9][0-9]+) capture files in $T/out have no current index' '$LINECAPD_LOG'" 30 \
    || fail "start-up sweep: $(grep indexer: "$LINECAPD_LOG")"
rebuilt() {
    (($(find "${files[0]}.idx" "${files[1]}.idx" "${files[2]}.idx" -newer "$T/restart-marker" 2>/dev/null | wc -l) == 3))
}
wait_for_linecapd rebuilt 60 || fail "the start-up sweep did not rebuild the three indexes"
stop_linecapd || fail "linecapd exited $LINECAPD_RC on restart"
# The second run's own files (the same traffic again) are not part of the comparison.
for f in "$T"/out/*."$FORMAT"; do
    keep=0
    for g in "${files[@]}"; do [[ $f == "$g" ]] && keep=1; done
    ((keep)) || rm -f "$f" "$f.idx" "$f.manifest"
done
"$LINECAP" index --dir "$T/out" 2>"$T/index.log" || fail "index after restart: $(cat "$T/index.log")"
grep -q "^linecap: 0 indexed, ${#files[@]} up to date, 0 failed" "$T/index.log" \
    || fail "start-up sweep left indexes to build: $(cat "$T/index.log")"
log "daemon indexed ${#files[@]} files; restart rebuilt a missing, a stale and a damaged index"
"$LINECAP" stats --dir "$T/out" --json >"$T/stats.json" || fail "stats failed"
python3 - "$T/stats.json" <<'PY' || fail "stats: $(cat "$T/stats.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["packets"] == 11000, s["packets"]
assert s["indexed"] == s["files"], s
assert sorted(x["stream"] for x in s["streams"]) == ["tap/q0", "tap/q1"], s["streams"]
assert {x["stream"]: x["packets"] for x in s["streams"]} == {"tap/q0": 6000, "tap/q1": 5000}
PY

compare_daemon_queries "$T/out" "$T/all.pcap"
# The origin survives a pcapng extraction: one interface per port queue, as tshark reads it.
"$LINECAP" extract --dir "$T/out" --format pcapng -o "$T/got.pcapng" 2>"$T/err" || fail "extract --format pcapng: $(cat "$T/err")"
tshark -r "$T/got.pcapng" -T fields -e frame.interface_name -e frame.interface_description 2>"$T/tshark.err" \
    | sort | uniq -c | awk '{$1=$1; print}' >"$T/ifaces" || fail "tshark: $(cat "$T/tshark.err")"
want_ifaces=$(printf '%s\n' "5000 tap:1 linecap port tap queue 1" "6000 tap:0 linecap port tap queue 0" | sort)
[[ $(sed 's/ (.*)$//' "$T/ifaces" | sort) == "$want_ifaces" ]] || fail "pcapng interfaces as tshark reports them: $(cat "$T/ifaces")"
tcpdump --time-stamp-precision=nano -r "$T/got.pcapng" -w "$T/got-ng.pcap" 2>/dev/null
$REF cut "$T/all.pcap" - - "$T/want.pcap"
$REF compare "$T/want.pcap" "$T/got-ng.pcap" --ties >"$T/cmp" || fail "pcapng extraction: $(cat "$T/cmp")"
log "pcapng extraction: interfaces $(tr '\n' ';' <"$T/ifaces")"
log "OK: store written by linecapd ($FORMAT), ${#files[@]} files, extract agrees with tcpdump"
