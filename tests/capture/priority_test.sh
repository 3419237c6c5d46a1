#!/usr/bin/env bash
# capture.worker_priority and capture.idle_sleep_us are applied to the worker lcore threads
# the way the kernel reports them: policy, real-time priority and nice value of each
# thread in /proc/PID/task/TID/stat, read while the daemon captures. A priority the
# process may not take (no CAP_SYS_NICE) stops the start with exit 78 and one line naming
# the key, before any packet is polled. --check warns when a real-time worker shares its
# CPU with the control lcore. output.writer_cpus / output.writer_priority put the writer
# threads on the workers' CPUs at the priority asked (a refused one also stops the start
# with exit 78 and one line naming the keys).
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_cmd setpriv
need_hugepages 256
make_tmpdir

# Worker threads are named lcore-worker-N by DPDK (rte-worker-N in Debian's 22.11 build).
worker_tids() {
    local t
    for t in /proc/"$LINECAPD_PID"/task/*; do
        if [[ $(cat "$t/comm" 2>/dev/null) == @(lcore|rte)-worker-* ]]; then echo "${t##*/}"; fi
    done
}

# sched fields of one thread: "policy rt_priority nice" (stat fields 41, 40 and 19; the
# command name may hold blanks, so count from the closing parenthesis).
sched_of() {
    local stat rest f
    stat=$(cat "/proc/$LINECAPD_PID/task/$1/stat")
    rest=${stat##*) }
    read -r -a f <<<"$rest"
    echo "${f[38]} ${f[37]} ${f[16]}"
}

writer_tids() {
    local t
    for t in /proc/"$LINECAPD_PID"/task/*; do
        if [[ $(cat "$t/comm" 2>/dev/null) == lc-writer-* ]]; then echo "${t##*/}"; fi
    done
}

allowed_cpus() { awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$LINECAPD_PID/task/$1/status"; }

run_with() {  # run_with PRIORITY IDLE_US EXPECTED("policy rtprio nice") [OUTPUT_YAML_LINES [SLEEP_BELOW]]
    local priority=$1 idle=$2 want=$3 output_extra=${4:-} below=${5:-1}
    mkdir -p "$TEST_TMPDIR/out-$priority"
    cat >"$TEST_TMPDIR/p.yaml" <<YAML
eal:
  lcores: "0-1"
ports:
  - name: p0
    device: "net_null0"
capture:
  worker_priority: "$priority"
  idle_sleep_us: $idle
  sleep_below: $below
output:
  directory: "$TEST_TMPDIR/out-$priority"
  rotate: { size_mb: 64, interval_s: 0 }
  index: false
$output_extra
metrics:
  enabled: false
YAML
    start_linecapd "$TEST_TMPDIR/p.yaml"
    # One log for every start: wait for this start's line.
    runs=$((runs + 1))
    wait_for_linecapd "(( \$(grep -c 'capture running' '$LINECAPD_LOG') >= $runs ))" 30
    local tids tid got
    tids=$(worker_tids)
    [[ -n $tids ]] || fail "$priority: no worker thread found in /proc/$LINECAPD_PID/task"
    for tid in $tids; do
        got=$(sched_of "$tid")
        [[ $got == "$want" ]] || fail "$priority: worker thread $tid has policy/rtprio/nice '$got', expected '$want'"
        log "$priority: worker thread $tid: policy/rtprio/nice $got"
    done
    grep -q "priority $priority, idle sleep $idle us" "$LINECAPD_LOG" || fail "$priority: the start log does not say it"
    if ((below > 1)); then
        grep -q "idle sleep $idle us (also after fewer than $below packets)" "$LINECAPD_LOG" \
            || fail "capture.sleep_below $below: the start log does not say it"
    fi
    # The writer: on the control lcore's CPU 0 unless told otherwise, where it was told.
    local want_cpus=0 want_writer="0 0 0"
    [[ $output_extra == *"writer_cpus: workers"* ]] && want_cpus=1
    [[ $output_extra =~ writer_priority:\ \"fifo:([0-9]+)\" ]] && want_writer="1 ${BASH_REMATCH[1]} 0"
    tids=$(writer_tids)
    [[ -n $tids ]] || fail "$priority: no lc-writer thread found"
    for tid in $tids; do
        got=$(allowed_cpus "$tid")
        [[ $got == "$want_cpus" ]] || fail "writer thread $tid may run on CPUs '$got', expected '$want_cpus' ($output_extra)"
        got=$(sched_of "$tid")
        [[ $got == "$want_writer" ]] || fail "writer thread $tid has policy/rtprio/nice '$got', expected '$want_writer'"
        log "$priority: writer thread $tid: CPUs $(allowed_cpus "$tid"), policy/rtprio/nice $got"
    done
    stop_linecapd || fail "linecapd exited $LINECAPD_RC"
}

runs=0
# Policies as in sched.h: SCHED_OTHER 0, SCHED_FIFO 1, SCHED_RR 2.
run_with fifo:1 20 "1 1 0"
run_with rr:3 0 "2 3 0"
run_with nice:-7 0 "0 0 -7"
# The writer beside the worker, real-time below it.
run_with rr:2 20 "2 2 0" $'  writer_cpus: workers\n  writer_priority: "fifo:1"' 64
run_with normal 0 "0 0 0"   # as started: normal scheduling, nice 0

# Without CAP_SYS_NICE even root may not take a real-time policy: the start fails, exit
# 78, with one line naming the key and the reason.
rc=0
# A regular file: linecapd reads configurations only from regular files (bounded reads).
sed 's/worker_priority: "normal"/worker_priority: "fifo:1"/' "$TEST_TMPDIR/p.yaml" >"$TEST_TMPDIR/fifo1.yaml"
setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice \
    "$LINECAPD" --config "$TEST_TMPDIR/fifo1.yaml" \
    >"$TEST_TMPDIR/denied.log" 2>&1 || rc=$?
((rc == 78)) || fail "fifo:1 without CAP_SYS_NICE exited $rc, expected 78: $(tail -3 "$TEST_TMPDIR/denied.log")"
grep -q 'capture.worker_priority fifo:1: worker lcore 1: sched_setscheduler(fifo:1): Operation not permitted' \
    "$TEST_TMPDIR/denied.log" || fail "no clear error: $(tail -3 "$TEST_TMPDIR/denied.log")"
# A writer priority the process may not take: the same, naming the writer's keys.
sed 's/^  index: false$/&\n  writer_priority: "fifo:1"/' "$TEST_TMPDIR/p.yaml" >"$TEST_TMPDIR/wfifo1.yaml"
grep -q 'writer_priority: "fifo:1"' "$TEST_TMPDIR/wfifo1.yaml" || fail "test setup: no writer priority in wfifo1.yaml"
rc=0
setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice \
    "$LINECAPD" --config "$TEST_TMPDIR/wfifo1.yaml" >"$TEST_TMPDIR/wdenied.log" 2>&1 || rc=$?
((rc == 78)) || fail "writer fifo:1 without CAP_SYS_NICE exited $rc, expected 78: $(tail -3 "$TEST_TMPDIR/wdenied.log")"
grep -q 'output.writer_cpus control, output.writer_priority fifo:1: writer thread: sched_setscheduler(fifo:1): Operation not permitted' \
    "$TEST_TMPDIR/wdenied.log" || fail "no clear error for the writer: $(tail -3 "$TEST_TMPDIR/wdenied.log")"
# The default (rr:1) on a layout that puts the worker on the control lcore's CPU: warned.
mkdir -p "$TEST_TMPDIR/out-check"
cat >"$TEST_TMPDIR/shared.yaml" <<YAML
eal:
  lcores: "0@0,1@0"
  hugepages: false
ports:
  - name: p0
    device: "net_null0"
output:
  directory: "$TEST_TMPDIR/out-check"
  rotate: { size_mb: 1, interval_s: 60 }
metrics:
  enabled: false
YAML
"$LINECAPD" --config "$TEST_TMPDIR/shared.yaml" --check >"$TEST_TMPDIR/check.log" 2>&1 || true
grep -q 'capture.worker_priority rr:1: worker lcore 1 shares CPU 0 with the control lcore' "$TEST_TMPDIR/check.log" \
    || fail "--check does not warn about a real-time worker on the control CPU: $(cat "$TEST_TMPDIR/check.log")"
log "OK: worker priorities applied as configured; refused one reported: $(grep -o 'capture.worker_priority.*' "$TEST_TMPDIR/denied.log" | head -1)"
