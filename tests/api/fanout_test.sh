#!/usr/bin/env bash
# `linecap extract --remote`: two appliances, each a `linecap serve` in its own network
# namespace (TLS with client certificates, reached over a veth pair), one query fanned out
# to both and merged: pcapng with one interface per appliance naming it, packets in time
# order, exactly the union of what each appliance's own `linecap extract` returns; --format
# pcap equals mergecap of the two. A down appliance and one that accepts but never answers
# are reported (exit 1) and the others' packets are still returned.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/api/api_lib.sh"
need_root
need_cmd curl tshark capinfos openssl python3 mergecap ip ss
need_linecap
make_tmpdir
T=$TEST_TMPDIR
PC="python3 $LINECAP_SRC/tests/tools/pcap_compare.py"
npk() { capinfos -Mc "$1" | awk '/Number of packets/ {print $NF}'; }

# Two namespaces, each linked to the root namespace by a /30 (TEST-NET-2 addresses).
declare -A NSN IP
for s in a b; do
    ns=lc-fan$s-$$
    ip netns add "$ns" || skip "cannot create a network namespace"
    on_exit "ip netns del '$ns' 2>/dev/null || true"
    _lc_reaper_add "ip netns del '$ns'"
    host=lcf$$$s peer=lcf$$${s}p
    ip link add "$host" type veth peer name "$peer" netns "$ns"
    on_exit "ip link del '$host' 2>/dev/null || true"
    _lc_reaper_add "ip link del '$host'"
    base=$([[ $s == a ]] && echo 0 || echo 4)
    ip addr add "198.51.100.$((base + 1))/30" dev "$host"
    ip link set "$host" up
    ip -n "$ns" addr add "198.51.100.$((base + 2))/30" dev "$peer"
    ip -n "$ns" link set "$peer" up
    ip -n "$ns" link set lo up
    NSN[$s]=$ns IP[$s]=198.51.100.$((base + 2))
done
wait_for "[[ \$(cat /sys/class/net/lcf$$a/operstate) == up && \$(cat /sys/class/net/lcf$$b/operstate) == up ]]" 10 \
    || fail "veths did not come up"

api_pki "$T" "${IP[a]}" "${IP[b]}"
# Different traffic and interleaved times on the two appliances.
python3 "$LINECAP_SRC/tests/store/make_store.py" --out "$T/store-a" --per-file 1500 \
    --gen-arg=--mix --gen-arg=--both-directions --stream "sa:0:11:$T0:1000:4000" --stream "sa:1:12:$((T0 + 300)):1000:4000" >/dev/null
python3 "$LINECAP_SRC/tests/store/make_store.py" --out "$T/store-b" --per-file 1500 \
    --gen-arg=--mix --gen-arg=--both-directions --stream "sb:0:21:$((T0 + 500)):1000:5000" >/dev/null
PORT=8443
declare -A PID
for s in a b; do
    "$LINECAP" index --dir "$T/store-$s" 2>/dev/null
    api_config "$T/$s.yaml" "$T/store-$s" "${IP[$s]}:$PORT" "$T/audit-$s.log" \
        "tls_cert: \"$T/server.pem\"" "tls_key: \"$T/server.key\"" "tls_client_ca: \"$T/ca.pem\""
    start_serve "$T/$s.yaml" "${NSN[$s]}"
    PID[$s]=$SERVE_PID
done
URLS="https://${IP[a]}:$PORT,https://${IP[b]}:$PORT"
CRED=(--cert "$T/client.pem" --key "$T/client.key" --cacert "$T/ca.pem")
Q=(--from 2026-11-30T02:10:00.0005Z --to 2026-11-30T02:10:00.0035Z --filter "tcp or udp or icmp")
for s in a b; do "$LINECAP" extract --dir "$T/store-$s" "${Q[@]}" -o "$T/local-$s.pcap" 2>/dev/null; done
na=$(npk "$T/local-a.pcap") nb=$(npk "$T/local-b.pcap")
((na > 100 && nb > 100)) || fail "local answers too small: $na, $nb"

# --- merged pcapng, one interface per appliance ---------------------------------------------
"$LINECAP" extract --remote "$URLS" "${CRED[@]}" "${Q[@]}" -o "$T/merged.pcapng" -v 2>"$T/remote.err" \
    || fail "extract --remote failed: $(cat "$T/remote.err")"
tshark -r "$T/merged.pcapng" -T fields -e frame.interface_name -e frame.time_epoch 2>/dev/null >"$T/fields"
[[ $(grep -c "^${IP[a]}:$PORT" "$T/fields") == "$na" ]] || fail "interface ${IP[a]}:$PORT: $(grep -c "^${IP[a]}" "$T/fields") packets, want $na"
[[ $(grep -c "^${IP[b]}:$PORT" "$T/fields") == "$nb" ]] || fail "interface ${IP[b]}:$PORT: want $nb packets"
cut -f2 "$T/fields" | sort -c -g || fail "merged packets are not in time order"
mergecap -F nsecpcap -w "$T/both.pcap" "$T/local-a.pcap" "$T/local-b.pcap"
$PC multiset "$T/both.pcap" "$T/merged.pcapng" >/dev/null || fail "merged packets differ from the appliances' own answers"
log "merged: $na + $nb packets, 2 interfaces named by appliance, time-ordered"
# --format pcap: the same order as mergecap (timestamps are unique across the two stores).
"$LINECAP" extract --remote "$URLS" "${CRED[@]}" "${Q[@]}" --format pcap -o "$T/merged.pcap" 2>/dev/null || fail "--format pcap"
$PC same-order "$T/both.pcap" "$T/merged.pcap" >/dev/null || fail "--format pcap differs from mergecap of the two answers"
grep -q '"who":"cert:/O=forensics/CN=analyst1"' "$T/audit-a.log" || fail "appliance a did not audit the client certificate"

# --- a down appliance and a stalled one ------------------------------------------------------
ip netns exec "${NSN[b]}" python3 -c '
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("'"${IP[b]}"'", 9444)); s.listen(4)
c, _ = s.accept(); time.sleep(120)' &
TARPIT=$!
on_exit "kill $TARPIT 2>/dev/null || true"
wait_for "ip netns exec ${NSN[b]} ss -ltn | grep -q ':9444 '" 10 || fail "tarpit did not listen"
rc=0
# The stalled one is cut after --remote-timeout. Long enough that the two real ones, whose
# serve runs in the idle CPU class, are not cut too on a machine busy with other work.
"$LINECAP" extract --remote "$URLS,https://${IP[a]}:9999,https://${IP[b]}:9444" --remote-timeout 10 "${CRED[@]}" "${Q[@]}" \
    -o "$T/partial.pcapng" 2>"$T/partial.err" || rc=$?
((rc == 1)) || fail "with a down and a stalled appliance: exit $rc, want 1"
grep -q "${IP[a]}:9999.*left out" "$T/partial.err" || fail "down appliance not reported: $(cat "$T/partial.err")"
grep -q "${IP[b]}:9444.*left out" "$T/partial.err" || fail "stalled appliance not reported: $(cat "$T/partial.err")"
[[ $(npk "$T/partial.pcapng") == $((na + nb)) ]] || fail "the reachable appliances' packets were not all returned: $(npk "$T/partial.pcapng"), $(cat "$T/partial.err")"
log "down/stalled reported: $(tr '\n' ' ' <"$T/partial.err")"
for s in a b; do SERVE_PID=${PID[$s]} stop_serve; done
log "PASS"
