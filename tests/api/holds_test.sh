#!/usr/bin/env bash
# Holds: evidence bundles that retention never deletes (archive/holds.hpp).
#   - `linecap hold create` for a filter and range and for EVE alert records: the bundle's
#     packets.pcap is what `linecap extract` writes for the same query and what tcpdump -r
#     selects (cut to the nanosecond), SHA256SUMS checks with sha256sum -c, hold.json says
#     who, why, the query, packets and expiry; listed (text, JSON), counted by stats
#   - refused, nothing left behind: no packets, no reason, an expiry in the past or not a
#     time, the whole store, unknown words; release of an unknown or unsafe ID
#   - expiry: a hold created with --expires 2s is gone from the listing and the disk
#   - POST/GET/DELETE /api/v1/holds over TLS with the client certificate and with a bearer
#     token: 201 with the record, the list, the release; refused: no credentials (401),
#     bad JSON, an unknown key, a wrong type (400), no packets (422), a huge body, PUT
#     (405); one audit record of a hold created is printed
#   - a running linecapd (net_null0, retention max_bytes) rolls its store over: the hold
#     of its first file outlives the file, still checks, and its metrics say 1 hold
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/api/api_lib.sh"
need_cmd curl jq sha256sum tcpdump openssl python3
[[ -x $LINECAP ]] || skip "linecap binary not found at $LINECAP"
make_tmpdir
T=$TEST_TMPDIR
REF="python3 $LINECAP_SRC/tests/store/ref_compare.py"
STORE=$T/store
api_store "$STORE" 600
HOLDS=$STORE/holds
"$LINECAP" extract --dir "$STORE" -o "$T/all.pcap" 2>/dev/null || fail "linecap extract (everything)"

expect_rc() {  # expect_rc CODE PATTERN CMD...: runs CMD; its exit status and stderr
    local want=$1 pattern=$2 rc=0
    shift 2
    "$@" >"$T/out.txt" 2>"$T/err.txt" || rc=$?
    ((rc == want)) || fail "exit $rc (expected $want): $*: $(cat "$T/err.txt")"
    grep -q -- "$pattern" "$T/err.txt" || fail "no '$pattern' from $*: $(cat "$T/err.txt")"
}
bundles() { find "$HOLDS" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# --- CLI: a filter over a range --------------------------------------------------------
FROM=2026-11-30T02:10:00.000100000Z TO=2026-11-30T02:10:00.000400500Z
Q=(--from "$FROM" --to "$TO" --filter tcp)
id1=$("$LINECAP" hold create --dir "$STORE" "${Q[@]}" --reason "case 4711: CLI" 2>"$T/err.txt") ||
    fail "hold create: $(cat "$T/err.txt")"
[[ -f $HOLDS/$id1/packets.pcap ]] || fail "no bundle for $id1: $(ls -la "$HOLDS")"
(cd "$HOLDS/$id1" && sha256sum --quiet -c SHA256SUMS) || fail "sha256sum -c in $id1"
"$LINECAP" extract --dir "$STORE" "${Q[@]}" -o "$T/extract.pcap" 2>/dev/null || fail "extract"
cmp "$T/extract.pcap" "$HOLDS/$id1/packets.pcap" || fail "the hold differs from extract's answer"
tcpdump --time-stamp-precision=nano -r "$T/all.pcap" -w "$T/tcp.pcap" tcp 2>/dev/null || fail "tcpdump"
$REF cut "$T/tcp.pcap" 1796004600000100000 1796004600000400500 "$T/ref.pcap" || fail "cut"
$REF compare "$T/ref.pcap" "$HOLDS/$id1/packets.pcap" >&2 || fail "the hold differs from tcpdump -r"
n1=$(python3 -c 'import sys; from linecap_harness import pcap; print(pcap.count(sys.argv[1]))' "$T/ref.pcap")
jq -e --arg who "user:$(id -un)" --argjson n "$n1" \
    '.created_by == $who and .reason == "case 4711: CLI" and .packets == $n and .expires == null and
     .query.selections[0].filter == "tcp" and .query.selections[0].from == "2026-11-30T02:10:00.000100000Z" and
     (.sha256 | length) == 64' "$HOLDS/$id1/hold.json" >/dev/null || fail "hold.json: $(cat "$HOLDS/$id1/hold.json")"
log "hold $id1: $n1 packets, as extract and tcpdump -r; sha256sum -c OK"

# --- CLI: EVE alert records ----------------------------------------------------------------
python3 "$LINECAP_SRC/tests/store/alert_reference.py" records "$T/all.pcap" "$T" || fail "alert records"
id2=$("$LINECAP" hold create --dir "$STORE" --alert "$T/eve.json" --margin 0 --reason "alert 2019401" --expires 30d \
    2>"$T/err.txt") || fail "hold create --alert: $(cat "$T/err.txt")"
"$LINECAP" extract --dir "$STORE" --alert "$T/eve.json" --margin 0 -o "$T/alert.pcap" 2>/dev/null || fail "extract --alert"
cmp "$T/alert.pcap" "$HOLDS/$id2/packets.pcap" || fail "the alert hold differs from extract --alert"
jq -e '.expires != null and (.query.selections | length) == 3 and (.query.origin | startswith("alert records of"))' \
    "$HOLDS/$id2/hold.json" >/dev/null || fail "alert hold.json: $(cat "$HOLDS/$id2/hold.json")"
"$LINECAP" hold list --dir "$STORE" >"$T/list.txt" 2>&1 || fail "hold list: $(cat "$T/list.txt")"
grep -q "^$id1 .* case 4711: CLI$" "$T/list.txt" && grep -q "^$id2 .*alert 2019401$" "$T/list.txt" ||
    fail "hold list: $(cat "$T/list.txt")"
"$LINECAP" hold list --dir "$STORE" --json | jq -e '.count == 2 and .bytes > 0 and (.holds | map(.id)) == ["'"$id1"'", "'"$id2"'"]' \
    >/dev/null || fail "hold list --json: $("$LINECAP" hold list --dir "$STORE" --json)"
"$LINECAP" stats --dir "$STORE" 2>/dev/null | grep -q "^holds      2 " || fail "stats: no holds line"
"$LINECAP" stats --dir "$STORE" --json 2>/dev/null | jq -e '.holds == 2 and .hold_bytes > 0' >/dev/null || fail "stats --json"
log "hold $id2 of 3 EVE records (= extract --alert); list, list --json and stats count 2"

# --- CLI: refused, nothing left behind -----------------------------------------------------
before=$(bundles)
expect_rc 1 "no packets in the store match the query: nothing held" \
    "$LINECAP" hold create --dir "$STORE" --filter "host 203.0.113.99" --reason "nothing"
expect_rc 64 "--reason TEXT is required" "$LINECAP" hold create --dir "$STORE" "${Q[@]}"
expect_rc 64 "is not in the future" "$LINECAP" hold create --dir "$STORE" "${Q[@]}" --reason x --expires 2020-01-01
expect_rc 64 "--expires: " "$LINECAP" hold create --dir "$STORE" "${Q[@]}" --reason x --expires 5x
expect_rc 64 "would copy the whole store" "$LINECAP" hold create --dir "$STORE" --reason x
expect_rc 64 "expected create, list or release, not 'keep'" "$LINECAP" hold keep --dir "$STORE"
expect_rc 64 "unknown option '--frm'" "$LINECAP" hold create --dir "$STORE" --frm "$FROM" --reason x
expect_rc 64 "no hold 20990101T000000Z-00000000" "$LINECAP" hold release --dir "$STORE" 20990101T000000Z-00000000
expect_rc 64 "'../store' is not a hold id" "$LINECAP" hold release --dir "$STORE" ../store
(($(bundles) == before)) || fail "a refused hold left something: $(ls -a "$HOLDS")"
log "refused: no packets (1), no reason, past or bad expiry, whole store, unknown words, bad IDs (64)"

# --- expiry and release ----------------------------------------------------------------
id3=$("$LINECAP" hold create --dir "$STORE" "${Q[@]}" --reason "short" --expires 2s 2>/dev/null) || fail "hold --expires 2s"
"$LINECAP" hold list --dir "$STORE" 2>/dev/null | grep -q "^$id3 " || fail "$id3 not listed"
wait_for "! '$LINECAP' hold list --dir '$STORE' 2>/dev/null | grep -q '^$id3 '" 10 || fail "$id3 still listed"
[[ ! -e $HOLDS/$id3 ]] || fail "expired $id3 still on disk"
"$LINECAP" hold release --dir "$STORE" "$id2" 2>"$T/err.txt" || fail "release: $(cat "$T/err.txt")"
[[ ! -e $HOLDS/$id2 ]] || fail "released $id2 still on disk"
log "expiry: $id3 removed by the listing after 2 s; $id2 released"

# --- the API ---------------------------------------------------------------------------
serve_tls_and_token "$STORE" analyst2
show_on_failure "$AUDIT"
URL=https://127.0.0.1:$PORT/api/v1/holds
CERT=(--cert "$T/client.pem" --key "$T/client.key")
api() {  # api CODE CURL-ARGS...: the answer in $T/resp.json; fails unless the status is CODE
    local want=$1 code
    shift
    code=$(curl -sS --cacert "$T/ca.pem" -o "$T/resp.json" -w '%{http_code}' "$@") || fail "curl $*"
    [[ $code == "$want" ]] || fail "HTTP $code (expected $want): $*: $(head -c 300 "$T/resp.json")"
}
body="{\"reason\": \"case 4711: API\", \"from\": \"$FROM\", \"to\": \"$TO\", \"filter\": \"tcp\", \"expires\": \"7d\"}"
api 201 "${CERT[@]}" -H 'Content-Type: application/json' --data-binary "$body" "$URL"
id4=$(jq -r .id "$T/resp.json")
jq -e '.created_by | test("^cert:.*CN ?= ?analyst1")' "$T/resp.json" >/dev/null || fail "created_by: $(cat "$T/resp.json")"
cmp "$T/extract.pcap" "$HOLDS/$id4/packets.pcap" || fail "the API's hold differs from extract's answer"
(cd "$HOLDS/$id4" && sha256sum --quiet -c SHA256SUMS) || fail "sha256sum -c in $id4"
api 200 -H "Authorization: Bearer $TOKEN" "$URL"
jq -e '.count == 2 and (.holds | map(.id)) == ["'"$id1"'", "'"$id4"'"]' "$T/resp.json" >/dev/null ||
    fail "GET: $(cat "$T/resp.json")"
api 401 "$URL"
api 400 "${CERT[@]}" --data-binary '{"reason": "x", "from": ' "$URL"
grep -q "not a JSON object" "$T/resp.json" || fail "bad JSON: $(cat "$T/resp.json")"
api 400 "${CERT[@]}" --data-binary '{"reason": "x", "form": "2026-11-30T02:10:00Z"}' "$URL"
grep -q "unknown key 'form'" "$T/resp.json" || fail "unknown key: $(cat "$T/resp.json")"
api 400 "${CERT[@]}" --data-binary '{"reason": 7, "filter": "tcp"}' "$URL"
api 400 "${CERT[@]}" --data-binary '{"filter": "tcp"}' "$URL"
grep -q "reason: required" "$T/resp.json" || fail "no reason: $(cat "$T/resp.json")"
api 422 "${CERT[@]}" --data-binary '{"reason": "x", "filter": "host 203.0.113.99"}' "$URL"
grep -q "nothing held" "$T/resp.json" || fail "no packets: $(cat "$T/resp.json")"
python3 -c 'print("{\"reason\": \"" + "x" * 100000 + "\", \"filter\": \"tcp\"}")' >"$T/huge.json"
code=$(curl -sS --cacert "$T/ca.pem" "${CERT[@]}" -o "$T/resp.json" -w '%{http_code}' --data-binary @"$T/huge.json" "$URL" 2>/dev/null || true)
[[ $code == 413 || $code == 431 ]] || fail "huge body: HTTP $code"
api 405 "${CERT[@]}" -X PUT --data-binary '{}' "$URL"
api 200 "${CERT[@]}" -X DELETE "$URL/$id4"
[[ ! -e $HOLDS/$id4 ]] || fail "released $id4 still on disk"
api 404 "${CERT[@]}" -X DELETE "$URL/$id4"
stop_serve
record=$(grep -m1 "\"hold $id4 created" "$AUDIT") || fail "no audit record of $id4: $(cat "$AUDIT")"
log "audit record: $record"
grep -q "\"hold $id4 released by cert:" "$AUDIT" || fail "no audit record of the release"
log "API: created (cert), listed (token), released; refused 401, 400 x4, 422, $code, 405, 404"

# --- a running linecapd rolls its store over; the hold stays ------------------------------
need_linecapd
RUN=$T/run
mkdir "$RUN"
MPORT=$(free_tcp_port)
cat >"$T/run.yaml" <<YAML
eal: { lcores: "0-1", hugepages: false }
ports:
  - { name: p0, device: net_null0 }
capture: { mbufs: 2047 }
output:
  directory: "$RUN"
  index: false
  block_size_kb: 64
  blocks_per_queue: 4
  rotate: { size_mb: 1, interval_s: 0 }
  retention: { max_bytes: 48MiB }
metrics: { listen: "127.0.0.1:$MPORT" }
YAML
start_linecapd "$T/run.yaml"
# The newest finished file (its manifest written): retention reaches it last.
newest_finished() { find "$RUN" -maxdepth 1 -name '*.pcap.manifest' -printf '%f\n' | sort | tail -n 1; }
wait_for_linecapd "[[ \$(find '$RUN' -maxdepth 1 -name '*.pcap.manifest' | wc -l) -ge 2 ]]" 60
# net_null fills a 1 MiB file every few milliseconds, so retention reaches the newest file
# within a few hundred: sooner than a hold can be made. The daemon is paused while the file
# is chosen and held, and resumed to roll the store over.
pause_linecapd
first=$(newest_finished)
first=${first%.manifest}
stamp=${first%%Z-*}  # 20261203T121000.123456789
from="${stamp:0:4}-${stamp:4:2}-${stamp:6:2}T${stamp:9:2}:${stamp:11:2}:${stamp:13:2}${stamp:15}Z"
to=$(python3 -c 'import calendar, sys, time
s, f = sys.argv[1].rstrip("Z").split(".")
ns = calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%S")) * 10**9 + int(f) + 10**6
print(f"{ns // 10**9}.{ns % 10**9:09d}")' "$from")
id5=$("$LINECAP" hold create --config "$T/run.yaml" --from "$from" --to "$to" --reason "before the rollover" \
    2>"$T/err.txt") ||
    fail "hold create on the running store: $(cat "$T/err.txt")"
resume_linecapd
wait_for_linecapd "[[ ! -e '$RUN/$first' ]]" 60
deleted_files() { curl -sS "http://127.0.0.1:$MPORT/metrics" | awk '$1 == "linecap_retention_deleted_files_total" { print $2 }'; }
wait_for_linecapd "[[ \$(deleted_files) =~ ^[1-9] ]]" 20
deleted=$(deleted_files)
(cd "$RUN/holds/$id5" && sha256sum --quiet -c SHA256SUMS) || fail "the hold does not check after the rollover"
# Store figures (holds among them) are sampled once a second: the first scrape after the
# rollover may predate the hold, a later one may not.
scrape_holds() { curl -sS "http://127.0.0.1:$MPORT/metrics" >"$T/metrics.txt" && grep -q '^linecap_holds 1$' "$T/metrics.txt"; }
wait_for "scrape_holds" 5 || fail "metrics: $(grep "^linecap_hold" "$T/metrics.txt")"
hold_bytes=$(awk '$1 == "linecap_hold_bytes" { print $2 }' "$T/metrics.txt")
[[ $hold_bytes =~ ^[0-9.e+]+$ && $hold_bytes != 0 ]] || fail "linecap_hold_bytes '$hold_bytes'"
stop_linecapd || fail "linecapd exited $LINECAPD_RC"
log "linecapd: retention deleted $deleted files ($first, the held one, among them); hold $id5 intact; linecap_holds 1, linecap_hold_bytes $hold_bytes"
log "OK: holds by CLI and API, exact, checked, listed, expired, released, refused, kept past retention"
