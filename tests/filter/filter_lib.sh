# shellcheck shell=bash
# tests/filter/filter_lib.sh: helpers shared by the capture-filter integration tests.
# Source after tests/lib/common.sh.

CRAFT_PCAP="$LINECAP_SRC/tests/filter/craft_pcap.py"

# craft_pcap ARGS...: tests/filter/craft_pcap.py (edge-case frames with known addresses).
craft_pcap() { python3 "$CRAFT_PCAP" "$@"; }

# records FILE_OR_DIR...: total number of complete pcap records in the files, counting a
# directory's hidden in-progress files (.*.part) too and ignoring a partly written last
# record. For polling while the daemon writes: wait_for "(( \$(records DIR) >= N ))".
records() { python3 -m linecap_harness.pcap count "$@"; }

# records_each FILE...: the number of complete records of each file, one per line.
records_each() { python3 -m linecap_harness.pcap count-each "$@"; }

# cat_pcaps OUT IN...: OUT = the records of the IN files one after the other, as a
# nanosecond pcap (microsecond inputs, e.g. from tcpdump -w, are converted) with the
# largest snap length of the inputs; no IN files: an empty capture.
cat_pcaps() { python3 -m linecap_harness.pcap cat "$@"; }

# stream_output OUTDIR PORT QUEUE RESULT: RESULT = the finished files of (PORT, QUEUE) in
# OUTDIR, in name (= time) order, concatenated; prints how many files there were.
stream_output() {
    local dir=$1 port=$2 queue=$3 result=$4 files restore
    restore=$(shopt -p nullglob || true)
    shopt -s nullglob
    files=("$dir"/*"-$port-q$queue.pcap")
    eval "$restore"
    cat_pcaps "$result" "${files[@]}"
    echo "${#files[@]}"
}

# await_records DIR N TIMEOUT_S: wait until DIR holds N records (a net_pcap replay is
# complete), then stop the daemon (SIGTERM, exit 0 expected). On a timeout the daemon is
# stopped too and the test fails with its accounting lines, which tell why (drops?).
await_records() {
    local dir=$1 n=$2 timeout=$3 ok=1
    wait_for "(( \$(records '$dir') >= $n )) || ! linecapd_running" "$timeout" || ok=0
    linecapd_running || fail "linecapd exited before writing $n records ($(records "$dir") written)"
    stop_linecapd || fail "linecapd exited $LINECAPD_RC"
    ((ok)) || fail "capture incomplete after ${timeout}s: $(records "$dir") of $n records; $(grep 'reached the port' "$LINECAPD_LOG" | sed 's/.* info //' | tr '\n' ';')"
}

# summary_of PORT: the daemon's final accounting line for PORT from $LINECAPD_LOG.
summary_of() { grep -E "port $1: [0-9]+ packets reached the port" "$LINECAPD_LOG" | tail -n 1; }

# summary_number PORT WHAT: one number from that line (WHAT: reached, written, filtered).
summary_number() {
    local line
    line=$(summary_of "$1")
    case $2 in
        reached) sed -E 's/.*: ([0-9]+) packets reached the port.*/\1/' <<<"$line" ;;
        written) sed -E 's/.* ([0-9]+) written,.*/\1/' <<<"$line" ;;
        filtered) sed -E 's/.* ([0-9]+) filtered,.*/\1/' <<<"$line" ;;
    esac
}

# check_switch STREAM OLD_SEL OLD_SNAPLEN NEW_SEL NEW_SNAPLEN OUT MIN_K: OUT must be what a
# capture of STREAM writes when its policy switches once, between two packets, from (old
# filter, old snap length) to (new filter, new snap length): for some k >= MIN_K,
#     OUT == [STREAM[i] for i < k if old keeps it, cut at OLD_SNAPLEN]
#          ++ [STREAM[i] for i >= k if new keeps it, cut at NEW_SNAPLEN]
# OLD_SEL / NEW_SEL are tcpdump's selections (tcpdump -r STREAM -w SEL 'expr'). The switch
# must fall strictly inside STREAM[MIN_K:] with packets on both sides of it. Prints k.
check_switch() { python3 "$LINECAP_SRC/tests/filter/check_switch.py" "$@"; }
