#!/usr/bin/env bash
# linecap-extcap with a real tshark: installed where Debian's Wireshark looks for extcaps,
# tshark lists one interface per appliance of the appliances file, and capturing on one
# with the query as extcap preferences (from, to, filter; tshark -f as the capture filter;
# Community ID) gives exactly the packets, headers and nanosecond timestamps `linecap
# extract` gives for the same query — over TLS with a bearer token and with a client
# certificate. Refused with a message tshark shows: a token file others can read, a wrong
# token (the API's 401), an appliance that is down.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/api/api_lib.sh"
need_root
need_cmd tshark openssl python3
need_linecap
EXTCAP_DIR=$(tshark -G folders 2>/dev/null | awk -F'\t' '/^Extcap path:/ { print $2 }')
[[ -d $EXTCAP_DIR ]] || skip "tshark names no extcap directory"
make_tmpdir
STORE=$TEST_TMPDIR/store
api_store "$STORE" 3000
serve_tls_and_token "$STORE" analyst

# What the package installs, where tshark looks (the test's copy is removed at exit).
INSTALLED=$EXTCAP_DIR/linecap-extcap
[[ ! -e $INSTALLED ]] || skip "$INSTALLED exists already (an installed package?): not replacing it"
install -m 0755 "$LINECAP_SRC/extcap/linecap-extcap" "$INSTALLED"
on_exit "rm -f '$INSTALLED'"

printf '%s\n' "$TOKEN" >"$T/token"
chmod 600 "$T/token"
cat >"$T/extcap.ini" <<EOF
[tok]
url = https://127.0.0.1:$PORT
cacert = $T/ca.pem
token_file = $T/token
[cert]
url = https://127.0.0.1:$PORT   # the same appliance, with a client certificate
cacert = $T/ca.pem
cert = $T/client.pem
key = $T/client.key
[down]
url = https://127.0.0.1:1
cacert = $T/ca.pem
token_file = $T/token
EOF
chmod 600 "$T/client.key"
export LINECAP_EXTCAP_CONFIG=$T/extcap.ini

IFACES=$(tshark -D 2>/dev/null)
for i in linecap-tok linecap-cert linecap-down; do
    grep -q "$i (linecap appliance" <<<"$IFACES" || fail "tshark -D lacks $i: $IFACES"
done

# The store spans 3 ms from T0; a range inside it, to the nanosecond (the API takes Unix
# seconds with a fraction, and tshark passes the preference through as written).
FROM=$((T0 / 1000000000)).000500000
TO=$((T0 / 1000000000)).002000001
# capture IFACE OUT [tshark args...]: tshark on the interface until the answer ends. Its
# extcap preferences are named with '_' for the interface's '-'.
capture() {
    local iface=$1 out=$2
    shift 2
    timeout 60 tshark -q -i "$iface" -o "extcap.${iface//-/_}.from:$FROM" -o "extcap.${iface//-/_}.to:$TO" "$@" \
        -w "$out" >"$T/tshark.out" 2>&1
}
check_equal() {  # check_equal OUT EXTRACT_ARGS...: OUT holds what linecap extract returns
    local out=$1
    shift
    "$LINECAP" extract --dir "$STORE" --from "$FROM" --to "$TO" "$@" --format pcapng -o "$T/want.pcapng" 2>/dev/null \
        || fail "linecap extract $*"
    local n
    n=$(pcap_compare count "$T/want.pcapng" | awk '{ print $2; exit }')
    ((n > 0)) || fail "the reference answer ($*) is empty: the test would prove nothing"
    pcap_compare headers --ts "$T/want.pcapng" "$out" || fail "$out differs from linecap extract $*"
    log "$(basename "$out"): $n packets, as linecap extract $*"
}

capture linecap-tok "$T/all.pcapng" || fail "tshark on linecap-tok: $(cat "$T/tshark.out")"
check_equal "$T/all.pcapng"
capture linecap-cert "$T/tcp.pcapng" -o "extcap.linecap_cert.filter:tcp" || fail "tshark: $(cat "$T/tshark.out")"
check_equal "$T/tcp.pcapng" --filter tcp
capture linecap-tok "$T/both.pcapng" -o "extcap.linecap_tok.filter:tcp" -f "port 443" \
    || fail "tshark: $(cat "$T/tshark.out")"
check_equal "$T/both.pcapng" --filter "(tcp) and (port 443)"
# The busiest TCP flow, by Wireshark's own Community ID dissector.
CID=$(tshark --enable-protocol communityid -r "$T/all.pcapng" -Y tcp -T fields -e communityid 2>/dev/null \
    | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }') || true
[[ $CID == 1:* ]] || fail "tshark's communityid dissector gave no Community ID ('$CID')"
capture linecap-tok "$T/flow.pcapng" -o "extcap.linecap_tok.community_id:$CID" || fail "tshark: $(cat "$T/tshark.out")"
check_equal "$T/flow.pcapng" --community-id "$CID"

# Refusals reach tshark's output with the reason, and end the capture (not its timeout).
refused() {  # refused IFACE WHAT
    local rc=0
    capture "$1" "$T/x.pcapng" || rc=$?
    ((rc != 0)) || fail "$2: tshark got packets"
    ((rc != 124)) || fail "$2: tshark did not end (killed by its timeout)"
}
chmod 644 "$T/token"
refused linecap-tok "a world-readable token file"
grep -q "token file $T/token: mode 0644 lets every user read it; chmod 600" "$T/tshark.out" \
    || fail "no mode refusal: $(cat "$T/tshark.out")"
printf 'tok-wrong-%s\n' "$(openssl rand -hex 16)" >"$T/token"
chmod 600 "$T/token"
refused linecap-tok "a wrong token"
grep -q "HTTP 401" "$T/tshark.out" || fail "no 401 shown: $(cat "$T/tshark.out")"
refused linecap-down "an appliance that is down"
grep -q "linecap-extcap: https://127.0.0.1:1:" "$T/tshark.out" || fail "no reason for the down appliance: $(cat "$T/tshark.out")"
grep -q '"who":"token:analyst"' "$AUDIT" || fail "the token's queries are not audited"
grep -q '"who":"cert:' "$AUDIT" || fail "the certificate's query is not audited"
stop_serve
log "ok"
