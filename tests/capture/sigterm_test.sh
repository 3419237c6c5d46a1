#!/usr/bin/env bash
# SIGTERM in the middle of traffic: net_pcap with infinite_rx replays at memory speed, far
# faster than the output, while the daemon is told to stop. Afterwards there are only
# complete, readable .pcap files (no in-progress file), and they hold exactly the number
# of packets the daemon reports written.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_cmd capinfos
need_hugepages 512
make_tmpdir

gen_pcap --count 2000 --mix --seed 31 --out "$TEST_TMPDIR/in.pcap"
mkdir "$TEST_TMPDIR/out"
# infinite_rx keeps the whole file in mbufs.
write_config "$TEST_TMPDIR/linecap.yaml" "net_pcap0,rx_pcap=$TEST_TMPDIR/in.pcap,infinite_rx=1" "$TEST_TMPDIR/out" \
    port.name=flood port.rx_descriptors=1024 capture.mbufs=16383 output.block_size_kb=512 \
    output.rotate.size_mb=8 output.rotate.interval_s=0 metrics.enabled=false

start_linecapd "$TEST_TMPDIR/linecap.yaml"
wait_for_linecapd "ls '$TEST_TMPDIR'/out/*.pcap >/dev/null 2>&1" 60 || fail "no file was finalised"
stop_linecapd || fail "linecapd exited $LINECAPD_RC after SIGTERM"

shopt -s nullglob
parts=("$TEST_TMPDIR"/out/.*.part)
((${#parts[@]} == 0)) || fail "in-progress files left: ${parts[*]}"
files=("$TEST_TMPDIR"/out/*.pcap)
in_files=0
for f in "${files[@]}"; do
    capinfos "$f" >/dev/null 2>&1 || fail "capinfos cannot read $f"
    pcap_compare validate "$f" >/dev/null || fail "$f is not a valid pcap"
    in_files=$((in_files + $(capinfos -M -c "$f" | awk '/Number of packets/ {print $NF}')))
done
summary=$(grep 'reached the port' "$LINECAPD_LOG")
written=$(sed -n 's/.* \([0-9]*\) written,.*/\1/p' <<<"$summary")
log "${#files[@]} files, $in_files packets; daemon: $summary"
((in_files == written)) || fail "files hold $in_files packets, the daemon says $written written"
((written > 0)) || fail "nothing written"
