# shellcheck shell=bash
# shellcheck disable=SC2034,SC2120  # variables and optional arguments used by the tests
# tests/lib/common.sh: helpers for linecap's integration test scripts (bash).
#
#   source "${LINECAP_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
#
# Sourcing turns on `set -euo pipefail` and installs one EXIT/INT/TERM/HUP trap that runs the
# commands registered with on_exit in reverse order, so everything a test creates (netns,
# veths, processes, temp dirs) is removed however it ends. Exit 77 = skipped (meson's
# convention), always with a printed reason. See tests/README.md for the list of helpers.
#
# Helpers that register cleanup (on_exit, make_tmpdir, veth_pair, start_linecapd) must run in
# the test's main shell, not inside $(...) or a pipeline: a subshell's registrations are lost.

if [[ -n ${_LC_COMMON_SOURCED:-} ]]; then
    return 0
fi
_LC_COMMON_SOURCED=1
set -euo pipefail

LINECAP_SRC=${LINECAP_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
LINECAP_BUILD=${LINECAP_BUILD:-$LINECAP_SRC/build}
LINECAPD=${LINECAPD:-$LINECAP_BUILD/src/linecapd}
GEN_PCAP="$LINECAP_SRC/tests/tools/gen_pcap.py"
PCAP_COMPARE="$LINECAP_SRC/tests/tools/pcap_compare.py"
TEST_NAME=${TEST_NAME:-$(basename "$0" .sh)}
# The Python harness (tests/lib/linecap_harness), also for a test run without meson; no
# __pycache__ left in the source tree.
case :${PYTHONPATH:-}: in
    *":$LINECAP_SRC/tests/lib:"*) ;;
    *) PYTHONPATH="$LINECAP_SRC/tests/lib${PYTHONPATH:+:$PYTHONPATH}" ;;
esac
PYTHONDONTWRITEBYTECODE=1
export LINECAP_SRC LINECAP_BUILD LINECAPD GEN_PCAP PCAP_COMPARE PYTHONPATH PYTHONDONTWRITEBYTECODE

TEST_TMPDIR=${TEST_TMPDIR:-}
LINECAPD_PID=
LINECAPD_RC=
LINECAPD_LOG=
CAP_IF=
PEER_IF=
NS=

_LC_CLEANUP=()
_LC_SHOW_ON_FAILURE=()
_LC_VETH_N=0
_LC_REAPER_FILE=

# --- messages and verdicts -----------------------------------------------------------------

# log MSG...: a time-stamped line on stderr (stdout stays free for values helpers echo).
log() { printf '[%s %s] %s\n' "$(date +%T.%3N)" "$TEST_NAME" "$*" >&2; }

# skip REASON: prints "SKIP: REASON" and exits 77 (meson counts the test as skipped).
skip() {
    printf 'SKIP: %s\n' "$*" >&2
    exit 77
}

# fail MSG: prints "FAIL: MSG" and exits 1.
fail() {
    printf 'FAIL: %s\n' "$*" >&2
    exit 1
}

# --- requirements (each skips with a reason) -----------------------------------------------

need_root() {
    [[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces, veths, hugepages)"
}

# need_cmd CMD...: skip unless every command is on PATH.
need_cmd() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 \
            || skip "needs '$c' (scripts/install-deps.sh installs the test dependencies)"
    done
}

need_linecapd() {
    [[ -n ${LINECAPD:-} && -x $LINECAPD ]] \
        || skip "linecapd binary not found at '${LINECAPD:-}' (build first, or set LINECAPD)"
}

# need_linecap: the retrieval tool, $LINECAP (default: the build's); skip when not built.
need_linecap() {
    LINECAP=${LINECAP:-$LINECAP_BUILD/src/linecap}
    [[ -x $LINECAP ]] || skip "linecap binary not found at '$LINECAP' (build first, or set LINECAP)"
}

# need_hugepages [N]: skip unless N (default 256) free 2 MiB pages and a hugetlbfs mount.
need_hugepages() {
    local want=${1:-256} free
    free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null || echo 0)
    ((free >= want)) \
        || skip "needs $want free 2 MiB hugepages, $free free (scripts/hugepages.sh reserve 1024)"
    awk '$3 == "hugetlbfs" { found = 1 } END { exit !found }' /proc/mounts \
        || skip "no hugetlbfs mounted (scripts/hugepages.sh reserve 1024 mounts /dev/hugepages)"
}

# need_bpffs: skip unless bpffs is mounted at /sys/fs/bpf (net_af_xdp needs it).
need_bpffs() {
    awk '$2 == "/sys/fs/bpf" && $3 == "bpf" { found = 1 } END { exit !found }' /proc/mounts \
        || skip "bpffs not mounted at /sys/fs/bpf (scripts/hugepages.sh reserve mounts it)"
}

# --- cleanup registry ----------------------------------------------------------------------

# on_exit 'CMD': run CMD (eval'd) when the test exits, however it exits; last registered
# runs first. A failing cleanup command is logged and the rest still run.
on_exit() { _LC_CLEANUP+=("$*"); }

# show_on_failure FILE...: print the tail of these files if the test fails (not on skip).
show_on_failure() { _LC_SHOW_ON_FAILURE+=("$@"); }

_lc_cleanup() {
    local rc=$? i f
    # One cleanup, not cut short by a second Ctrl-C (each step is bounded in time).
    trap - EXIT
    trap '' INT TERM HUP
    set +e
    if ((rc != 0 && rc != 77)); then
        for f in "${_LC_SHOW_ON_FAILURE[@]}"; do
            [[ -s $f ]] || continue
            printf -- '----- last 60 lines of %s -----\n' "$f" >&2
            tail -n 60 -- "$f" >&2
            printf -- '----- end of %s -----\n' "$f" >&2
        done
    fi
    for ((i = ${#_LC_CLEANUP[@]} - 1; i >= 0; i--)); do
        eval "${_LC_CLEANUP[i]}" || log "cleanup step failed: ${_LC_CLEANUP[i]}"
    done
    exit "$rc"
}

_lc_on_signal() {
    log "caught SIG$1, cleaning up"
    exit "$2"
}

trap _lc_cleanup EXIT
trap '_lc_on_signal INT 130' INT
trap '_lc_on_signal TERM 143' TERM
trap '_lc_on_signal HUP 129' HUP

# Backstop for a SIGKILL (meson sends SIGKILL 0.5 s after SIGTERM on a timeout, which can
# cut the trap short): a detached process in its own session waits for this test to die and
# then runs the commands given here. They must be idempotent (the trap normally ran them
# already) and name only this test's own resources.
_lc_reaper_add() {
    if [[ -z $_LC_REAPER_FILE ]]; then
        _LC_REAPER_FILE=$(mktemp "${TMPDIR:-/tmp}/.lc-reaper.$$.XXXXXX")
        # shellcheck disable=SC2016  # expanded by the reaper, not here
        setsid -f bash -c '
            tail --pid="$1" -s 0.2 -f /dev/null 2>/dev/null
            while IFS= read -r line; do eval "$line"; done < "$2"
            rm -f -- "$2"' lc-reaper "$$" "$_LC_REAPER_FILE" </dev/null >/dev/null 2>&1
    fi
    printf '%s >/dev/null 2>&1\n' "$1" >>"$_LC_REAPER_FILE"
}

# --- temp dirs -----------------------------------------------------------------------------

# make_tmpdir [VAR]: create a temp dir, store its path in VAR (default TEST_TMPDIR) and
# register its removal (kept, and its path logged, when LINECAP_KEEP_TMP=1).
make_tmpdir() {
    local var=${1:-TEST_TMPDIR} dir
    dir=$(mktemp -d "${TMPDIR:-/tmp}/lc-${TEST_NAME//[^A-Za-z0-9_-]/_}.XXXXXX")
    printf -v "$var" '%s' "$dir"
    if [[ ${LINECAP_KEEP_TMP:-0} == 1 ]]; then
        on_exit "log 'kept temp dir $dir'"
    else
        on_exit "rm -rf -- '$dir'"
        _lc_reaper_add "rm -rf -- '$dir'"
    fi
}

# mount_small_fs VAR SIZE: a private tmpfs of SIZE under $TEST_TMPDIR, its path in VAR;
# unmounted on exit (and by the reaper if the test is killed).
mount_small_fs() {
    local var=${1:?mount_small_fs VAR SIZE} size=${2:?mount_small_fs VAR SIZE} dir
    [[ -n $TEST_TMPDIR ]] || make_tmpdir
    dir=$(mktemp -d "$TEST_TMPDIR/fs.XXXXXX")
    mount -t tmpfs -o "size=$size,mode=0755" tmpfs "$dir" || skip "cannot mount a tmpfs (needs root)"
    on_exit "umount -l '$dir' 2>/dev/null || true"
    _lc_reaper_add "umount -l '$dir'"
    printf -v "$var" '%s' "$dir"
}

# --- file systems that fail on command -----------------------------------------------------

FAULTFS="$LINECAP_SRC/tests/lib/linecap_harness/faultfs.py"

# need_faultfs: skip unless FUSE works here (/dev/fuse, fusermount3, Debian's pyfuse3).
need_faultfs() {
    need_cmd fusermount3
    [[ -c /dev/fuse ]] || skip "no /dev/fuse (FUSE is not available here)"
    /usr/bin/python3 -c 'import pyfuse3, trio' 2>/dev/null \
        || skip "needs Debian's python3-pyfuse3 (scripts/install-deps.sh installs it)"
}

# mount_faultfs VAR: a pass-through FUSE file system (tests/lib/linecap_harness/faultfs.py)
# over a new directory under $TEST_TMPDIR, mounted on another; the mount point in VAR.
# faultfs_set MOUNTPOINT MODE [SECONDS] fails or stalls it. Unmounted on exit (lazily if
# something still holds it, and by the reaper if the test is killed).
mount_faultfs() {
    local var=${1:?mount_faultfs VAR} dir
    need_faultfs
    [[ -n $TEST_TMPDIR ]] || make_tmpdir
    dir=$(mktemp -d "$TEST_TMPDIR/faultfs.XXXXXX")
    mkdir "$dir/backing" "$dir/mnt"
    on_exit "'$FAULTFS' umount '$dir/mnt' || true"
    _lc_reaper_add "'$FAULTFS' umount '$dir/mnt'"
    "$FAULTFS" mount "$dir/backing" "$dir/mnt" --log "$dir/faultfs.log" >/dev/null \
        || fail "mount_faultfs: $(tail -n 5 "$dir/faultfs.log" 2>/dev/null)"
    show_on_failure "$dir/faultfs.log"
    log "faultfs: $dir/mnt over $dir/backing"
    printf -v "$var" '%s' "$dir/mnt"
}

# faultfs_set MOUNTPOINT ok|eio|enospc|erofs|stall SECONDS: in effect when it returns.
faultfs_set() {
    "$FAULTFS" set "$@" || fail "faultfs_set $*"
    log "faultfs: $1 now $2${3:+ $3 s}"
}

declare -gA _LC_LOOP_DEV=() _LC_LOOP_IMG=()

# mount_loop_ext4 VAR SIZE: an ext4 image of SIZE (e.g. 64M) on a loop device, mounted
# errors=remount-ro on a new directory under $TEST_TMPDIR, its path in VAR and the device in
# $LOOP_DEV; unmounted and detached on exit (and by the reaper).
mount_loop_ext4() {
    local var=${1:?mount_loop_ext4 VAR SIZE} size=${2:?mount_loop_ext4 VAR SIZE} dir dev
    need_cmd losetup mkfs.ext4 mount umount
    [[ -n $TEST_TMPDIR ]] || make_tmpdir
    dir=$(mktemp -d "$TEST_TMPDIR/loop.XXXXXX")
    mkdir "$dir/mnt"
    truncate -s "$size" "$dir/fs.img"
    mkfs.ext4 -q -F "$dir/fs.img" >/dev/null 2>&1 || skip "mkfs.ext4 failed on a file"
    _lc_loop_attach "$dir/mnt" "$dir/fs.img"
    printf -v "$var" '%s' "$dir/mnt"
}

# _lc_loop_attach MOUNTPOINT IMAGE: a loop device for IMAGE, mounted on MOUNTPOINT.
_lc_loop_attach() {
    local mnt=$1 img=$2 dev
    dev=$(losetup --find --show "$img" 2>/dev/null) || skip "no free loop device (losetup)"
    # Detached last (autoclear if a lazily unmounted file system still holds it).
    on_exit "losetup -d '$dev' 2>/dev/null || true"
    _lc_reaper_add "umount -l '$mnt'; losetup -d '$dev'"
    mount -t ext4 -o errors=remount-ro "$dev" "$mnt" || skip "cannot mount ext4 on $dev"
    on_exit "umount '$mnt' 2>/dev/null || umount -l '$mnt' 2>/dev/null || true"
    _LC_LOOP_DEV[$mnt]=$dev _LC_LOOP_IMG[$mnt]=$img LOOP_DEV=$dev
    log "loop: $dev ($img) ext4 on $mnt"
}

# loop_ext4_fail MOUNTPOINT: the file system goes read-only under its writers, as ext4 with
# errors=remount-ro does on an I/O error: ext4's own error path (its sysfs trigger_fs_error)
# aborts the journal and forces the remount. (`mount -o remount,ro` is refused while any
# file is open for writing, which it always is under capture.) Returns once a write fails.
loop_ext4_fail() {
    local mnt=${1:?loop_ext4_fail MOUNTPOINT} dev=${_LC_LOOP_DEV[$1]:?not a mount_loop_ext4 mount}
    local trigger="/sys/fs/ext4/${dev##*/}/trigger_fs_error"
    [[ -w $trigger ]] || skip "this kernel has no $trigger"
    echo "linecap test: remount-ro" >"$trigger"
    wait_for "! touch '$mnt/.lc-rw-probe'" 10 || fail "loop_ext4_fail: $mnt still writable"
    log "loop: $mnt ($dev) remounted read-only by an ext4 error"
}

# loop_ext4_repair MOUNTPOINT: what an operator does: unmount (lazily while a process still
# holds it), e2fsck the image, mount it again (a new loop device) on the same directory.
loop_ext4_repair() {
    local mnt=${1:?loop_ext4_repair MOUNTPOINT} img=${_LC_LOOP_IMG[$1]:?not a mount_loop_ext4 mount}
    local dev=${_LC_LOOP_DEV[$1]} rc=0
    umount "$mnt" 2>/dev/null || umount -l "$mnt" || fail "loop_ext4_repair: cannot unmount $mnt"
    losetup -d "$dev" 2>/dev/null || true
    e2fsck -fy "$img" >/dev/null 2>&1 || rc=$?
    ((rc < 4)) || fail "loop_ext4_repair: e2fsck -fy $img exited $rc"
    _lc_loop_attach "$mnt" "$img"
    touch "$mnt/.lc-rw-probe" || fail "loop_ext4_repair: $mnt not writable"
    rm -f "$mnt/.lc-rw-probe"
}

# --- polling -------------------------------------------------------------------------------

_lc_now_us() { echo "${EPOCHREALTIME/[.,]/}"; }

# _lc_secs_to_us SECONDS: "2", "0.5", "1.25" -> microseconds (no fork).
_lc_secs_to_us() {
    local t=$1 int frac=
    [[ $t =~ ^[0-9]*(\.[0-9]*)?$ && $t != . && -n $t ]] || t=10
    int=${t%%.*}
    [[ $t != *.* ]] || frac=${t#*.}
    frac=${frac}000000
    _LC_US=$((10#${int:-0} * 1000000 + 10#${frac:0:6}))
}

# wait_for 'CMD' TIMEOUT_S: poll CMD (eval'd in a subshell, output discarded) until it
# succeeds; 0 when it did, 1 (and a log line) when TIMEOUT_S (may be fractional) passed.
# Polls every 20 ms at first, backing off to 250 ms.
wait_for() {
    local cond=$1 timeout=${2:-10} deadline interval=0.02
    _lc_secs_to_us "$timeout"
    deadline=$((${EPOCHREALTIME/[.,]/} + _LC_US))
    while true; do
        if (eval "$cond") >/dev/null 2>&1; then
            return 0
        fi
        if ((${EPOCHREALTIME/[.,]/} >= deadline)); then
            log "wait_for: '$cond' still false after ${timeout}s"
            return 1
        fi
        sleep "$interval"
        case $interval in
            0.02) interval=0.05 ;;
            0.05) interval=0.1 ;;
            *) interval=0.25 ;;
        esac
    done
}

# _lc_alive PID: the process exists and is not a zombie.
_lc_alive() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [[ -n $stat && ${stat:0:1} != Z && ${stat:0:1} != X ]]
}

# --- veth pair in a namespace --------------------------------------------------------------

# veth_pair NAME [MTU] [QUEUES]: network namespace lc-NAME-$$ and a veth pair: the capture
# side $CAP_IF in the root namespace (up, no address, IPv6 disabled so the kernel sends
# nothing) and its peer $PEER_IF inside $NS (up, no address, IPv6 disabled). MTU defaults to
# 1500, QUEUES (rx and tx queues on both sides) to the kernel's default. Exports CAP_IF,
# PEER_IF and NS; waits until both links are operationally up (before that the kernel drops
# what is sent); registers removal of both.
veth_pair() {
    local name=${1:?veth_pair NAME [MTU] [QUEUES]} mtu=${2:-1500} queues=${3:-} err
    need_root
    need_cmd ip
    name=${name//[^A-Za-z0-9_-]/_}
    name=${name:0:24}
    _LC_VETH_N=$((_LC_VETH_N + 1))
    local ns="lc-$name-$$" a="lc$$x${_LC_VETH_N}a" b="lc$$x${_LC_VETH_N}b"

    # Removal first: whatever part of the rig exists when this test ends goes with it.
    on_exit "python3 -m linecap_harness.veth down '$ns' '$a'"
    _lc_reaper_add "ip netns del '$ns'"
    _lc_reaper_add "ip link del '$a'"
    local rc=0
    err=$(python3 -m linecap_harness.veth up "$ns" "$a" "$b" --mtu "$mtu" ${queues:+--queues "$queues"} 2>&1) || rc=$?
    ((rc != 77)) || skip "$err"
    ((rc == 0)) || fail "veth_pair: $err"

    CAP_IF=$a PEER_IF=$b NS=$ns
    export CAP_IF PEER_IF NS
    log "veth_pair: $CAP_IF (root ns, capture side) <-> $PEER_IF (netns $NS), mtu $mtu"
}

# "${INSTRUMENT[@]}" CMD...: runs CMD, a test's own instrument that is judged on keeping up
# (a feed reader, the clients of a burst), above the priority of the flake hunt's CPU hogs,
# which could otherwise starve it on a 2-CPU machine. Never for what the test judges. A
# command prefix rather than a function, so that setsid and xargs can run it too.
INSTRUMENT=(nice -n -10)

# ns_exec CMD...: run CMD inside $NS.
ns_exec() { ip netns exec "$NS" "$@"; }

# --- traffic -------------------------------------------------------------------------------

# replay_into_ns PCAP PPS [LOOPS]: tcpreplay PCAP LOOPS times (default 1) from $PEER_IF
# inside $NS, at PPS packets/s ("top" = --topspeed). Echoes the number of packets tcpreplay
# reports sent (0 when it sent none); warns on stderr when some failed (e.g. frames larger
# than the MTU). Returns 1 when tcpreplay itself fails. Its full output goes to stderr when
# LINECAP_VERBOSE=1, and to $TEST_TMPDIR/tcpreplay.log when there is a TEST_TMPDIR.
replay_into_ns() {
    local pcap=${1:?replay_into_ns PCAP PPS [LOOPS]} pps=${2:?replay_into_ns PCAP PPS [LOOPS]}
    local loops=${3:-1} out rc=0 sent failed
    need_cmd tcpreplay
    [[ -n $NS && -n $PEER_IF ]] || fail "replay_into_ns: no veth pair (call veth_pair first)"
    [[ -r $pcap ]] || fail "replay_into_ns: cannot read $pcap"
    [[ $loops =~ ^[1-9][0-9]*$ ]] || fail "replay_into_ns: LOOPS must be >= 1 (got '$loops')"
    local args=(-i "$PEER_IF" --loop="$loops")
    case $pps in
        top | topspeed | max) args+=(--topspeed) ;;
        *) args+=(--pps="$pps") ;;
    esac
    ((loops == 1)) || args+=(--preload-pcap)
    out=$(ip netns exec "$NS" tcpreplay "${args[@]}" "$pcap" 2>&1) || rc=$?
    if [[ -n $TEST_TMPDIR && -d $TEST_TMPDIR ]]; then
        printf '$ tcpreplay %s %s\n%s\n' "${args[*]}" "$pcap" "$out" >>"$TEST_TMPDIR/tcpreplay.log"
    fi
    [[ ${LINECAP_VERBOSE:-0} != 1 ]] || printf '%s\n' "$out" >&2
    if ((rc != 0)); then
        printf '%s\n' "$out" | tail -n 20 >&2
        log "replay_into_ns: tcpreplay exited $rc"
        return 1
    fi
    # tcpreplay 4.4 prints "Actual: N packets (...) sent in ..." and "Successful packets: N",
    # but nothing at all (and exit 0) when every packet failed.
    sent=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*Successful packets:[[:space:]]*\([0-9]*\).*/\1/p' | tail -n 1)
    [[ -n $sent ]] || sent=$(printf '%s\n' "$out" | sed -n 's/^Actual: \([0-9]*\) packets.*/\1/p' | tail -n 1)
    [[ -n $sent ]] || sent=0
    failed=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*Failed packets:[[:space:]]*\([0-9]*\).*/\1/p' | tail -n 1)
    if [[ $sent == 0 || ${failed:-0} != 0 ]]; then
        log "replay_into_ns: tcpreplay sent $sent, failed ${failed:-all}: $(printf '%s\n' "$out" \
            | grep -m1 -i 'unable\|error' || true)"
    fi
    echo "$sent"
}

# --- the daemon ----------------------------------------------------------------------------

# start_linecapd CONFIG [ARGS...]: start "$LINECAPD --config CONFIG ARGS..." in the
# background, output to $TEST_TMPDIR/linecapd.log ($LINECAPD_LOG, shown if the test fails);
# sets LINECAPD_PID and registers a kill on exit.
start_linecapd() {
    local cfg=${1:?start_linecapd CONFIG [ARGS...]}
    shift
    need_linecapd
    [[ -z $LINECAPD_PID ]] || fail "start_linecapd: already running (pid $LINECAPD_PID)"
    [[ -n $TEST_TMPDIR ]] || make_tmpdir
    if [[ -z $LINECAPD_LOG ]]; then
        LINECAPD_LOG="$TEST_TMPDIR/linecapd.log"
        show_on_failure "$LINECAPD_LOG"
        on_exit "_lc_kill_linecapd"
    fi
    log "starting $LINECAPD --config $cfg $*"
    "$LINECAPD" --config "$cfg" "$@" >>"$LINECAPD_LOG" 2>&1 &
    LINECAPD_PID=$!
}

# linecapd_running: true while the daemon started by start_linecapd is alive.
linecapd_running() { [[ -n $LINECAPD_PID ]] && _lc_alive "$LINECAPD_PID"; }

# wait_for_linecapd 'CMD' TIMEOUT_S: like wait_for, but fails at once (with the log) if the
# daemon exits first. For readiness: wait_for_linecapd "http_get http://$LISTEN/metrics" 30
wait_for_linecapd() {
    local cond=$1 timeout=${2:-30}
    wait_for "($cond) || ! linecapd_running" "$timeout" \
        || fail "linecapd: '$cond' still false after ${timeout}s"
    if ! (eval "$cond") >/dev/null 2>&1 && ! linecapd_running; then
        local rc=0
        wait "$LINECAPD_PID" 2>/dev/null || rc=$?
        LINECAPD_PID=
        fail "linecapd exited (status $rc) before '$cond' became true"
    fi
}

# pause_linecapd / resume_linecapd: SIGSTOP the daemon and SIGCONT it, for a moment in which
# it must not move (no packet taken, no file finished or deleted). stop_linecapd and the
# exit cleanup continue a paused daemon, so a test failing meanwhile needs no care of its own.
pause_linecapd() { kill -s STOP "$LINECAPD_PID"; }
resume_linecapd() { kill -s CONT "$LINECAPD_PID"; }

# stop_linecapd [TIMEOUT_S] [SIGNAL]: send SIGNAL (default TERM), wait up to TIMEOUT_S
# (default 15) for the daemon to exit (then SIGKILL), and return its exit status (also in
# LINECAPD_RC; 128+n = killed by signal n). With set -e call it as: stop_linecapd || rc=$?
stop_linecapd() {
    local timeout=${1:-15} sig=${2:-TERM} pid=$LINECAPD_PID rc=0
    [[ -n $pid ]] || fail "stop_linecapd: linecapd is not running"
    kill -s "$sig" "$pid" 2>/dev/null || true
    kill -s CONT "$pid" 2>/dev/null || true  # a paused daemon takes the signal now
    if ! wait_for "! _lc_alive $pid" "$timeout"; then
        log "linecapd (pid $pid) still running ${timeout}s after SIG$sig: sending SIGKILL"
        kill -s KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || rc=$?
    LINECAPD_PID=
    LINECAPD_RC=$rc
    log "linecapd exited with status $rc"
    return "$rc"
}

_lc_kill_linecapd() {
    [[ -n $LINECAPD_PID ]] || return 0
    local pid=$LINECAPD_PID
    kill -s TERM "$pid" 2>/dev/null || true
    kill -s CONT "$pid" 2>/dev/null || true
    if ! wait_for "! _lc_alive $pid" 10; then
        kill -s KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    LINECAPD_PID=
}

# --- metrics and small utilities -----------------------------------------------------------

# http_get URL [TIMEOUT_S]: print the body; non-zero unless the answer is 2xx.
http_get() {
    python3 - "$1" "${2:-2}" <<'PY'
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2])) as r:
        sys.stdout.buffer.write(r.read())
except Exception as e:
    print(f"http_get {sys.argv[1]}: {e}", file=sys.stderr)
    sys.exit(1)
PY
}

# metric_sum URL NAME [LABEL=VALUE...]: the sum of NAME's samples whose labels include the
# given ones (0 when there are none), from a Prometheus text endpoint.
metric_sum() { python3 -m linecap_harness.prometheus sum "$@"; }

# json_field FILE KEY: print the top-level KEY of FILE (one JSON document).
json_field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# json_lines FILE: true when every line of FILE is a JSON document (an audit log).
json_lines() { python3 -c 'import json, sys; [json.loads(line) for line in open(sys.argv[1])]' "$1"; }

# free_tcp_port: print a TCP port on 127.0.0.1 that was free a moment ago.
free_tcp_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# record_bytes DIR: bytes of pcap records (file headers excluded) in DIR's finished and
# in-progress capture files: compared with a replayed file's, it says when all is written.
record_bytes() {
    local total=0 f
    for f in "$1"/*.pcap "$1"/.*.part; do
        [[ -f $f ]] || continue
        total=$((total + $(stat -c %s "$f") - 24))
    done
    echo "$total"
}

# gen_pcap ARGS...: tests/tools/gen_pcap.py, quiet (e.g. gen_pcap --count 1000 --mix --out f).
gen_pcap() { python3 "$GEN_PCAP" -q "$@"; }

# pcap_compare MODE ARGS...: tests/tools/pcap_compare.py (exit 0 = match, 1 = mismatch).
pcap_compare() { python3 "$PCAP_COMPARE" "$@"; }

# write_config FILE DEVICE OUTDIR [SECTION.KEY=VALUE...]: a daemon config
# (tests/lib/linecap_harness/config.py): one port "p0" on DEVICE (a vdev string), output in
# OUTDIR, EAL in memory (no hugepage files left behind), metrics on $METRICS_LISTEN (default
# 127.0.0.1:<free port>; exported), and the given settings ("port.KEY" = a key of the port;
# VALUE is JSON when it parses: 2, true, '{"size_mb": 64}', else a string).
write_config() {
    local file=${1:?write_config FILE DEVICE OUTDIR [SECTION.KEY=VALUE...]} device=${2:?} outdir=${3:?}
    shift 3
    METRICS_LISTEN=${METRICS_LISTEN:-127.0.0.1:$(free_tcp_port)}
    export METRICS_LISTEN
    python3 -m linecap_harness.config "$file" "$device" "$outdir" "$METRICS_LISTEN" "$@" \
        --header "tests/lib/common.sh write_config for $TEST_NAME"
}
