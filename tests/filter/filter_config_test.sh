#!/usr/bin/env bash
# An invalid capture filter is a configuration error before any port starts: linecapd
# (and linecapd --check) exit 78 with a message that quotes the expression and libpcap's
# own error text; nothing is opened, nothing is written. Expressions libpcap accepts but
# DPDK's BPF cannot run (protochain loops) are rejected the same way. A valid filter
# passes --check.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/filter/filter_lib.sh"
need_linecapd
need_cmd tcpdump
make_tmpdir

gen_pcap --count 100 --mix --seed 51 --out "$TEST_TMPDIR/in.pcap"
mkdir "$TEST_TMPDIR/out"

write_cfg() {  # FILTER
    cat >"$TEST_TMPDIR/linecap.yaml" <<YAML
eal:
  lcores: "0-1"
  hugepages: false
  memory_mb: 256
ports:
  - name: c0
    device: "net_pcap0,rx_pcap=$TEST_TMPDIR/in.pcap"
    rx_descriptors: 256
    filter: "$1"
output:
  directory: "$TEST_TMPDIR/out"
  blocks_per_queue: 2
  block_size_kb: 256
metrics:
  enabled: false
YAML
}

# expect_config_error FILTER TEXT...: both --check and a real start exit 78, and the
# output names the expression and each TEXT; no port was started, no file written.
expect_config_error() {
    local filter=$1 mode rc out
    shift
    write_cfg "$filter"
    for mode in --check start; do
        rc=0
        if [[ $mode == --check ]]; then
            out=$("$LINECAPD" --config "$TEST_TMPDIR/linecap.yaml" --check 2>&1) || rc=$?
        else
            out=$(timeout 60 "$LINECAPD" --config "$TEST_TMPDIR/linecap.yaml" 2>&1) || rc=$?
        fi
        printf '%s\n' "$out" >"$TEST_TMPDIR/last.log"
        ((rc == 78)) || fail "'$filter' ($mode): exit $rc, expected 78: $out"
        [[ $out == *"'$filter'"* ]] || fail "'$filter' ($mode): the message does not quote the expression: $out"
        local t
        for t in "$@"; do
            [[ $out == *"$t"* ]] || fail "'$filter' ($mode): the message lacks '$t': $out"
        done
        [[ $out != *"Link up"* && $out != *"rx queues"* ]] || fail "'$filter' ($mode): a port was started: $out"
    done
    [[ -z $(ls -A "$TEST_TMPDIR/out") ]] || fail "'$filter': files were written: $(ls -A "$TEST_TMPDIR/out")"
    log "'$filter': exit 78 with: $(grep -F "'$filter'" "$TEST_TMPDIR/last.log" | head -n 1)"
}

# libpcap's own error text, as tcpdump prints it: "tcpdump: [can't parse filter
# expression: ]<pcap_geterr text>".
pcap_error() {
    { tcpdump -r "$TEST_TMPDIR/in.pcap" "$1" 2>&1 >/dev/null || true; } \
        | sed -n "s/^tcpdump: \(can't parse filter expression: \)\{0,1\}//p" | tail -n 1
}

for f in "tcp port" "host 999.1.1.1" "port 70000" "vlan and (tcp" "ether[1:3] = 0" "tcp and udp"; do
    why=$(pcap_error "$f")
    [[ -n $why ]] || fail "tcpdump accepts '$f': pick another invalid expression"
    expect_config_error "$f" "$why"
done
expect_config_error "ip6 protochain 6" "jumps backwards"

write_cfg "tcp[tcpflags] & (tcp-syn|tcp-fin) != 0 or vlan 100"
"$LINECAPD" --config "$TEST_TMPDIR/linecap.yaml" --check >"$TEST_TMPDIR/check.log" 2>&1 \
    || fail "a valid filter fails --check: $(cat "$TEST_TMPDIR/check.log")"
log "OK: invalid filters exit 78 before any port starts, quoting the expression and libpcap"
