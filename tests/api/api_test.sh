#!/usr/bin/env bash
# The retrieval API with real clients (curl, tshark, a raw socket), over TLS with client
# certificates and bearer tokens: answers byte-identical to `linecap extract` for the same
# query (time ranges, filters, Community ID; the Community ID query also checked against
# Wireshark's own Community ID dissector), authentication refusals, a tokens file with
# bad permissions, bad input (malformed times, from > to, a filter libpcap rejects,
# unknown parameters, an oversized request), max_bytes ending cleanly with its trailer, an
# HTTP/1.0 client's answer without chunk framing (as tcpdump -r), Expect: 100-continue,
# a client disconnecting mid-stream (audited, no thread or descriptor left behind), and
# 100 concurrent requests against a limit of 4. Every request leaves an audit record.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/api/api_lib.sh"
need_cmd curl tshark tcpdump openssl python3 capinfos
need_linecap
make_tmpdir
log "building a store"
api_appliance 8000 alice --jumbo
api_config "$T/api.yaml" "$STORE" "127.0.0.1:$PORT" "$AUDIT" \
    "${API_TLS[@]}" \
    "tokens_file: \"$T/tokens\"" "max_queries: 4" "client_timeout: 5s" "max_request_bytes: 4096" \
    "max_connections_per_client: 128"  # the 100 concurrent requests below come from one address
show_on_failure "$AUDIT"

# --- a tokens file others can read: refused, naming the mode ----------------------------
chmod 640 "$T/tokens"
rc=0
"$LINECAP" serve --config "$T/api.yaml" 2>"$T/bad-perm.err" || rc=$?
((rc == 78)) || fail "serve with a group-readable tokens file exited $rc, want 78"
grep -q "accessible by group or others (mode 0640)" "$T/bad-perm.err" || fail "no mode in: $(cat "$T/bad-perm.err")"
chmod 600 "$T/tokens"
# Plain HTTP or no authentication away from loopback: refused.
api_config "$T/plain.yaml" "$STORE" "192.0.2.1:$PORT" "$AUDIT" "tokens_file: \"$T/tokens\""
rc=0; "$LINECAP" serve --config "$T/plain.yaml" 2>"$T/plain.err" || rc=$?
((rc == 78)) && grep -q "not a loopback address" "$T/plain.err" || fail "plain HTTP off loopback: rc $rc $(cat "$T/plain.err")"
api_config "$T/noauth.yaml" "$STORE" "127.0.0.1:$PORT" "$AUDIT"
rc=0; "$LINECAP" serve --config "$T/noauth.yaml" 2>"$T/noauth.err" || rc=$?
((rc == 78)) && grep -q "no way to authenticate" "$T/noauth.err" || fail "no authentication: rc $rc $(cat "$T/noauth.err")"

start_serve "$T/api.yaml"
CA=(--cacert "$T/ca.pem")
TOK=(-H "Authorization: Bearer $TOKEN")
CERT=(--cert "$T/client.pem" --key "$T/client.key")

# --- authentication ------------------------------------------------------------------------
code() { curl -s -o /dev/null -w '%{http_code}' "${CA[@]}" "$@"; }
[[ $(code "$URL/api/v1/status") == 401 ]] || fail "no credentials: not 401"
[[ $(code -H "Authorization: Bearer wrong-token-0123456789" "$URL/api/v1/status") == 401 ]] || fail "wrong token: not 401"
[[ $(code "${TOK[@]}" "$URL/api/v1/status") == 200 ]] || fail "token: not 200"
[[ $(code "${CERT[@]}" "$URL/api/v1/status") == 200 ]] || fail "client certificate: not 200"
rc=0
curl -s -o /dev/null "${CA[@]}" --cert "$T/rogue.pem" --key "$T/rogue.key" "$URL/api/v1/status" || rc=$?
((rc != 0)) || fail "a certificate from another CA was accepted"
log "wrong certificate: curl exit $rc (handshake refused)"
grep -q '"who":"token:alice"' "$AUDIT" || fail "audit: no record naming token alice"
grep -q '"who":"cert:/O=forensics/CN=analyst1"' "$AUDIT" || fail "audit: no record naming the certificate subject"
grep -q '"outcome":"refused: invalid credentials: bearer token not in api.tokens_file"' "$AUDIT" || fail "audit: wrong token not recorded"

# --- answers equal linecap extract --------------------------------------------------------
eval "$(python3 "$LINECAP_SRC/tests/store/ref_compare.py" sample <(cat "$STORE"/$(ls "$STORE" | grep -m1 'p0-q0.pcap$')))"
cid_store=$T/all.pcap
"$LINECAP" extract --dir "$STORE" -o "$cid_store" 2>/dev/null
CID=$(tshark --enable-protocol communityid -r "$cid_store" -Y tcp -T fields -e communityid 2>/dev/null | sort | uniq -c | sort -rn | awk 'NR==1 {print $2}')
[[ $CID == 1:* ]] || fail "tshark gave no Community ID (got '$CID')"
log "sample: V4=$V4 V4PEER=$V4PEER TPORT=$TPORT community id $CID"
queries=(
    "all||"
    "range|from=$(((T0 + 1234567) / 1000000000)).$(printf %09d $(((T0 + 1234567) % 1000000000)))&to=2026-11-30T02:10:00.005Z|"
    "filter||host $V4 and tcp port $TPORT"
    "community||" # community id below
    "v6||ip6 and udp"
    "pcapng||tcp or udp" # format=pcapng: one interface per source stream
)
n=0
for q in "${queries[@]}"; do
    IFS='|' read -r name times filter <<<"$q"
    args=() params=()
    [[ -z $filter ]] || { args+=(--filter "$filter"); params+=(--data-urlencode "filter=$filter"); }
    if [[ $name == community ]]; then
        args+=(--community-id "$CID")
        params+=(--data-urlencode "community_id=$CID")
    fi
    if [[ $name == pcapng ]]; then
        args+=(--format pcapng)
        params+=(--data-urlencode "format=pcapng")
    fi
    if [[ -n $times ]]; then
        from=${times%%&*} to=${times#*&}
        args+=(--from "${from#from=}" --to "${to#to=}")
        params+=(--data-urlencode "${from}" --data-urlencode "${to}")
    fi
    "$LINECAP" extract --dir "$STORE" "${args[@]}" -o "$T/cli-$name.pcap" 2>/dev/null || fail "$name: linecap extract failed"
    curl -sf -G "${CA[@]}" "${TOK[@]}" "${params[@]}" -D "$T/hdr-$name" -o "$T/api-$name.pcap" "$URL/api/v1/packets" \
        || fail "$name: API request failed"
    cmp "$T/cli-$name.pcap" "$T/api-$name.pcap" || fail "$name: API answer differs from linecap extract"
    grep -qi '^X-Linecap-Outcome: complete' "$T/hdr-$name" || fail "$name: trailer does not say complete: $(cat "$T/hdr-$name")"
    grep -qi '^Transfer-Encoding: chunked' "$T/hdr-$name" || fail "$name: the answer was not streamed chunked"
    pk=$(capinfos -Mc "$T/api-$name.pcap" | awk '/Number of packets/ {print $NF}')
    log "$name: $pk packets, $(stat -c %s "$T/api-$name.pcap") bytes, identical"
    n=$((n + 1))
done
[[ $(capinfos -Mc "$T/api-filter.pcap" | awk '/Number of packets/ {print $NF}') -gt 0 ]] || fail "filter query is empty"
# The pcapng answer names each packet's source stream (p0:0 ... p1:1), as tshark reads it.
ifaces=$(tshark -r "$T/api-pcapng.pcap" -T fields -e frame.interface_name 2>/dev/null | sort -u | tr '\n' ' ')
[[ $ifaces == "p0:0 p0:1 p1:0 p1:1 " ]] || fail "pcapng answer's interfaces: '$ifaces'"
grep -qi '^Content-Type: application/x-pcapng' "$T/hdr-pcapng" || fail "pcapng answer's content type: $(cat "$T/hdr-pcapng")"
# The Community ID answer is what Wireshark's Community ID dissector selects.
tshark --enable-protocol communityid -r "$cid_store" -Y "communityid == \"$CID\"" -F nsecpcap -w "$T/tshark-cid.pcap" 2>/dev/null
python3 "$LINECAP_SRC/tests/tools/pcap_compare.py" same-order "$T/tshark-cid.pcap" "$T/api-community.pcap" \
    || fail "Community ID answer differs from tshark's communityid selection"
# tshark reads the streamed answer from the pipe.
got=$(curl -sf -G "${CA[@]}" "${CERT[@]}" --data-urlencode "filter=tcp" "$URL/api/v1/packets" | tshark -r - 2>/dev/null | wc -l)
want=$("$LINECAP" extract --dir "$STORE" --filter tcp -o - 2>/dev/null | tshark -r - 2>/dev/null | wc -l)
((got == want && got > 0)) || fail "tshark read $got packets from the stream, $want from linecap extract"
# An HTTP/1.0 client cannot take chunks (RFC 9112 §7): the pcap as it is, the end of the
# connection its end; equal to tcpdump -r of the same filter over the whole store.
F10="tcp port $TPORT and host $V4"
curl -sf --http1.0 -G "${CA[@]}" "${TOK[@]}" --data-urlencode "filter=$F10" -D "$T/hdr-10" -o "$T/api-10.pcap" \
    "$URL/api/v1/packets" || fail "HTTP/1.0: the request failed"
grep -qi '^Transfer-Encoding' "$T/hdr-10" && fail "HTTP/1.0: the answer was chunked: $(cat "$T/hdr-10")"
grep -qi '^Connection: close' "$T/hdr-10" || fail "HTTP/1.0: the answer does not end the connection: $(cat "$T/hdr-10")"
tcpdump --time-stamp-precision=nano -r "$T/all.pcap" -w "$T/tcpdump-10.pcap" "$F10" 2>/dev/null || fail "tcpdump -r '$F10'"
python3 "$LINECAP_SRC/tests/store/ref_compare.py" compare "$T/tcpdump-10.pcap" "$T/api-10.pcap" \
    || fail "HTTP/1.0: the answer differs from tcpdump -r"
wait_for "grep -F '$F10' '$AUDIT' | grep -q '\"outcome\":\"complete\"'" 5 || fail "HTTP/1.0: no complete audit record"
log "HTTP/1.0: $(capinfos -Mc "$T/api-10.pcap" | awk '/Number of packets/ {print $NF}') packets, no chunk framing, as tcpdump -r"
# Expect: 100-continue (what curl sends before a large body) is answered at once: without
# the 100, curl would wait --expect100-timeout (30 s here; 1 s by default) before the body.
t=$(curl -s -v -o "$T/expect.pcap" -w '%{http_code} %{time_total}' "${CA[@]}" "${TOK[@]}" --expect100-timeout 30 \
    -H 'Expect: 100-continue' --data-binary "host $V4" "$URL/query" 2>"$T/expect.err")
[[ ${t%% *} == 200 ]] || fail "Expect: 100-continue: status ${t%% *}: $(grep '^<' "$T/expect.err")"
grep -q '^< HTTP/1.1 100 Continue' "$T/expect.err" || fail "Expect: 100-continue: no 100: $(grep '^<' "$T/expect.err")"
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 10 else 1)' "${t#* }" || fail "Expect: 100-continue took ${t#* } s"
log "Expect: 100-continue: 100, then the answer, ${t#* } s in all"
# Size before download.
size_json=$(curl -sf -G "${CA[@]}" "${TOK[@]}" --data-urlencode "filter=tcp" "$URL/api/v1/size")
python3 -c 'import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if j["bytes"]==int(sys.argv[2]) else 1)' \
    "$size_json" "$("$LINECAP" extract --dir "$STORE" --filter tcp -o - 2>/dev/null | wc -c)" || fail "size: $size_json"
curl -sf -G "${CA[@]}" "${TOK[@]}" --data-urlencode "from=2026-11-30T02:10:00Z" --data-urlencode "to=2026-11-30T02:10:00.004Z" \
    "$URL/api/v1/files" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["files"] and all(f["index"]=="valid" for f in j["files"]), j' \
    || fail "files listing"

# --- bad input: 400 with one line saying what ----------------------------------------------
bad() {  # bad EXPECTED_TEXT PARAM...
    local want=$1
    shift
    local body status
    body=$(curl -s -G -w '\n%{http_code}' "${CA[@]}" "${TOK[@]}" "$@" "$URL/api/v1/packets")
    status=${body##*$'\n'}
    [[ $status == 400 ]] || fail "$* : status $status, want 400"
    [[ $body == *"$want"* ]] || fail "$* : '$body' does not say '$want'"
}
bad "from:" --data-urlencode "from=2026-13-01T00:00:00Z"
bad "from:" --data-urlencode "from=yesterday"
bad "from is after to" --data-urlencode "from=1796004601" --data-urlencode "to=1796004600"
bad "syntax error" --data-urlencode "filter=tcp port 80 and ("
bad "unknown port 'eighty'" --data-urlencode "filter=tcp port eighty"
bad "unknown parameter 'limit'" --data-urlencode "limit=5"
bad "given twice" --data-urlencode "filter=tcp" --data-urlencode "filter=udp"
bad "community id" --data-urlencode "community_id=1:notbase64"
bad "max_bytes" --data-urlencode "max_bytes=10"
[[ $(code "${TOK[@]}" -H "X-Padding: $(head -c 6000 /dev/zero | tr '\0' a)" "$URL/api/v1/status") == 431 ]] \
    || fail "oversized request not refused with 431"
[[ $(code "${TOK[@]}" "$URL/api/v1/nothing") == 404 ]] || fail "unknown endpoint not 404"

# --- max_bytes: a clean cut at a record boundary, said in the trailer ----------------------
curl -sf -G "${CA[@]}" "${TOK[@]}" --data-urlencode "max_bytes=100000" -D "$T/hdr-max" -o "$T/api-max.pcap" "$URL/api/v1/packets"
size=$(stat -c %s "$T/api-max.pcap")
((size <= 100000 && size > 90000)) || fail "max_bytes answer has $size bytes"
grep -qi '^X-Linecap-Outcome: truncated: max_bytes' "$T/hdr-max" || fail "no truncation trailer: $(cat "$T/hdr-max")"
cmp -n "$size" "$T/api-max.pcap" "$T/api-all.pcap" || fail "the cut answer is not a prefix of the whole"
capinfos "$T/api-max.pcap" >/dev/null 2>&1 || fail "the cut answer is not a valid pcap"

# --- a client that goes away mid-stream -----------------------------------------------------
threads_before=$(ls /proc/$SERVE_PID/task | wc -l)
fds_before=$(ls /proc/$SERVE_PID/fd | wc -l)
status=$(python3 -m linecap_harness.raw_http disconnect "$PORT" "$T/ca.pem" "$TOKEN" /api/v1/packets 200000) \
    || fail "disconnecting client failed"
[[ $status == *" 200 "* ]] || fail "disconnecting client: $status"
wait_for "grep -q 'client disconnected' '$AUDIT'" 30 || fail "no audit record of the disconnect"
wait_for "[[ \$(ls /proc/$SERVE_PID/task | wc -l) -le $threads_before && \$(ls /proc/$SERVE_PID/fd | wc -l) -le $fds_before ]]" 10 \
    || fail "threads $(ls /proc/$SERVE_PID/task | wc -l) (were $threads_before), fds $(ls /proc/$SERVE_PID/fd | wc -l) (were $fds_before)"
kill -0 "$SERVE_PID" || fail "serve died after the disconnect"
log "disconnect: $(grep 'client disconnected' "$AUDIT" | tail -1)"

# --- 100 concurrent requests against max_queries 4 ------------------------------------------
# Each answer is read slowly, so those that got a place hold it while the rest arrive. The
# clients are instruments: one starved for seconds (the hunt saw answers 18 s after the burst
# began) misses serve's header_timeout, which rightly closes it. Each line: status, curl's exit.
: >"$T/codes"
seq 100 | "${INSTRUMENT[@]}" xargs -P 100 -I{} sh -c "curl -s -o /dev/null -w '%{http_code} %{exitcode}\n' --limit-rate 2M \
    --cacert '$T/ca.pem' -H 'Authorization: Bearer $TOKEN' '$URL/api/v1/packets' >>'$T/codes' || true"
ok=$(grep -c '^200 0$' "$T/codes" || true)
busy=$(grep -c '^503 0$' "$T/codes" || true)
log "100 concurrent: $ok answered, $busy refused busy"
((ok + busy == 100)) || fail "answers other than a whole 200 or a 503 (status, curl exit):" \
    "$(sort "$T/codes" | uniq -c | tr '\n' ' '); audit outcomes: $(grep -o '"status":[0-9]*,.*"outcome":"[^"]*"' "$AUDIT" \
        | sed 's/"bytes.*"outcome"/ /' | sort | uniq -c | tr '\n' ' ')"
((ok >= 4 && busy >= 1)) || fail "$ok answered, $busy refused"
# No more than 4 answers ever overlapped (from the audit records' start and duration).
python3 - "$AUDIT" <<'PY' || fail "more than 4 answers overlapped"
import json, sys, datetime
ev = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["request"] == "/api/v1/packets" and r["status"] == 200:
        t = datetime.datetime.strptime(r["time"][:26], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
        ev += [(t, 1), (t + r["seconds"], -1)]
cur = peak = 0
for _, d in sorted(ev, key=lambda e: (e[0], e[1])):
    cur += d
    peak = max(peak, cur)
print("peak concurrent answers:", peak)
sys.exit(0 if peak <= 4 else 1)
PY
[[ $(grep -c '"outcome":"refused: busy"' "$AUDIT") == "$busy" ]] || fail "busy refusals not all audited"

stop_serve
n_audit=$(wc -l <"$AUDIT")
json_lines "$AUDIT" || fail "audit log is not JSON lines"
log "audit log: $n_audit records; e.g. $(grep '"who":"token:alice"' "$AUDIT" | grep packets | head -1)"
log "PASS"
