#!/usr/bin/env bash
# `linecap extract --alert`: Suricata EVE and Zeek conn.log JSON records, written as those
# tools document them for flows of a synthetic store (tests/store/alert_reference.py), give
# in one answer exactly what `tcpdump -r` gives with each record's equivalent filter over
# its span (cut to the nanosecond by tests/store/ref_compare.py), each packet once — by
# Community ID (which also finds a flow's VLAN-tagged packets) or by 5-tuple; indexed,
# scanned, from a file and from stdin, with the default margin. Bad input: a broken line
# among good ones, a bad address, a bad community_id, a Zeek TSV log, only non-flow
# events, --alert with --filter, a missing file: exit 64, the line named, nothing written.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_cmd tcpdump mergecap python3
LINECAP=${LINECAP:-$LINECAP_BUILD/src/linecap}
[[ -x $LINECAP ]] || skip "linecap binary not found at $LINECAP"
make_tmpdir
T=$TEST_TMPDIR
REF="python3 $LINECAP_SRC/tests/store/ref_compare.py"
ALERT_REF="python3 $LINECAP_SRC/tests/store/alert_reference.py"
STORE=$T/store
T0=1796004600000000000  # 2026-11-30T02:10:00Z

# Whole microseconds (EVE's and Zeek's precision), unique across the two streams.
python3 "$LINECAP_SRC/tests/store/make_store.py" --out "$STORE" --per-file 500 \
    --gen-arg=--mix --gen-arg=--both-directions --gen-arg=--flows --gen-arg=40 \
    --stream "p0:0:1:$T0:2000:2500" \
    --stream "p0:1:2:$((T0 + 1000)):2000:2500" >"$T/files.txt"
mergecap -F nsecpcap -w "$T/all.pcap" "$STORE"/*.pcap
$ALERT_REF records "$T/all.pcap" "$T" || fail "alert_reference.py records"
"$LINECAP" index --dir "$STORE" 2>/dev/null || fail "linecap index"
log "store: $(wc -l <"$T/files.txt") files; records: $(wc -l <"$T/expect.txt") flows"

# The reference: each record's filter and span, then their union.
parts=()
i=0
while read -r lo hi filter; do
    tcpdump -r "$T/all.pcap" -w "$T/part$i.pcap" "$filter" 2>/dev/null || fail "tcpdump: $filter"
    $REF cut "$T/part$i.pcap" "$lo" "$hi" "$T/cut$i.pcap" || fail "cut"
    parts+=("$T/cut$i.pcap")
    i=$((i + 1))
done <"$T/expect.txt"
$ALERT_REF union "$T/expected.pcap" "${parts[@]}" >&2 || fail "union"
# The overlapping EVE alert and flow records of one flow: the union is smaller than the parts.
sum=0
for p in "${parts[@]}"; do sum=$((sum + $(python3 -c 'import sys; from linecap_harness import pcap; print(pcap.count(sys.argv[1]))' "$p"))); done
n=$(python3 -c 'import sys; from linecap_harness import pcap; print(pcap.count(sys.argv[1]))' "$T/expected.pcap")
((n > 0 && n < sum)) || fail "expected a union smaller than its $sum parts, got $n"

cat "$T/eve.json" "$T/zeek.json" >"$T/alerts.json"
for mode in index no-index; do
    extra=()
    [[ $mode == no-index ]] && extra=(--no-index)
    "$LINECAP" extract --dir "$STORE" --alert "$T/alerts.json" --margin 0 "${extra[@]}" -o "$T/got.pcap" 2>"$T/err.txt" ||
        fail "$mode: exit $?: $(cat "$T/err.txt")"
    grep -q "1 lines without a flow skipped (line 3: no flow in it" "$T/err.txt" || fail "$mode: skip note: $(cat "$T/err.txt")"
    $REF compare "$T/expected.pcap" "$T/got.pcap" >&2 || fail "$mode: --alert differs from tcpdump"
done
log "EVE + Zeek records, margin 0: $n packets = tcpdump's, indexed and scanned"

# From stdin, and with the default margin (60 s: every flow whole).
cat "$T/alerts.json" | "$LINECAP" extract --dir "$STORE" --alert - -o "$T/margin.pcap" 2>"$T/err.txt" ||
    fail "stdin: $(cat "$T/err.txt")"
parts=()
i=0
while read -r lo hi filter; do
    tcpdump -r "$T/all.pcap" -w "$T/whole$i.pcap" "$filter" 2>/dev/null || fail "tcpdump: $filter"
    parts+=("$T/whole$i.pcap")
    i=$((i + 1))
done <"$T/expect.txt"
$ALERT_REF union "$T/whole.pcap" "${parts[@]}" >&2 || fail "union"
$REF compare "$T/whole.pcap" "$T/margin.pcap" >&2 || fail "default margin: differs from the whole flows"
log "stdin, default margin: the records' whole flows"

# --- bad input: exit 64, the line named, nothing written ---------------------------
bad() {  # bad NAME PATTERN: feeds $T/bad.json; expects exit 64 naming PATTERN, no output
    local name=$1 pattern=$2 rc=0
    rm -f "$T/out.pcap"
    "$LINECAP" extract --dir "$STORE" --alert "$T/bad.json" -o "$T/out.pcap" 2>"$T/err.txt" || rc=$?
    ((rc == 64)) || fail "$name: exit $rc, expected 64: $(cat "$T/err.txt")"
    grep -q -- "$pattern" "$T/err.txt" || fail "$name: no '$pattern' in: $(cat "$T/err.txt")"
    [[ ! -e $T/out.pcap ]] || fail "$name: an output was written"
    log "bad input ($name): $(tail -n 1 "$T/err.txt")"
}
{ head -n 1 "$T/eve.json"; echo '{"timestamp": "2026-11-30T02:10:00.000000+0000", "src_ip": '; tail -n 1 "$T/zeek.json"; } >"$T/bad.json"
bad "truncated line" "line 2: not a JSON object"
{ cat "$T/eve.json"; sed 's/"id.orig_h": "[^"]*"/"id.orig_h": "10.0.0.300"/' "$T/zeek.json" | head -n 1; } >"$T/bad.json"
bad "bad address" "line 5: Zeek record without valid id.orig_h/id.resp_h"
sed '1s/"community_id": "[^"]*"/"community_id": "1:not-base64!"/' "$T/eve.json" >"$T/bad.json"
bad "bad community_id" "line 1: community_id 1:not-base64!"
printf '#separator \\x09\n#fields\tts\tuid\tid.orig_h\n1796004600.0\tC1\t10.0.0.1\n' >"$T/bad.json"
bad "Zeek TSV" "line 1: not a JSON object"
echo '{"timestamp": "2026-11-30T02:10:00.000000+0000", "event_type": "stats", "stats": {}}' >"$T/bad.json"
bad "no flow" "no flow record in it"
rc=0
"$LINECAP" extract --dir "$STORE" --alert "$T/alerts.json" --filter tcp -o "$T/out.pcap" 2>"$T/err.txt" || rc=$?
((rc == 64)) && grep -q -- "--filter does not go with --alert" "$T/err.txt" || fail "--alert --filter: exit $rc: $(cat "$T/err.txt")"
rc=0
"$LINECAP" extract --dir "$STORE" --alert "$T/missing.json" -o "$T/out.pcap" 2>"$T/err.txt" || rc=$?
((rc == 64)) && grep -q "missing.json: No such file" "$T/err.txt" || fail "missing file: exit $rc: $(cat "$T/err.txt")"
[[ ! -e $T/out.pcap ]] || fail "an output was written"
log "OK: --alert is tcpdump's answer for every record, each packet once; bad input refused"
