#!/usr/bin/env bash
# The drop-accounting invariant on the live daemon: tcpreplay from a network namespace into
# a veth pair captured through net_af_xdp; once traffic has stopped and the daemon drained,
#   sent (tcpreplay) == reached + what the kernel dropped before the daemon could see it
#                       (veth counters, read around the replay; 0 in every scenario here)
#   reached == written + filtered + dropped(all reasons), exactly
#   written == the packets in the files; each drop reason non-zero where the scenario
#   causes it and zero elsewhere; the SIGTERM summary line says the same as /metrics.
#
#   invariant_test.sh overload     --topspeed 60-byte frames into 2 x 64 KiB write blocks;
#                                  linecapd is SIGSTOPped while the flood begins, so its
#                                  AF_XDP socket overruns for certain (xsk_fill_empty), then it
#                                  resumes into the rest of the flood (writer_full too when
#                                  the writer lags: counted, not required)
#   invariant_test.sh writer_full  output on an ext4 loop device whose writes the blkio/io
#                                  cgroup controller throttles to 64 KiB/s, O_DIRECT, 2 x 64
#                                  KiB blocks: the writer cannot keep up (writer_full only)
#   invariant_test.sh disk_full    output on a 3 MiB tmpfs that 7 MB of traffic fills: the
#                                  writer's ENOSPC is counted per block (disk_full only), and
#                                  the files stay valid and agree with written
#   invariant_test.sh no_drop      a BPF filter and size rotation, nothing dropped: the
#                                  files hold exactly what the filter keeps, and every
#                                  counter (packets, bytes, files) agrees with them
#
# Pass/fail never depends on timing, even on a 2-core machine busy with other work:
#   - drops that must happen are forced by a stopped process (overload) or by volume
#     (writer_full: 8.4 MB through a 64 KiB/s device; disk_full: 7 MB into 3 MiB);
#   - drops that must not happen cannot: writer_full, disk_full and no_drop send in chunks
#     smaller than the AF_XDP fill ring (2048 frames) and wait until linecapd has taken each
#     one in before the next (disk_full and no_drop also until it is written, and their
#     blocks hold a whole chunk), so no ring or block can overflow however little CPU the
#     daemon gets;
#   - the end state is observed (wait-drained), never slept for.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/metrics/integration/lib.sh"
mode=${1:?usage: invariant_test.sh overload|writer_full|disk_full|no_drop}
# shellcheck disable=SC2034  # used by common.sh (log lines, temp dir names)
TEST_NAME="invariant-$mode"
need_root
need_cmd tcpreplay python3 ip editcap
need_hugepages 256
need_bpffs
need_linecapd
make_tmpdir
show_on_failure "$TEST_TMPDIR/tcpreplay.log"
veth_pair "inv-$mode"
out="$TEST_TMPDIR/out"
mkdir "$out"

expects=()
extra_checks=()
settings=()
loops=1
case $mode in
    overload)
        gen_pcap --count 10000 --size 60 --seed 31 --flows 256 --out "$TEST_TMPDIR/sent.pcap"
        loops=20 # 200000 frames at top speed
        settings=(output.blocks_per_queue=2 output.block_size_kb=64 output.rotate.size_mb=64 output.rotate.interval_s=0)
        # With 4096 rx descriptors the PMD's 2048-frame fill ring runs dry first.
        expects=(--expect xsk_fill_empty=+ --expect nic_missed='*' --expect xsk_ring_full='*' --expect writer_full='*')
        ;;
    writer_full)
        need_cmd losetup mkfs.ext4 mount umount lsblk
        gen_pcap --count 6000 --size 1400 --seed 32 --flows 64 --out "$TEST_TMPDIR/sent.pcap"
        # A slow block device: ext4 on a loop device (tests/lib/common.sh) ...
        mount_loop_ext4 fsmnt 96M
        loopdev=$LOOP_DEV
        out="$fsmnt/out"
        mkdir "$out"
        # ... whose writes a cgroup throttles (the daemon joins it once it runs).
        majmin=$(lsblk -dno MAJ:MIN "$loopdev" | tr -d ' ')
        if [[ -e /sys/fs/cgroup/blkio/blkio.throttle.write_bps_device ]]; then
            cg=/sys/fs/cgroup/blkio/lc-$TEST_NAME-$$ # cgroup v1 blkio controller
            throttle() { echo "$majmin $1" >"$cg/blkio.throttle.write_bps_device"; }
            unthrottled=0
        elif grep -qw io /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
            cg=/sys/fs/cgroup/lc-$TEST_NAME-$$ # cgroup v2 io controller
            grep -qw io /sys/fs/cgroup/cgroup.subtree_control \
                || echo +io >/sys/fs/cgroup/cgroup.subtree_control \
                || skip "cannot enable the cgroup v2 io controller"
            throttle() { echo "$majmin wbps=$1" >"$cg/io.max"; }
            unthrottled=max
        else
            skip "no cgroup I/O throttling (neither the cgroup v1 blkio nor the v2 io controller)"
        fi
        mkdir "$cg"
        # Registered before the daemon's kill, so it runs after it: the cgroup is empty then.
        on_exit "rmdir '$cg' 2>/dev/null || true"
        _lc_reaper_add "rmdir '$cg'"
        throttle 65536
        log "output on $loopdev ($majmin), ext4 at $fsmnt, writes throttled to 64 KiB/s in $cg"
        settings=(output.blocks_per_queue=2 output.block_size_kb=64 output.o_direct=true
            output.rotate.size_mb=16 output.rotate.interval_s=0)
        expects=(--expect writer_full=+)
        ;;
    disk_full)
        need_cmd mount umount
        gen_pcap --count 5000 --size 1400 --seed 34 --flows 64 --out "$TEST_TMPDIR/sent.pcap"
        # 7 MB of records into a 3 MiB tmpfs: it fills, whatever the timing.
        fsdir=$(mktemp -d "${TMPDIR:-/tmp}/lc-$TEST_NAME-fs.XXXXXX")
        on_exit "rm -rf -- '$fsdir'"
        mount -t tmpfs -o size=3m,mode=0755 lc-disk-full "$fsdir" || skip "cannot mount a tmpfs"
        on_exit "umount '$fsdir' 2>/dev/null || umount -l '$fsdir' 2>/dev/null || true"
        _lc_reaper_add "umount -l '$fsdir'; rm -rf -- '$fsdir'"
        out="$fsdir/out"
        mkdir "$out"
        settings=(output.blocks_per_queue=16 output.block_size_kb=256 output.rotate.size_mb=1 output.rotate.interval_s=0)
        expects=(--expect disk_full=+)
        ;;
    no_drop)
        need_cmd tcpdump
        gen_pcap --count 3000 --mix --seed 33 --flows 300 --both-directions --out "$TEST_TMPDIR/sent.pcap"
        loops=2
        filter="tcp"
        # 1 MiB files: the replay spans several, so rotation and finalisation are counted.
        # 16 x 256 KiB of blocks hold any chunk of 1000 frames (<= 1518 bytes each).
        settings=(port.filter="$filter" output.blocks_per_queue=16 output.block_size_kb=256
            output.rotate.size_mb=1 output.rotate.interval_s=0)
        ;;
    *) fail "unknown mode $mode" ;;
esac

afxdp_config "$TEST_TMPDIR/linecap.yaml" "$out" "${settings[@]}"
start_capture "$TEST_TMPDIR/linecap.yaml"
if [[ -n ${cg:-} ]]; then
    echo "$LINECAPD_PID" >"$cg/cgroup.procs" # every thread; only the writer does I/O
    grep -q "${cg##*/}" "/proc/$LINECAPD_PID/cgroup" || fail "linecapd did not join $cg"
fi

# One scrape while the capture runs: nothing may be accounted twice at any moment.
scrape_during() {
    scrape_to "$TEST_TMPDIR/scrape.during"
    local inflight
    inflight=$(accounting in-flight "$TEST_TMPDIR/scrape.during") || fail "in-flight < 0 during the capture"
    log "during the capture: $inflight packets in flight"
    [[ ${LINECAP_VERBOSE:-0} != 1 ]] || cat "$TEST_TMPDIR/scrape.during" >&2
}

kernel_counters "$TEST_TMPDIR/kernel.before"
case $mode in
    overload)
        # Stopped while the flood begins: the AF_XDP socket's 2048 fill-ring frames are used
        # up and every further frame is an overrun the kernel counts (the socket's
        # rx_dropped, which DPDK reports as imissed, and the capture veth's rx_dropped).
        # Resume once the kernel has counted one; the rest of the flood meets the daemon.
        before_drops=$(cap_rx_dropped)
        pause_linecapd
        replay_bg "$TEST_TMPDIR/sent.pcap" top "$loops"
        wait_for "(( \$(cap_rx_dropped) > $before_drops ))" 120 \
            || fail "no overrun counted while linecapd was stopped"
        resume_linecapd
        log "resumed linecapd after $(($(cap_rx_dropped) - before_drops)) overruns"
        accounting wait-for "http://$METRICS_LISTEN/metrics" received --at-least 1 --pid "$LINECAPD_PID" \
            || fail "linecapd received nothing after it resumed"
        scrape_during
        replay_wait
        ;;
    writer_full)
        replay_paced "$TEST_TMPDIR/sent.pcap" 1000 5000 received 1 scrape_during
        throttle "$unthrottled" # traffic is over: let the writer drain the blocks it holds
        ;;
    disk_full)
        replay_paced "$TEST_TMPDIR/sent.pcap" 1000 5000 accounted 1 scrape_during
        ;;
    no_drop)
        replay_paced "$TEST_TMPDIR/sent.pcap" 1000 10000 accounted "$loops" scrape_during
        ;;
esac
expected=$(($(pcap_compare count -q "$TEST_TMPDIR/sent.pcap") * loops))
((SENT == expected)) || fail "tcpreplay sent $SENT of $expected packets"
log "tcpreplay sent $SENT packets"

accounting wait-drained "http://$METRICS_LISTEN/metrics" --out "$TEST_TMPDIR/scrape.final" --timeout 120 \
    || fail "the daemon did not drain"
kernel_counters "$TEST_TMPDIR/kernel.after"
stop_linecapd 60 || fail "linecapd exited $LINECAPD_RC"

if [[ $mode == no_drop ]]; then
    # The packets the filter keeps, by libpcap itself (the daemon compiles the same syntax).
    tcpdump -r "$TEST_TMPDIR/sent.pcap" -w "$TEST_TMPDIR/kept.pcap" "$filter" 2>/dev/null
    kept=$(pcap_compare count -q "$TEST_TMPDIR/kept.pcap")
    ((kept > 0 && kept < expected / loops)) || fail "filter '$filter' keeps $kept of $((expected / loops)): a poor test"
    sent_bytes=$(($(pcap_compare count "$TEST_TMPDIR/sent.pcap" | sed -n 's/.*: [0-9]* packets, \([0-9]*\) bytes$/\1/p') * loops))
    extra_checks=(--written $((kept * loops)) --sent-bytes "$sent_bytes")
fi

accounting check --scrape "$TEST_TMPDIR/scrape.final" --log "$LINECAPD_LOG" --out-dir "$out" \
    --sent "$SENT" --kernel-before "$TEST_TMPDIR/kernel.before" --kernel-after "$TEST_TMPDIR/kernel.after" \
    --xdp-drops-visible "${expects[@]}" "${extra_checks[@]}" || fail "drop accounting is not exact ($mode)"
pcap_compare validate "$out" >/dev/null || fail "a capture file is not valid"

if [[ $mode == no_drop ]]; then
    # Exactly the packets the filter keeps, each once per loop, nothing else.
    pcap_compare multiset --loops "$loops" "$TEST_TMPDIR/kept.pcap" "$out" \
        || fail "the files do not hold exactly the packets the filter keeps"
    shopt -s nullglob
    files=("$out"/*.pcap)
    ((${#files[@]} >= 2)) || fail "expected size rotation to produce several files, got ${#files[@]}"
    log "OK: $SENT sent, $((kept * loops)) written in ${#files[@]} files, the rest filtered, nothing dropped"
else
    # Whatever was written is a packet that was sent, at most once per loop (the others
    # were dropped, and counted).
    verdict=$(pcap_compare multiset --loops "$loops" "$TEST_TMPDIR/sent.pcap" "$out" | head -n 1 || true)
    [[ $verdict == *", extra 0 "* ]] || fail "the files hold packets that were not sent: $verdict"
    log "OK ($mode): $(grep -o 'port p0: .*' "$LINECAPD_LOG" | tail -n 1)"
fi
