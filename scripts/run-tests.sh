#!/usr/bin/env bash
# The test command: dependencies, configure, build, the bare-machine test, machine
# preparation, the whole meson test suite one test at a time, cleanup, and one closing line
# "N passed, N failed, N skipped".
#
#   scripts/run-tests.sh [--repeat N] [--load] [MESON_TEST_ARGS...]
#                                   e.g. scripts/run-tests.sh --suite infra
#
# Without meson arguments the tests of suite `bare` (the README's demo from a bare machine)
# run first, before this script reserves anything: on a fresh machine (CI) they really run,
# on a prepared one they skip and say why. With arguments, only what they select runs, after
# the preparation.
#
# The flake hunt: --repeat N runs the selection N times over (each time to the end, whatever
# failed; suite bare once), --load runs tests/tools/hogs.sh beside the tests (CPU hogs and a
# disk hog; LINECAP_HOGS holds its arguments). Either prints, before the closing line, a table
# of each test's runs, failures and slowest run against its timeout (tests/tools/flake_report.py);
# the closing line then counts every run.
#
# Exit status 0 only when no test failed and at least one test passed. Everything this
# script sets up (hugepages, hugetlbfs/bpffs mounts) is undone by its EXIT/INT/TERM trap,
# as are namespaces and veths left by a test that was killed.
#
# Environment: LINECAP_BUILD_DIR (default build), LINECAP_HUGEPAGES (2 MiB pages, default
# 1024), LINECAP_SKIP_DEPS=1 (do not run install-deps.sh), LINECAP_TIMEOUT_MULTIPLIER
# (meson test -t, default 1), LINECAP_HOGS (tests/tools/hogs.sh's arguments for --load),
# LINECAP_LOGBASE (the name of meson's logs in BUILD/meson-logs, default testlog: a run
# inside another run's build keeps to its own).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
BUILD=${LINECAP_BUILD_DIR:-build}
HUGEPAGES=${LINECAP_HUGEPAGES:-1024}
LOGDIR=$BUILD/meson-logs
LOGBASE=${LINECAP_LOGBASE:-testlog}
BARE_TESTLOG=$LOGDIR/bare-$LOGBASE.json
TESTLOGS=()         # the main runs' logs, one per --repeat round

REPEAT=1
LOAD=0
meson_args=()
while (($#)); do
    case $1 in
        --repeat) REPEAT=${2:-}; shift $(($# > 1 ? 2 : 1)) ;;
        --repeat=*) REPEAT=${1#*=}; shift ;;
        --load) LOAD=1; shift ;;
        *) meson_args+=("$1"); shift ;;
    esac
done
set -- "${meson_args[@]}"
if ! [[ $REPEAT =~ ^[1-9][0-9]*$ ]]; then
    echo "run-tests: --repeat takes a whole number of runs, at least 1 (got '$REPEAT')" >&2
    exit 64
fi

CHILD_PID=          # the running step (ninja, meson), killed by the trap when interrupted
HOGS_PID=           # tests/tools/hogs.sh under --load
RESERVED=0          # 1 when this run reserved hugepages and must release them
STAGE_FAILED=       # a step before the tests that failed ("build", ...)
MESON_RC=           # the first non-zero exit status of a meson test run (0: none)
INTERRUPTED=
START=$SECONDS

step() { printf '\n==> %s\n' "$*"; }
note() { printf 'run-tests: %s\n' "$*"; }

# run_child CMD...: run CMD as a background child and wait for it, so that a signal reaches
# the trap at once (bash defers traps while a foreground child runs); returns CMD's status.
run_child() {
    "$@" &
    CHILD_PID=$!
    local rc=0
    wait "$CHILD_PID" || rc=$?
    # A trapped signal interrupts `wait`; the trap exits, so reaching here means CMD ended.
    CHILD_PID=
    return "$rc"
}

# Remove network namespaces and veths that tests (tests/lib/common.sh: lc-NAME-PID and
# lcPIDxNa/b) left behind when they were killed: only those whose PID no longer runs.
sweep_stale() {
    [[ $(id -u) -eq 0 ]] || return 0
    command -v ip >/dev/null 2>&1 || return 0
    local ns rest pid dev name f
    while read -r ns rest; do
        [[ $ns =~ ^lc-.+-([0-9]+)$ ]] || continue
        pid=${BASH_REMATCH[1]}
        kill -0 "$pid" 2>/dev/null && continue
        ip netns del "$ns" 2>/dev/null && note "removed stale network namespace $ns"
    done < <(ip netns list 2>/dev/null)
    for dev in /sys/class/net/lc*; do
        [[ -e $dev ]] || continue
        name=${dev##*/}
        [[ $name =~ ^lc([0-9]+)x[0-9]+[ab]$ ]] || continue
        pid=${BASH_REMATCH[1]}
        kill -0 "$pid" 2>/dev/null && continue
        ip link del "$name" 2>/dev/null && note "removed stale veth $name"
    done
    for f in "${TMPDIR:-/tmp}"/.lc-reaper.*; do
        [[ -e $f ]] || continue
        [[ ${f##*/} =~ ^\.lc-reaper\.([0-9]+)\. ]] || continue
        kill -0 "${BASH_REMATCH[1]}" 2>/dev/null || rm -f -- "$f"
    done
}

# summarize: "PASSED FAILED SKIPPED" on the first line, then one line per failed test, over
# both runs' logs (the bare-machine run's and the main one's).
summarize() {
    python3 - "$BARE_TESTLOG" "${TESTLOGS[@]}" <<'PY'
import json, os, sys
passed = failed = skipped = 0
bad = []
lines = []
for path in sys.argv[1:]:
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            lines += f.readlines()
for line in lines:
    line = line.strip()
    if not line:
        continue
    try:
        t = json.loads(line)
    except ValueError:
        continue
    r = t.get("result")
    if r in ("OK", "EXPECTEDFAIL"):
        passed += 1
    elif r == "SKIP":
        skipped += 1
    else:  # FAIL TIMEOUT ERROR UNEXPECTEDPASS INTERRUPT, anything unknown
        failed += 1
        bad.append(f"{t.get('name', '?')} ({r})")
print(passed, failed, skipped)
for b in bad:
    print(b)
PY
}

finish() {
    local rc=$?
    trap - EXIT INT TERM HUP
    if [[ -n $CHILD_PID ]] && kill -0 "$CHILD_PID" 2>/dev/null; then
        note "stopping pid $CHILD_PID"
        kill -TERM "$CHILD_PID" 2>/dev/null
        local i
        for ((i = 0; i < 150; i++)); do
            kill -0 "$CHILD_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$CHILD_PID" 2>/dev/null && kill -KILL "$CHILD_PID" 2>/dev/null
        wait "$CHILD_PID" 2>/dev/null
    fi

    step "cleanup"
    if [[ -n $HOGS_PID ]]; then
        kill -TERM "$HOGS_PID" 2>/dev/null
        wait "$HOGS_PID" 2>/dev/null
    fi
    if ((RESERVED)); then
        bash scripts/hugepages.sh release || note "warning: hugepages.sh release failed"
    fi
    sweep_stale

    local counts passed failed skipped
    mapfile -t counts < <(summarize)
    read -r passed failed skipped <<<"${counts[0]:-0 0 0}"
    local lines=("${counts[@]:1}")
    if ((REPEAT > 1 || LOAD)); then
        flake_table
    fi
    if [[ -n $STAGE_FAILED ]]; then
        failed=$((failed + 1))
        lines+=("$STAGE_FAILED")
    elif [[ -n $MESON_RC && $MESON_RC != 0 && $failed == 0 ]]; then
        failed=$((failed + 1))
        lines+=("meson test (exited $MESON_RC without a failed test in its log, $LOGDIR)")
    fi
    if [[ -n $INTERRUPTED ]]; then
        lines+=("interrupted by SIG$INTERRUPTED: the counts cover the tests that finished")
    fi
    if ((${#lines[@]})); then
        printf '\nfailed:\n'
        printf '  %s\n' "${lines[@]}"
    fi
    local verdict=0
    if ((failed > 0)) || [[ -n $INTERRUPTED ]]; then
        verdict=1
    elif ((passed == 0)); then
        note "no test passed (none ran, or all were skipped): failing the run"
        verdict=1
    fi
    ((rc == 0)) || verdict=1
    note "$((SECONDS - START)) s in all"
    printf '%s passed, %s failed, %s skipped\n' "$passed" "$failed" "$skipped"
    exit "$verdict"
}

# flake_table: the hunt's table over every run that left a log.
flake_table() {
    local logs=() f list
    for f in "$BARE_TESTLOG" "${TESTLOGS[@]}"; do
        [[ -s $f ]] && logs+=("$f")
    done
    ((${#logs[@]})) || return 0
    list=$(mktemp) || return 0
    step "flake hunt: $REPEAT run(s) of the selection$( ((LOAD)) && echo ", under load")"
    if meson introspect --tests "$BUILD" >"$list" 2>/dev/null; then
        python3 tests/tools/flake_report.py --tests "$list" --multiplier "${LINECAP_TIMEOUT_MULTIPLIER:-1}" "${logs[@]}"
    else
        note "warning: meson introspect --tests failed: no flake table"
    fi
    rm -f -- "$list"
}

on_signal() {
    INTERRUPTED=$1
    note "caught SIG$1"
    exit 1
}

trap finish EXIT
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM
trap 'on_signal HUP' HUP

sweep_stale
# The summary must never count an earlier run's results.
rm -f -- "$BARE_TESTLOG" "$LOGDIR/$LOGBASE.json" "$LOGDIR/$LOGBASE"-run*.json

if [[ ${LINECAP_SKIP_DEPS:-0} != 1 ]]; then
    step "dependencies"
    profile=test
    # Suite vm's tools (QEMU, mmdebstrap, lintian, buildah) only when it is asked for.
    [[ " $* " != *vm* ]] || profile=vm
    run_child bash scripts/install-deps.sh "$profile" || { STAGE_FAILED="install-deps $profile (see above)"; exit 1; }
fi

# The test tools are Python programs, started several hundred times in a run. A python3
# that comes first on PATH may be a version manager's shim (pyenv's took 2.1 s per start at
# load 9, Debian's interpreter 0.24 s: a minute of one test's 2.5) and need not have the
# Debian modules the tests use (python3-yaml). Tests and meson's find_program('python3')
# get Debian's, through a link in the build directory put first on PATH.
debian_python_first() {
    [[ -x /usr/bin/python3 && $(command -v python3) != /usr/bin/python3 ]] || return 0
    mkdir -p -- "$BUILD/.python" && ln -sfn /usr/bin/python3 "$BUILD/.python/python3" || return 0
    PATH=$(realpath -- "$BUILD/.python"):$PATH
    export PATH
    note "python3 for the tests: /usr/bin/python3 (not $(PATH=${PATH#*:} command -v python3))"
}

step "configure ($BUILD)"
# Both named: a build directory the demo made has neither.
setup_args=(-Dtests=true -Dbench=true)
if [[ -f $BUILD/meson-private/coredata.dat ]]; then
    debian_python_first
    if ! run_child meson setup --reconfigure "$BUILD" "${setup_args[@]}"; then
        note "reconfigure failed; configuring $BUILD from scratch"
        rm -rf -- "$BUILD"
        debian_python_first
        run_child meson setup "$BUILD" "${setup_args[@]}" || { STAGE_FAILED="meson setup (see above)"; exit 1; }
    fi
else
    [[ ! -e $BUILD ]] || rm -rf -- "$BUILD"
    debian_python_first
    run_child meson setup "$BUILD" "${setup_args[@]}" || { STAGE_FAILED="meson setup (see above)"; exit 1; }
fi

step "build"
run_child ninja -C "$BUILD" || { STAGE_FAILED="build: ninja -C $BUILD (see above)"; exit 1; }

test_args=(--print-errorlogs --num-processes 1)
[[ -z ${LINECAP_TIMEOUT_MULTIPLIER:-} ]] || test_args+=(-t "$LINECAP_TIMEOUT_MULTIPLIER")
MESON_RC=0
selection=("$@")
if ((LOAD)); then
    # Dies with this script (SIGTERM from the kernel), whatever ends it.
    # shellcheck disable=SC2086 # LINECAP_HOGS is a list of arguments
    setpriv --pdeathsig TERM bash tests/tools/hogs.sh ${LINECAP_HOGS:-} &
    HOGS_PID=$!
fi
if (($# == 0)); then
    step "tests on the bare machine (before anything is reserved)"
    run_child meson test -C "$BUILD" "${test_args[@]}" --suite bare --logbase "bare-$LOGBASE" || MESON_RC=$?
    selection=(--no-suite bare)
fi

# Suite vm alone (--suite vm, vm-* tests) needs none of it: its guest has its own memory,
# and the host's hugepages stay free for whoever else tests on this machine.
vm_only=0
if (($# > 0)); then
    vm_only=1
    for arg in "$@"; do
        case $arg in --suite | vm | vm-*) ;; *) vm_only=0 ;; esac
    done
fi

step "machine: $HUGEPAGES hugepages of 2 MiB, hugetlbfs, bpffs"
if ((vm_only)); then
    note "suite vm only: nothing reserved"
elif [[ -f ${LINECAP_TEST_STATE_DIR:-/run/linecap-test}/hugepages.state ]]; then
    note "hugepages were reserved before this run (state file exists): using them, not releasing"
    bash scripts/hugepages.sh status
elif [[ $(id -u) -ne 0 ]]; then
    note "not root: no hugepages reserved; tests that need them will skip"
else
    RESERVED=1
    bash scripts/hugepages.sh reserve "$HUGEPAGES" \
        || note "warning: hugepage reservation failed; tests that need hugepages will skip"
fi

step "tests"
# Suite vm (a Debian image, a VM under TCG, a container build: tests/vm) runs only when the
# arguments name it (--suite vm, or one of its vm-* tests).
[[ " $* " == *vm* ]] || selection+=(--no-suite vm)
# Suite corpus (tcpdump's whole test corpus against tcpdump -r, several minutes) likewise.
[[ " $* " == *corpus* || " $* " == *store-tcpdump-suite* ]] || selection+=(--no-suite corpus)
# Suite slow (a second tree built for a benchmark's --baseline) likewise.
[[ " $* " == *slow* || " $* " == *bench-policy-cost-baseline* ]] || selection+=(--no-suite slow)
for ((round = 1; round <= REPEAT; round++)); do
    logbase=$LOGBASE
    if ((REPEAT > 1)); then
        logbase=$LOGBASE-run$round
        step "tests, run $round of $REPEAT"
    fi
    TESTLOGS+=("$LOGDIR/$logbase.json")
    rc=0
    run_child meson test -C "$BUILD" "${test_args[@]}" --logbase "$logbase" "${selection[@]}" || rc=$?
    ((MESON_RC != 0)) || MESON_RC=$rc
done
exit 0
