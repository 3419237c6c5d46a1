#!/usr/bin/env bash
# output.format: pcapng end to end: net_pcap replays one file per queue into the daemon;
# every finished .pcapng opens in tshark and capinfos, has one interface named
# "<port>:<queue>" with the device as description, and ends with an Interface
# Statistics Block that tshark's pcapng dissector shows; per queue the ISBs' received
# counts add up to exactly the packets sent, with no drops; the manifests verify; and
# the files hold exactly the packets sent.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/storage/storage_lib.sh"
need_root
need_cmd capinfos tshark
need_hugepages 256
make_tmpdir

gen_pcap --count 3000 --mix --seed 41 --flows 200 --out "$TEST_TMPDIR/q0.pcap"
gen_pcap --count 2000 --mix --seed 42 --flows 200 --out "$TEST_TMPDIR/q1.pcap"
out="$TEST_TMPDIR/out"
mkdir "$out"
device="net_pcap0,rx_pcap=$TEST_TMPDIR/q0.pcap,rx_pcap=$TEST_TMPDIR/q1.pcap"
storage_config "$TEST_TMPDIR/linecap.yaml" "$device" 2 "$out" output.format=pcapng \
    output.blocks_per_queue=64 output.block_size_kb=256 output.rotate.size_mb=1 output.rotate.interval_s=0

start_linecapd "$TEST_TMPDIR/linecap.yaml"
metrics="http://$METRICS_LISTEN/metrics"
wait_for_linecapd "[[ \$(metric_sum $metrics linecap_written_packets_total) -ge 5000 ]]" 60 \
    || fail "not every packet was written"
stop_linecapd || fail "linecapd exited $LINECAPD_RC"

shopt -s nullglob
files=("$out"/*.pcapng)
((${#files[@]} >= 3)) || fail "expected several files (1 MiB rotation), got ${#files[@]}"
[[ -z $(find "$out" -name '.*') ]] || fail "hidden files left: $(find "$out" -name '.*')"
declare -A received=([0]=0 [1]=0) packets=([0]=0 [1]=0)
for f in "${files[@]}"; do
    name=$(basename "$f")
    q=${name##*-q}
    q=${q%.pcapng}
    tshark -r "$f" -q >/dev/null 2>"$TEST_TMPDIR/tshark.err" || fail "tshark cannot read $name: $(cat "$TEST_TMPDIR/tshark.err")"
    info=$(capinfos -I "$f")
    grep -q "Name = st:$q\$" <<<"$info" || fail "$name: interface name is not st:$q: $info"
    grep -q "Description = net_pcap0,rx_pcap=" <<<"$info" || fail "$name: no device description: $info"
    grep -q "Time precision = nanoseconds (9)" <<<"$info" || fail "$name: not nanoseconds: $info"
    grep -q "Number of stat entries = 1" <<<"$info" || fail "$name: no interface statistics block: $info"
    grep -q "Capture application: linecap" < <(capinfos "$f") || fail "$name: no shb_userappl"
    # tshark's own pcapng dissector shows the blocks, the ISB counters included.
    fields=$(tshark -X "read_format:MIME Files Format" -r "$f" -T fields -E separator=, \
        -e pcapng.options.option.data.interface.name \
        -e pcapng.options.option.data.interface.received \
        -e pcapng.options.option.data.interface.dropped 2>/dev/null | tr -d '\n')
    [[ $fields =~ ^st:$q,([0-9]+),([0-9]+)$ ]] || fail "$name: tshark shows interface/statistics '$fields'"
    recv=${BASH_REMATCH[1]} drop=${BASH_REMATCH[2]}
    n=$(capinfos -M -c "$f" | awk '/Number of packets/ {print $NF}')
    isb=$(storage_check isb "$f")
    [[ $isb == *"\"packets\": $n,"* && $isb == *"\"ifrecv\": $recv,"* && $isb == *"\"ifdrop\": 0,"* ]] \
        || fail "$name: the blocks say $isb; tshark says received $recv, capinfos $n packets"
    ((drop == 0 && recv == n)) || fail "$name: $n packets, ISB received $recv dropped $drop"
    received[$q]=$((received[$q] + recv))
    packets[$q]=$((packets[$q] + n))
done
((received[0] == 3000 && received[1] == 2000)) \
    || fail "ISB received per queue: q0 ${received[0]} (sent 3000), q1 ${received[1]} (sent 2000)"
linecapd_verify "$out" || fail "verify: $(cat "$TEST_TMPDIR/verify.out")"
log "$(tail -n 1 "$TEST_TMPDIR/verify.out")"
need_cmd mergecap
mergecap -w "$TEST_TMPDIR/sent.pcapng" "$TEST_TMPDIR/q0.pcap" "$TEST_TMPDIR/q1.pcap"
pcap_compare multiset "$TEST_TMPDIR/sent.pcapng" "$out" >/dev/null || fail "the files do not hold exactly the packets sent"
log "OK: ${#files[@]} pcapng files; ISB received q0 ${received[0]}, q1 ${received[1]}, no drops; manifests verify"
