#!/usr/bin/env bash
# The retrieval API against hostile clients and appliances, with real clients (curl,
# openssl s_client, Python sockets) and a malicious appliance (tests/api/hostile_appliance.py):
#
# - 50 slow-header connections (one byte a second, reconnecting when dropped) and 50 idle
#   ones, while an authenticated client's queries are each answered within 2 s and serve's
#   thread count stays where it was;
# - every refusal of the HTTP layer (431 for a 100 KB Authorization header, a 9,000-character
#   path and a 64 KB header line; 405, HTTP/0.9, 505, a malformed header, a chunked GET body,
#   408 for a head that never ends, HTTP/1.1 without Host or with two, an expectation other
#   than 100-continue, bare LF line ends) has exactly one audit record with its reason in the body;
#   a chunked GET body is not read as a request; 4 pipelined requests are answered in order;
#   a percent-encoded path is audited decoded; a token in the query string is redacted; a
#   valid certificate with a wrong token is refused and the record says so; a client that
#   disconnects mid-stream is audited with the packets it was sent; per-client connection
#   limit; one token under two names refused at start; no token text in the audit log;
# - `linecap extract --remote` against an endless and a trickling appliance ends within its
#   bounds, reports each cut answer on one line and still returns the real appliance's
#   packets; nothing is left in the temporary directory, also after SIGTERM and SIGKILL.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/api/api_lib.sh"
need_cmd curl openssl python3 capinfos
need_linecap
make_tmpdir
api_appliance 2000 alice
THREADS=4
api_config "$T/api.yaml" "$STORE" "127.0.0.1:$PORT" "$AUDIT" \
    "${API_TLS[@]}" \
    "tokens_file: \"$T/tokens\"" "max_request_bytes: 4096" "client_timeout: 5s" "header_timeout: 3s" \
    "body_timeout: 3s" "threads: $THREADS" "max_connections_per_client: 400" "max_connections: 500"
show_on_failure "$AUDIT"

# --- one token under two names: refused at start ---------------------------------------------
printf 'alice %s\nbob %s\n' "$TOKEN" "$TOKEN" >"$T/dup-tokens"
chmod 600 "$T/dup-tokens"
api_config "$T/dup.yaml" "$STORE" "127.0.0.1:$PORT" "$AUDIT" "tokens_file: \"$T/dup-tokens\""
rc=0
"$LINECAP" serve --config "$T/dup.yaml" 2>"$T/dup.err" || rc=$?
((rc == 78)) && grep -q "the token of 'bob' is also the token of 'alice'" "$T/dup.err" \
    || fail "duplicate token: rc $rc: $(cat "$T/dup.err")"
grep -q -- "$TOKEN" "$T/dup.err" && fail "the duplicate-token error shows the token"

start_serve "$T/api.yaml"
CA=(--cacert "$T/ca.pem")
TOK=(-H "Authorization: Bearer $TOKEN")
threads_idle=$(ls /proc/$SERVE_PID/task | wc -l)
log "serve: $threads_idle threads before the attack"

# --- slowloris and idle connections while an analyst works -----------------------------------
python3 - "$PORT" "$T/ca.pem" 25 >"$T/attack.out" 2>&1 <<'PY' &
import socket, ssl, sys, time
port, ca, duration = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
ctx = ssl.create_default_context(cafile=ca)
slow, idle, peak, dropped = [], [], 0, 0
def new_slow():
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
    s.sendall(b"GET /api/v1/size HTTP/1.1\r\nHost: x\r\n")
    s.setblocking(False)
    return s
def new_idle():
    return socket.create_connection(("127.0.0.1", port))
end = time.monotonic() + duration
while time.monotonic() < end:
    while len(slow) < 50:
        slow.append(new_slow())
    while len(idle) < 50:
        idle.append(new_idle())
    peak = max(peak, len(slow) + len(idle))
    for lst in (slow, idle):
        for s in list(lst):
            try:
                if lst is slow:
                    s.send(b"X")
                s.setblocking(False)
                if s.recv(4096) == b"":
                    raise OSError("closed")
            except (BlockingIOError, ssl.SSLWantReadError):
                pass
            except OSError:
                dropped += 1
                lst.remove(s)
                s.close()
    time.sleep(1)
print(f"peak {peak} dropped {dropped}")
PY
ATTACK=$!
on_exit "kill $ATTACK 2>/dev/null || true"
wait_for "[[ \$(ss -tn state established \"( sport = :$PORT )\" | wc -l) -gt 95 ]]" 15 || fail "the attack did not connect"
: >"$T/latency"
max_threads=0
for i in $(seq 12); do
    t=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 10 "${CA[@]}" "${TOK[@]}" -G \
        --data-urlencode "filter=tcp" "$URL/api/v1/size")
    echo "$t" >>"$T/latency"
    n=$(ls /proc/$SERVE_PID/task | wc -l)
    ((n > max_threads)) && max_threads=$n
    [[ ${t%% *} == 200 ]] || fail "query $i under attack: $t"
    python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 2.0 else 1)' "${t#* }" \
        || fail "query $i under attack took ${t#* } s"
    sleep 1  # pacing the analyst's queries, not synchronisation
done
open=$(ss -tn state established "( sport = :$PORT )" | tail -n +2 | wc -l)
wait "$ATTACK" || fail "the attacker failed: $(cat "$T/attack.out")"
log "under attack ($(cat "$T/attack.out"), $open connections open at the end): 12 queries, seconds: $(cut -d' ' -f2 "$T/latency" | tr '\n' ' ')"
((max_threads <= threads_idle + 1)) || fail "serve grew from $threads_idle to $max_threads threads under the attack"
grep -q '"outcome":"refused: the request head did not arrive within api.header_timeout"' "$AUDIT" \
    || fail "the slow heads were not answered 408 and audited"

# --- refusals of the HTTP layer: each one audit record, its reason in the body -----------------
python3 - "$PORT" "$T/ca.pem" <<'PY' || fail "raw requests"
import sys
from linecap_harness.raw_http import tls_connect, read_to_close
port, ca = int(sys.argv[1]), sys.argv[2]
def exchange(raw):
    s = tls_connect(port, ca)
    s.settimeout(10)
    try:
        s.sendall(raw)
    except OSError:
        pass
    got = read_to_close(s)
    s.close()
    return got
cases = {
    "bigauth": (b"GET /m-bigauth HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + b"A" * 100000 + b"\r\n\r\n", 431),
    "longpath": (b"GET /m-longpath" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 431),
    "bigline": (b"GET /m-bigline HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 65536 + b"\r\n\r\n", 431),
    "foo": (b"FOO /m-foo HTTP/1.1\r\nHost: x\r\n\r\n", 405),
    "http09": (b"GET /m-http09\r\n", 400),
    "http2": (b"GET /m-http2 HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    "badheader": (b"GET /m-badheader HTTP/1.1\r\nHost x\r\n\r\n", 400),
    "chunked": (b"GET /m-chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"2e\r\nGET /m-smuggled HTTP/1.1\r\nHost: x\r\n\r\n\r\n0\r\n\r\n", 400),
    "slowhead": (b"GET /m-slowhead HTTP/1.1\r\nHost: x\r\n", 408),
    "nohost": (b"GET /m-nohost HTTP/1.1\r\n\r\n", 400),
    "twohosts": (b"GET /m-twohosts HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400),
    "expect": (b"POST /m-expect HTTP/1.1\r\nHost: x\r\nExpect: tea\r\nContent-Length: 4\r\n\r\n", 417),
    "barelf": (b"GET /m-barelf HTTP/1.1\nHost: x\n\n", 400),
}
for name, (raw, want) in cases.items():
    got = exchange(raw)
    status_line = got.split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.1 %d " % want), (name, got[:200])
    body = got.split(b"\r\n\r\n", 1)[1]
    assert body.startswith(b'{"error":"') and body.count(b"\n") == 1, (name, body)
    print(name, status_line.decode(), body.decode().strip())
PY
for m in bigauth longpath bigline foo http09 http2 badheader chunked slowhead nohost twohosts expect barelf; do
    n=$(grep -c "/m-$m" "$AUDIT" || true)
    [[ $n == 1 ]] || fail "refusal $m: $n audit records, want 1"
done
grep -q "/m-smuggled" "$AUDIT" && fail "a chunked GET body was read as a request"
grep '/m-longpath' "$AUDIT" | grep -q '"status":431' || fail "the long path's record"
grep '/m-nohost' "$AUDIT" | grep -q '"outcome":"refused: an HTTP/1.1 request needs a Host header"' || fail "the missing Host's record"
log "13 refusals, one record each: $(grep '/m-http09' "$AUDIT")"

# --- pipelining, a GET body by Content-Length: answered in order --------------------------------
python3 - "$PORT" "$T/ca.pem" "$TOKEN" <<'PY' || fail "pipelined requests"
import re, sys
from linecap_harness.raw_http import tls_connect, read_to_close
port, ca, token = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = tls_connect(port, ca)
auth = f"Authorization: Bearer {token}\r\n".encode()
reqs = [b"GET /api/v1/status HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n",
        b"GET /m-pipe-a HTTP/1.1\r\nHost: x\r\n" + auth + b"Content-Length: 5\r\n\r\nGET /",
        b"GET /api/v1/files HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n",
        b"GET /m-pipe-b HTTP/1.1\r\nHost: x\r\n" + auth + b"Connection: close\r\n\r\n"]
s.sendall(b"".join(reqs))
got = read_to_close(s)
codes = re.findall(rb"HTTP/1\.1 (\d{3}) ", got)
assert codes == [b"200", b"404", b"200", b"404"], codes
PY

# --- the audit record: decoded path, redacted credentials, the refused credential ---------------
# A record is written once its answer has been sent, so it may land just after curl ends.
audited() { wait_for "grep -qF -- '$1' '$AUDIT'" 5; }
curl -s -o /dev/null "${CA[@]}" "${TOK[@]}" "$URL/api/v1/%70ackets?filter=host%201.2.3.4"
audited '"request":"/api/v1/packets?filter=host 1.2.3.4"' || fail "percent-encoded path not audited decoded"
curl -s -o /dev/null "${CA[@]}" "${TOK[@]}" "$URL/api/v1/status?access_token=$TOKEN"
audited '"request":"/api/v1/status?access_token=[redacted]"' || fail "access_token not redacted"
curl -s -o /dev/null "${CA[@]}" "${TOK[@]}" "$URL/m-path-$TOKEN"
audited '"request":"/m-path-[redacted]"' || fail "a token in the path not redacted"
code=$(curl -s -o "$T/wrongtok.body" -w '%{http_code}' "${CA[@]}" --cert "$T/client.pem" --key "$T/client.key" \
    -H "Authorization: Bearer not-the-token-0123456789" "$URL/api/v1/status?m-wrongtok")
[[ $code == 401 ]] || fail "a valid certificate with a wrong token: $code"
audited 'm-wrongtok' || fail "the wrong token's request is not audited"
grep 'm-wrongtok' "$AUDIT" | grep -q '"who":"cert:/O=forensics/CN=analyst1".*"credential_refused":"bearer token not in api.tokens_file"' \
    || fail "the wrong token's record: $(grep m-wrongtok "$AUDIT")"
# openssl s_client speaks the request by hand; HTTP/1.0 closes after the answer.
printf 'GET /api/v1/status?m-sclient HTTP/1.0\r\nAuthorization: Bearer %s\r\n\r\n' "$TOKEN" |
    openssl s_client -quiet -connect "127.0.0.1:$PORT" -CAfile "$T/ca.pem" 2>/dev/null >"$T/sclient.out" || true
head -1 "$T/sclient.out" | grep -q '^HTTP/1.1 400' || fail "s_client: $(head -3 "$T/sclient.out")"
[[ $(grep -c 'm-sclient' "$AUDIT") == 1 ]] || fail "s_client request not audited once"

# --- a client that disconnects mid-stream: the packets it was sent ----------------------------
python3 -m linecap_harness.raw_http disconnect "$PORT" "$T/ca.pem" "$TOKEN" "/api/v1/packets?max_bytes=100000000" \
    300000 65536 >/dev/null || fail "disconnecting client failed"
wait_for "grep -q 'client disconnected' '$AUDIT'" 20 || fail "no record of the disconnect"
python3 - "$AUDIT" <<'PY' || fail "the disconnect's record"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if "client disconnected" in l][-1]
assert r["packets"] > 0 and r["bytes"] > 200000, r
print("disconnect record:", r["bytes"], "bytes,", r["packets"], "packets")
PY

grep -q -- "$TOKEN" "$AUDIT" && fail "token text in the audit log"
json_lines "$AUDIT" || fail "audit log is not JSON lines"
stop_serve

# --- per-client connection limit ---------------------------------------------------------------
PORT2=$(free_tcp_port)
api_config "$T/limit.yaml" "$STORE" "127.0.0.1:$PORT2" "$T/audit-limit.log" "unauthenticated: loopback" \
    "max_connections_per_client: 2"
start_serve "$T/limit.yaml"
python3 - "$PORT2" <<'PY' || fail "per-client connection limit"
import socket, sys
port = int(sys.argv[1])
keep = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
third = socket.create_connection(("127.0.0.1", port))
third.settimeout(5)
assert third.recv(100) == b"", "the third connection was not closed"
keep[0].sendall(b"GET /api/v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
keep[0].settimeout(10)
assert keep[0].recv(100).startswith(b"HTTP/1.1 200"), "a connection within the limit was not answered"
PY
grep -q '"outcome":"refused: connection limit: 2 connections from 127.0.0.1 (api.max_connections_per_client)"' \
    "$T/audit-limit.log" || fail "connection limit not audited: $(cat "$T/audit-limit.log")"
stop_serve

# --- extract --remote against hostile appliances ----------------------------------------------
start_serve "$T/api.yaml"
for mode in endless trickle; do
    python3 "$LINECAP_SRC/tests/api/hostile_appliance.py" "$mode" "$T/$mode.port" &
    eval "${mode}_pid=$!"
    on_exit "kill $! 2>/dev/null || true"
done
wait_for "[[ -s $T/endless.port && -s $T/trickle.port ]]" 10 || fail "the hostile appliances did not start"
ENDLESS=http://127.0.0.1:$(cat "$T/endless.port")
TRICKLE=http://127.0.0.1:$(cat "$T/trickle.port")
mkdir "$T/tmp"
printf '%s\n' "$TOKEN" >"$T/token"
chmod 600 "$T/token"
REMOTE=(extract --remote "$URL,$ENDLESS,$TRICKLE" --cacert "$T/ca.pem" --token-file "$T/token" --format pcap)
start=$EPOCHSECONDS
rc=0
TMPDIR=$T/tmp timeout 60 "$LINECAP" "${REMOTE[@]}" --max-answer-bytes 20MiB --remote-timeout 3 \
    -o "$T/remote.pcap" 2>"$T/remote.err" || rc=$?
took=$((EPOCHSECONDS - start))
((rc == 1)) || fail "extract --remote with hostile appliances: exit $rc: $(cat "$T/remote.err")"
((took <= 15)) || fail "extract --remote took $took s"
grep -q "$ENDLESS: answer cut after [0-9]* bytes: larger than 20971520 bytes (--max-answer-bytes)" "$T/remote.err" \
    || fail "endless appliance not reported: $(cat "$T/remote.err")"
grep -q "$TRICKLE: answer cut after [0-9]* bytes: slower than 1024 bytes/s for 3 s" "$T/remote.err" \
    || fail "trickling appliance not reported: $(cat "$T/remote.err")"
[[ $(wc -l <"$T/remote.err") == 2 ]] || fail "more than one line per cut answer: $(cat "$T/remote.err")"
"$LINECAP" extract --dir "$STORE" -o "$T/local.pcap" 2>/dev/null
want=$(capinfos -Mc "$T/local.pcap" | awk '/Number of packets/ {print $NF}')
got=$(capinfos -Mc "$T/remote.pcap" | awk '/Number of packets/ {print $NF}')
((got > want)) || fail "merged $got packets, want the real appliance's $want and the endless one's kept"
[[ -z $(ls -A "$T/tmp") ]] || fail "left in the temporary directory: $(ls -A "$T/tmp")"
log "hostile appliances: exit 1 after $took s, $got packets ($want from the real one); $(tr '\n' '|' <"$T/remote.err")"
# A total bound over all answers.
rc=0
TMPDIR=$T/tmp timeout 60 "$LINECAP" extract --remote "$ENDLESS,$ENDLESS" --max-total-bytes 10MiB -o "$T/total.pcap" \
    2>"$T/total.err" || rc=$?
((rc == 1)) && grep -q "all answers together larger than 10485760 bytes" "$T/total.err" || fail "total bound: $(cat "$T/total.err")"
# Not enough room in the temporary directory: refused before asking.
rc=0
TMPDIR=$T/tmp "$LINECAP" extract --remote "$ENDLESS" --min-free-bytes 100000TiB -o "$T/nospace.pcap" 2>"$T/nospace.err" || rc=$?
((rc != 0)) && grep -q "bytes free, less than" "$T/nospace.err" || fail "disk-space check: rc $rc $(cat "$T/nospace.err")"
# Killed while receiving: nothing survives in the temporary directory.
for sig in TERM KILL; do
    TMPDIR=$T/tmp "$LINECAP" extract --remote "$ENDLESS" --max-answer-bytes 100GiB -o "$T/killed.pcap" 2>/dev/null &
    pid=$!
    wait_for "ls -l /proc/$pid/fd 2>/dev/null | grep -q '$T/tmp'" 10 || fail "extract --remote did not open its temporary"
    [[ -z $(ls -A "$T/tmp") ]] || fail "the temporary has a name while it is written: $(ls -A "$T/tmp")"
    kill -"$sig" "$pid"
    wait "$pid" 2>/dev/null || true
    [[ -z $(ls -A "$T/tmp") ]] || fail "left in the temporary directory after SIG$sig: $(ls -A "$T/tmp")"
done
stop_serve
log "PASS"
