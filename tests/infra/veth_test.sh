#!/usr/bin/env bash
# Self-test of tests/lib/common.sh's topology helpers: veth_pair builds what it promises
# (capture side up, no address, IPv6 off; peer in its namespace), traffic replayed into the
# namespace arrives on the capture side complete and nothing else does (the kernel sends
# nothing on either side), and a test's namespace, veths and temp dir are gone after it exits,
# fails, skips, is sent SIGTERM (as meson does on timeout) or even SIGKILL.
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

need_root
need_cmd ip tcpreplay tcpdump setsid python3
make_tmpdir
cd "$TEST_TMPDIR" || fail "cd $TEST_TMPDIR"

# --- the topology --------------------------------------------------------------------------
veth_pair selftest
[[ -e /sys/class/net/$CAP_IF ]] || fail "$CAP_IF not in the root namespace"
[[ ! -e /sys/class/net/$PEER_IF ]] || fail "$PEER_IF should be inside $NS only"
[[ -e /run/netns/$NS ]] || fail "namespace $NS missing"
ns_exec test -e "/sys/class/net/$PEER_IF" || fail "$PEER_IF not in $NS"
((${#CAP_IF} <= 15 && ${#PEER_IF} <= 15)) || fail "interface names too long: $CAP_IF $PEER_IF"
[[ -z $(ip -o addr show dev "$CAP_IF") ]] || fail "$CAP_IF has an address: $(ip -o addr show dev "$CAP_IF")"
[[ -z $(ip -n "$NS" -o addr show dev "$PEER_IF") ]] || fail "$PEER_IF has an address"
[[ $(sysctl -n "net.ipv6.conf.$CAP_IF.disable_ipv6") == 1 ]] || fail "IPv6 enabled on $CAP_IF"
[[ $(ns_exec sysctl -n "net.ipv6.conf.$PEER_IF.disable_ipv6") == 1 ]] || fail "IPv6 enabled on $PEER_IF"
[[ $(cat "/sys/class/net/$CAP_IF/operstate") == up ]] || fail "$CAP_IF not up"
[[ $(cat "/sys/class/net/$CAP_IF/mtu") == 1500 ]] || fail "default MTU is not 1500"
first_cap=$CAP_IF first_ns=$NS

# --- live traffic: tcpreplay in the namespace -> capture side ------------------------------
# start_tcpdump VAR OUT.pcap ERR [ip netns exec NS] tcpdump-args...: background tcpdump,
# waits until it listens; its pid goes into VAR and is killed on exit. The 64 MiB ring holds
# the whole test's traffic: with 8 MiB, tcpdump starved of CPU (parallel builds on the two
# cores) dropped a few packets in its ring although the veth delivered them all.
start_tcpdump() {
    local var=$1 out=$2 err=$3
    shift 3
    "$@" -w "$out" -U -s 0 -nn --immediate-mode --time-stamp-precision=nano -B 65536 2>"$err" &
    local pid=$!
    printf -v "$var" '%s' "$pid"
    on_exit "kill -INT $pid 2>/dev/null; wait $pid 2>/dev/null || true"
    wait_for "grep -q 'listening on' '$err'" 10 || { cat "$err" >&2; fail "tcpdump did not start"; }
}
stop_tcpdump() { # stop_tcpdump PID
    kill -INT "$1" 2>/dev/null || true
    wait_for "! _lc_alive $1" 10 || fail "tcpdump $1 does not stop"
    wait "$1" 2>/dev/null || true
}

gen_pcap --count 2000 --mix --both-directions --tcp-flags --seed 11 --out sent.pcap
start_tcpdump cap_pid cap.pcap cap.err tcpdump -i "$CAP_IF"
# Anything the capture side transmits arrives inbound on the peer: there must be none.
start_tcpdump peer_pid peer.pcap peer.err ip netns exec "$NS" tcpdump -i "$PEER_IF" -Q in

sent=$(replay_into_ns sent.pcap 20000 2)
log "tcpreplay sent $sent packets at 20 kpps"
[[ $sent == 4000 ]] || fail "replay_into_ns reported $sent packets sent, expected 4000"
wait_for "[[ \$(pcap_compare count -q cap.pcap) -ge 4000 ]]" 20 || true
stop_tcpdump "$cap_pid"
stop_tcpdump "$peer_pid"
got=$(pcap_compare count -q cap.pcap)
if [[ $got != 4000 ]]; then
    log "tcpdump on $CAP_IF: $(grep -E 'captured|received|dropped' cap.err | tr '\n' ' ')"
    log "$PEER_IF tx: $(ip -n "$NS" -s link show dev "$PEER_IF" | sed -n '/TX:/{n;p}')"
    log "$CAP_IF rx: $(ip -s link show dev "$CAP_IF" | sed -n '/RX:/{n;p}')"
    fail "capture side saw $got of 4000 packets"
fi
pcap_compare multiset --loops 2 sent.pcap cap.pcap || fail "capture side != sent x 2"
n_peer=$(pcap_compare count -q peer.pcap)
[[ $n_peer == 0 ]] || { pcap_compare list peer.pcap >&2; fail "the capture side sent $n_peer packets"; }

# Top speed, for the record (and: replay_into_ns accepts "top").
gen_pcap --count 20000 --size 60 --seed 12 --out small.pcap
t0=$(_lc_now_us)
sent=$(replay_into_ns small.pcap top 5)
t1=$(_lc_now_us)
[[ $sent == 100000 ]] || fail "topspeed replay sent $sent of 100000"
log "tcpreplay --topspeed: 100000 x 60-byte frames in $(((t1 - t0) / 1000)) ms including netns exec"

# --- MTU, queues, a second pair in the same process ----------------------------------------
gen_pcap --count 200 --mix --jumbo --seed 13 --out jumbo.pcap
sent=$(replay_into_ns jumbo.pcap 10000 2>replay.err)
((sent < 200)) || fail "frames over 1514 bytes went through an MTU 1500 veth"
grep -q 'failed' replay.err || fail "replay_into_ns did not warn about failed packets"
veth_pair jumbo 9000 4
[[ $CAP_IF != "$first_cap" && $NS != "$first_ns" ]] || fail "second veth_pair reused names"
[[ $(cat "/sys/class/net/$CAP_IF/mtu") == 9000 ]] || fail "MTU 9000 not applied"
[[ $(ns_exec cat "/sys/class/net/$PEER_IF/mtu") == 9000 ]] || fail "peer MTU 9000 not applied"
nq=$(find "/sys/class/net/$CAP_IF/queues" -maxdepth 1 -name 'rx-*' | wc -l)
[[ $nq == 4 ]] || fail "QUEUES 4: $CAP_IF has $nq rx queues"
sent=$(replay_into_ns jumbo.pcap 10000)
[[ $sent == 200 ]] || fail "MTU 9000: sent $sent of 200 jumbo-mix frames"

# --- cleanup of a test however it ends -----------------------------------------------------
cat >child.sh <<'EOF'
source "$LINECAP_SRC/tests/lib/common.sh"
mode=$1 report=$2
on_exit "echo registered-first >>'$report.order'"
on_exit "echo registered-second >>'$report.order'"
make_tmpdir
veth_pair child
echo "$NS $CAP_IF $PEER_IF $TEST_TMPDIR" >"$report.tmp"
mv "$report.tmp" "$report"
case $mode in
    exit) exit 0 ;;
    fail) fail "deliberate failure" ;;
    skip) skip "deliberate skip" ;;
    term | kill) wait_for false 60; exit 3 ;;
esac
EOF

# run_case MODE EXPECTED_STATUS: run child.sh in its own session (like meson does), signal
# its process group for term/kill, then check its status and that nothing is left behind.
run_case() {
    local mode=$1 want=$2
    local report="$TEST_TMPDIR/report.$mode" rc=0 pid
    setsid bash child.sh "$mode" "$report" >"$report.log" 2>&1 &
    pid=$!
    case $mode in
        term | kill)
            wait_for "[[ -s '$report' ]]" 20 || { cat "$report.log" >&2; fail "$mode: child not ready"; }
            kill -s "${mode^^}" -- "-$pid"
            ;;
    esac
    wait_for "! _lc_alive $pid" 20 || fail "$mode: child $pid did not exit"
    wait "$pid" || rc=$?
    [[ $rc == "$want" ]] || { cat "$report.log" >&2; fail "$mode: exit status $rc, expected $want"; }
    [[ -s $report ]] || { cat "$report.log" >&2; fail "$mode: child wrote no report"; }
    local ns cap peer tmp
    read -r ns cap peer tmp <"$report"
    # After SIGKILL only the reaper cleans up, a fraction of a second later.
    wait_for "[[ ! -e /run/netns/$ns && ! -e /sys/class/net/$cap && ! -e '$tmp' ]]" 5 \
        || fail "$mode: left behind: $(ls -d "/run/netns/$ns" "/sys/class/net/$cap" "$tmp" 2>/dev/null)"
    if [[ $mode != kill ]]; then
        [[ $(cat "$report.order") == $'registered-second\nregistered-first' ]] \
            || fail "$mode: cleanup order: $(tr '\n' ' ' <"$report.order")"
    fi
    # The child's reaper (see _lc_reaper_add) ends right after it, removing its list.
    wait_for "! compgen -G '${TMPDIR:-/tmp}/.lc-reaper.$pid.*'" 5 || fail "$mode: reaper of $pid still there"
    log "case $mode: exit $rc, $ns/$cap/$peer and $tmp removed"
}
run_case exit 0
run_case fail 1
run_case skip 77
grep -q '^SKIP: deliberate skip$' "$TEST_TMPDIR/report.skip.log" || fail "skip printed no reason"
run_case term 143
run_case kill 137

log "all checks passed"
