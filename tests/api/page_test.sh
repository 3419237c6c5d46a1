#!/usr/bin/env bash
# The page at "/", in headless Chromium (Debian's chromium) driven through the DevTools
# protocol (tests/api/page_cdp.py): it loads with no external request, shows the ports
# and disk from the status (a stand-in /status endpoint plays linecapd), the form is
# filled (time range, filter, Community ID, token) and submitted, the size it shows
# equals the size of `linecap extract`'s answer, and the file Chromium downloads is
# byte-identical to it.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/api/api_lib.sh"
need_cmd python3 tshark
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[[ -n $CHROMIUM ]] || skip "chromium is not installed (scripts/install-deps.sh installs it)"
need_linecap
make_tmpdir
T=$TEST_TMPDIR
api_store "$T/store" 3000
# linecapd's status document (its /status), as a static file.
mkdir -p "$T/daemon"
cat >"$T/daemon/status" <<'JSON'
{"collected_ns": 1764468600000000000,
 "ports": [{"port": "p0", "link_up": true, "received_packets": 1500, "received_bytes": 150000,
            "written_packets": 1000, "filtered_packets": 0, "dropped_packets": 7,
            "dropped": {"writer_full": 7}}],
 "retention": {"horizon_seconds": 0, "files": 0, "bytes": 0}}
JSON
MPORT=$(free_tcp_port)
python3 -m http.server --bind 127.0.0.1 --directory "$T/daemon" "$MPORT" >/dev/null 2>&1 &
MPID=$!
on_exit "kill $MPID 2>/dev/null || true"
wait_for "curl -sf http://127.0.0.1:$MPORT/status >/dev/null" 60 || fail "stand-in status endpoint did not start"
api_tokens "$T/tokens" browser
PORT=$(free_tcp_port)
api_config "$T/api.yaml" "$T/store" "127.0.0.1:$PORT" "$T/audit.log" "tokens_file: \"$T/tokens\"" \
    "status_url: \"http://127.0.0.1:$MPORT/status\""
start_serve "$T/api.yaml"
show_on_failure "$T/audit.log" "$T/dl/chromium.log"

FROM=2026-11-30T02:10:00.0002Z TO=2026-11-30T02:10:00.0025Z FILTER="udp or tcp"
"$LINECAP" extract --dir "$T/store" --from "$FROM" --to "$TO" -o "$T/window.pcap" 2>/dev/null
CID=$(tshark --enable-protocol communityid -r "$T/window.pcap" -Y 'udp && !vlan' -T fields -e communityid 2>/dev/null | sort | uniq -c | sort -rn | awk 'NR==1 {print $2}')
"$LINECAP" extract --dir "$T/store" --from "$FROM" --to "$TO" --filter "$FILTER" --community-id "$CID" -o "$T/cli.pcap" 2>/dev/null
want_bytes=$(stat -c %s "$T/cli.pcap")
((want_bytes > 24)) || fail "the CLI answer is empty; pick another query"
mkdir -p "$T/dl"
fields=$(python3 -c 'import json,sys; print(json.dumps(dict(zip(["from","to","filter","community_id","token"], sys.argv[1:]))))' \
    "$FROM" "$TO" "$FILTER" "$CID" "$TOKEN")
timeout 270 python3 "$LINECAP_SRC/tests/api/page_cdp.py" "$CHROMIUM" "http://127.0.0.1:$PORT/" "$T/dl" "$T/page.json" "$fields" \
    || fail "driving chromium failed"
log "page: $(cat "$T/page.json" | tr -d '\n')"
python3 - "$T/page.json" "$want_bytes" <<'PY' || fail "the page showed the wrong status or size"
import json, sys
r = json.load(open(sys.argv[1]))
assert "authentication required" in r["status_before_token"], r["status_before_token"]
assert r["status_text"].startswith("linecapd: up"), r["status_text"]
assert r["ports"] and r["ports"][0][:3] == ["p0", "up", "1500"] and r["ports"][0][4] == "7", r["ports"]
assert r["size_bytes"] == int(sys.argv[2]), (r["size_bytes"], sys.argv[2])
PY
cmp "$T/cli.pcap" "$(json_field "$T/page.json" download)" \
    || fail "the downloaded file differs from linecap extract's answer"
# The page asked for nothing but its own origin: every request is in the audit log.
grep -q '"who":"token:browser".*"request":"/api/v1/packets?' "$T/audit.log" || fail "download not audited"
stop_serve
log "PASS"
