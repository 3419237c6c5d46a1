#!/usr/bin/env bash
# A SIGHUP that raises the snap length must still produce valid files: every file's
# header snap length must be at least the caplen of each of its records, or libpcap
# readers (tcpdump, tshark) cut every record back to the header's snap length and the
# crash recovery treats the file as corrupt from its first long record on.
#
#   start    snaplen 96; send X        files: records cut at 96, header snaplen 96
#   HUP      snaplen 262144 (whole packets)
#   send Y   files: whole records, and a header that allows them
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/filter/filter_lib.sh"
need_root
need_linecapd
need_cmd tcpdump editcap tcpreplay
need_hugepages 256
make_tmpdir
veth_pair filter-snap

in=$TEST_TMPDIR/in
out=$TEST_TMPDIR/out
mkdir -p "$in" "$out" "$TEST_TMPDIR/phase1"
gen_pcap --count 600 --mix --seed 61 --flows 100 --out "$in/X.pcap"
gen_pcap --count 600 --mix --seed 62 --flows 100 --out "$in/Y.pcap"

write_cfg() {  # SNAPLEN
    write_config "$TEST_TMPDIR/linecap.yaml" "net_af_packet0,iface=$CAP_IF,qpairs=1,blocksz=4096,framesz=2048,framecnt=4096" \
        "$out" port.name=n0 port.rx_descriptors=1024 port.snaplen="$1" output.blocks_per_queue=4 \
        output.block_size_kb=256 output.rotate.size_mb=1024 output.rotate.interval_s=0 output.manifest=false \
        metrics.enabled=false
}

write_cfg 96
start_linecapd "$TEST_TMPDIR/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 30
sent=$(replay_into_ns "$in/X.pcap" 4000)
((sent == 600)) || fail "tcpreplay sent $sent of 600"
wait_for_linecapd "(( \$(records '$out') >= 600 ))" 30

write_cfg 262144
kill -HUP "$LINECAPD_PID"
wait_for_linecapd "grep -q \"port n0: filter now '', snaplen 262144\" '$LINECAPD_LOG'" 20
wait_for_linecapd "[[ -z \$(ls -A '$out' | grep '\\.part\$') ]] && ls '$out'/*.pcap" 20
mv "$out"/*.pcap "$TEST_TMPDIR/phase1/"

sent=$(replay_into_ns "$in/Y.pcap" 4000)
((sent == 600)) || fail "tcpreplay sent $sent of 600"
wait_for_linecapd "(( \$(records '$out') >= 600 ))" 30
stop_linecapd || fail "linecapd exited $LINECAPD_RC"

editcap -F nsecpcap -s 96 "$in/X.pcap" "$TEST_TMPDIR/exp1.pcap"
cat_pcaps "$TEST_TMPDIR/got1.pcap" "$TEST_TMPDIR"/phase1/*.pcap
pcap_compare headers "$TEST_TMPDIR/exp1.pcap" "$TEST_TMPDIR/got1.pcap" || fail "before the reload: records differ from editcap -s 96"
cat_pcaps "$TEST_TMPDIR/got2.pcap" "$out"/*.pcap
pcap_compare headers "$in/Y.pcap" "$TEST_TMPDIR/got2.pcap" || fail "after the reload: records are not whole packets"

# What a reader sees: tcpdump re-writes each file as libpcap reads it.
for f in "$TEST_TMPDIR"/phase1/*.pcap "$out"/*.pcap; do
    pcap_compare validate "$f" >"$TEST_TMPDIR/validate.txt" 2>&1 \
        || fail "$(basename "$f") is not a valid pcap after raising the snap length on SIGHUP: $(head -n 4 "$TEST_TMPDIR/validate.txt")"
    tcpdump -r "$f" -w "$TEST_TMPDIR/reread.pcap" 2>/dev/null
    pcap_compare headers "$f" "$TEST_TMPDIR/reread.pcap" >/dev/null \
        || fail "libpcap reads $(basename "$f") differently from what was written (records cut to the header's snap length)"
done
log "OK: raising the snap length on SIGHUP gives whole records in valid files"
