# shellcheck shell=bash
# tests/storage/storage_lib.sh: helpers shared by the storage integration tests (sourced
# after tests/lib/common.sh, whose mount_small_fs they use for small file systems).
#
#   storage_config FILE DEVICE QUEUES OUTDIR [SECTION.KEY=VALUE…]
#                                a one-port config ("st", write_config), metrics on
#                                $METRICS_LISTEN, with those settings
#   dir_usage DIR                bytes of every regular file in DIR (hidden ones too)
#   fs_free DIR                  free bytes of DIR's filesystem (statvfs f_bavail)
#   storage_check ARGS…          tests/storage/storage_check.py
#   count_finished DIR           finished capture files in DIR
#   linecapd_verify DIR [ARGS…]  `linecapd verify`, output to $TEST_TMPDIR/verify.out;
#                                returns its exit status
STORAGE_CHECK="$LINECAP_SRC/tests/storage/storage_check.py"

storage_config() {
    local file=$1 device=$2 queues=$3 outdir=$4
    shift 4
    write_config "$file" "$device" "$outdir" port.name=st port.rx_queues="$queues" port.rx_descriptors=2048 "$@"
}

dir_usage() {
    local total=0 s
    for s in $(find "$1" -maxdepth 1 -type f -printf '%s\n' 2>/dev/null); do total=$((total + s)); done
    echo "$total"
}

fs_free() { stat -f -c '%a %S' "$1" | awk '{ print $1 * $2 }'; }

storage_check() { python3 "$STORAGE_CHECK" "$@"; }

count_finished() { find "$1" -maxdepth 1 -type f \( -name '*.pcap' -o -name '*.pcapng' \) ! -name '.*' | wc -l; }

linecapd_verify() {
    local rc=0
    "$LINECAPD" verify "$@" >"$TEST_TMPDIR/verify.out" 2>&1 || rc=$?
    return "$rc"
}

# af_packet on the capture veth, one or two queues; the large kernel ring absorbs
# scheduling hiccups of a 2-core machine (as in tests/capture/live_test.sh).
af_packet_device() {
    echo "net_af_packet0,iface=$CAP_IF,qpairs=${1:-1},blocksz=4096,framesz=2048,framecnt=16384"
}
