#!/usr/bin/env bash
# Integrity at query time. linecapd writes a store with manifests and
# indexes; then one address byte of a packet in a finished file is changed with the file's
# mtime kept — an address that appears nowhere else, so the file's index says it is absent.
#  1. Before any scrub: `linecap extract` for that host notices that the file changed
#     after it was indexed, names it on stderr, scans it and exits 3; with
#     --accept-damaged it exits 0 with exactly tcpdump's answer.
#  2. linecapd runs again with a 2 s scrub period: the scrub marks the file (FILE.damaged)
#     and the metrics show the mismatch; extract names the file as marked damaged and exits
#     3, --accept-damaged gives tcpdump's answer; `linecap stats` and `linecapd verify`
#     list it.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_cmd tcpdump mergecap python3
need_hugepages 256
need_linecapd
need_linecap
make_tmpdir
T=$TEST_TMPDIR
REF="python3 $LINECAP_SRC/tests/store/ref_compare.py"

gen_pcap --count 4000 --mix --both-directions --seed 41 --flows 200 --out "$T/q0.pcap"
mkdir "$T/out"
lcores="0-1"
METRICS_LISTEN=127.0.0.1:$(free_tcp_port)
config() {  # $1: scrub period
    write_config "$T/linecap.yaml" "net_pcap0,rx_pcap=$T/q0.pcap" "$T/out" eal.lcores="$lcores" port.name=tap \
        port.rx_queues=1 port.rx_descriptors=1024 output.blocks_per_queue=64 output.block_size_kb=256 \
        output.rotate.size_mb=1 output.rotate.interval_s=0 output.scrub.enabled=true output.scrub.period="$1"
}
metrics() { metric_sum "http://$METRICS_LISTEN/metrics" "$@"; }

# --- a store written by the daemon (the scrub's period far away) ---------------------------
config 7d
start_linecapd "$T/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 30 || fail "daemon did not start"
expected=$(($(stat -c %s "$T/q0.pcap") - 24))
wait_for_linecapd "(( \$(record_bytes '$T/out') >= expected ))" 60 || fail "capture incomplete: $(record_bytes "$T/out") of $expected bytes"
stop_linecapd || fail "linecapd exited $LINECAPD_RC"
shopt -s nullglob
files=("$T"/out/*.pcap)
((${#files[@]} >= 3)) || fail "expected several files, got ${#files[@]}"
for f in "${files[@]}"; do
    [[ -f $f.manifest && -f $f.idx ]] || fail "$f: no manifest or index"
    [[ ! -e $f.damaged ]] || fail "$f marked damaged before anything changed"
done

# --- one address byte changed, mtime kept -----------------------------------------------
victim=${files[1]}
host=$(python3 - "$victim" <<'PY'
import os, struct, sys
path = sys.argv[1]
st = os.stat(path)
data = bytearray(open(path, "rb").read())
order = "<" if struct.unpack_from("<I", data)[0] in (0xA1B2C3D4, 0xA1B23C4D) else ">"
pos = 24
while pos + 16 <= len(data):
    caplen = struct.unpack_from(order + "I", data, pos + 8)[0]
    frame = pos + 16
    # An untagged IPv4 frame: change the first byte of its source address.
    if caplen >= 34 and data[frame + 12:frame + 14] == b"\x08\x00":
        data[frame + 26] = 203
        open(path, "r+b").write(data)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        print(".".join(str(b) for b in data[frame + 26:frame + 30]))
        break
    pos = frame + caplen
else:
    sys.exit("no IPv4 frame")
PY
) || fail "could not change $victim"
log "changed a source address in $(basename "$victim") to $host (mtime kept)"
answer() {  # tcpdump's answer over the whole store, as a nanosecond pcap
    mergecap -F nsecpcap -w "$T/all.pcap" "$T"/out/*.pcap
    tcpdump --time-stamp-precision=nano -r "$T/all.pcap" -w "$T/want.pcap" "host $host" 2>/dev/null
    (($(tcpdump -r "$T/want.pcap" 2>/dev/null | wc -l) == 1)) || fail "tcpdump finds $(tcpdump -r "$T/want.pcap" 2>/dev/null | wc -l) packets of $host, expected the changed one"
}
answer

# extract: one line naming the file and why on stderr, exit 3; accepted: exit 0, same
# packets as tcpdump either way.
extract_host() {  # $1: expected status, $2: what stderr must say about the victim, $3...: options
    local want=$1 why=$2 rc=0
    shift 2
    "$LINECAP" extract --dir "$T/out" --filter "host $host" -o "$T/got.pcap" "$@" 2>"$T/err" || rc=$?
    ((rc == want)) || fail "extract $*: exit $rc, expected $want: $(cat "$T/err")"
    grep -q "^linecap: integrity: $victim: .*$why" "$T/err" || fail "extract $*: stderr does not name $victim ($why): $(cat "$T/err")"
    (($(grep -c "^linecap: integrity: " "$T/err") == 1)) || fail "extract $*: one integrity line expected: $(cat "$T/err")"
    $REF compare "$T/want.pcap" "$T/got.pcap" >"$T/cmp" || fail "extract $*: differs from tcpdump: $(cat "$T/cmp")"
}
extract_host 3 "index older than the file"
extract_host 0 "index older than the file" --accept-damaged
# Read the whole help first: grep -q stops at the first match, and under pipefail the
# SIGPIPE of a writer still writing would read as a failure.
help_text=$("$LINECAP" --help)
grep -q -- "--accept-damaged" <<<"$help_text" || fail "--help does not document --accept-damaged"
log "before the scrub: the changed file's stale index is noticed (exit 3), the answer is tcpdump's"

# --- the scrub finds it ----------------------------------------------------------------
config 2s
start_linecapd "$T/linecap.yaml"
wait_for_linecapd "[[ -e '$victim.damaged' ]]" 60 || fail "the scrub did not mark $victim"
wait_for_linecapd "(( \$(metrics linecap_scrub_damaged_files) == 1 ))" 30 \
    || fail "linecap_scrub_damaged_files: $(metrics linecap_scrub_damaged_files)"
(($(metrics linecap_scrub_files_total result=mismatch) >= 1)) || fail "no mismatch counted"
# The others check out. Waited for, not read once: the pass may still be on its way past the
# victim, and it may resume where the first run's pass stopped (the files before that are
# checked again by the next pass, 2 s later).
wait_for_linecapd "(( \$(metrics linecap_scrub_files_total result=ok) >= ${#files[@]} - 1 ))" 60 \
    || fail "only $(metrics linecap_scrub_files_total result=ok) files checked ok"
(($(metrics linecap_scrub_read_bytes_total) > 0)) || fail "no bytes read"
grep -q "scrub: $victim: bytes differ from the manifest: sha256" "$LINECAPD_LOG" || fail "the mismatch is not logged"
for f in "${files[@]}"; do [[ $f == "$victim" || ! -e $f.damaged ]] || fail "$f marked, but it was not changed"; done
stop_linecapd || fail "linecapd exited $LINECAPD_RC"
grep -q "^started [1-9]" "$T/out/linecap-scrub.state" || fail "the scrub kept no state: $(cat "$T/out/linecap-scrub.state")"
log "scrub marked $(basename "$victim"): $(cat "$victim.damaged")"

answer
extract_host 3 "marked damaged (.* scrub: bytes differ from the manifest: sha256"
extract_host 0 "marked damaged" --accept-damaged
# Files the query does not touch raise nothing.
rc=0
"$LINECAP" extract --dir "$T/out" --filter "host $host" --to 2000-01-01 -o "$T/none.pcap" 2>"$T/err" || rc=$?
((rc == 0)) && [[ ! -s $T/err ]] || fail "extract outside the damaged file: exit $rc: $(cat "$T/err")"

"$LINECAP" stats --dir "$T/out" >"$T/stats" || fail "stats failed"
grep -q "^damaged    1 file(s) marked by the scrub" "$T/stats" || fail "stats: $(cat "$T/stats")"
grep -q "^  $(basename "$victim"): .*sha256" "$T/stats" || fail "stats does not list $victim: $(cat "$T/stats")"
rc=0
"$LINECAPD" verify "$T/out" >"$T/verify" || rc=$?
((rc == 1)) || fail "verify: exit $rc"
grep -q "^DAMAGED $(basename "$victim"): marked by the scrub" "$T/verify" || fail "verify: $(cat "$T/verify")"
grep -q "^MISMATCH $(basename "$victim"): sha256" "$T/verify" || fail "verify: $(cat "$T/verify")"
(($(grep -c "^MISMATCH" "$T/verify") == 1 && $(grep -c "^DAMAGED" "$T/verify") == 1)) || fail "verify: $(cat "$T/verify")"
log "OK: extract, stats and verify report the file the scrub marked; the answer is tcpdump's"
