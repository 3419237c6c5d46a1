#!/usr/bin/env bash
# linecap benchmarks in one command (as root, on a fresh Debian 12 checkout):
#
#   bench/run.sh                      the whole suite: the shipped-defaults table first, then
#                                     the suite's rows; prints the tables, writes
#                                     bench/results/results.{md,json,png}
#   bench/run.sh --quick              only the shipped-defaults table (tmpfs and disk, 64/1514/IMIX,
#                                     one row per optional feature, raw write speed of the same
#                                     volume beside each row), short windows
#   bench/run.sh soak --duration 600  linecapd for 10 minutes, RSS sampled every 10 s
#   bench/run.sh micro                the Google Benchmark micro benchmarks only
#   bench/run.sh rfc2544              zero-loss throughput on the live path, the whole table
#                                     in one run: linecapd (net_af_xdp, documented settings)
#                                     against tcpdump with the same buffer memory, files into
#                                     tmpfs and into the disk, quiet and under load (two
#                                     busy loops), 1024-byte frames, 10 s trials (~35 min);
#                                     --quick: 3 s trials (~10 min); writes
#                                     bench/results/rfc2544-table.{md,json}
#   bench/run.sh peers                the live path beside the peers on the same rig, tools
#                                     alternated: Stenographer (stenotype as its unit runs it),
#                                     tcpdump, netsniff-ng and linecapd, each with the same
#                                     buffer memory, loss at 50/100/200 kpps and top speed,
#                                     tmpfs and disk (installs stenographer from Debian);
#                                     writes bench/results/peers-table.{md,json}
#   bench/run.sh manifest-ab [--baseline OLD/linecapd] --fs tmpfs --sizes 64,1514 --repeat 3
#                                     manifest on/off (shipped defaults vs manifest off) of this
#                                     tree's linecapd (and OLD's), alternated in one run, medians
#   bench/run.sh query                the query table (bench/store/query_table.sh): linecap
#                                     extract vs tcpdump -r over a generated store (BENCH_GB,
#                                     default 10) and vs stenoread over a Stenographer store
#                                     stenotype wrote from the same packets (replayed into a
#                                     veth; installs stenographer from Debian), a spread and a
#                                     clustered conversation and a query matching nothing,
#                                     cold and warm, answers compared, index size and bytes
#                                     read ÷ returned
#   bench/run.sh api                  the retrieval API (bench/api/run.sh): time to first
#                                     byte / total for one conversation from a 10 GB store
#                                     (API vs linecap extract vs tcpdump -r, cold = page
#                                     cache dropped for each), capture rate with and without
#                                     four streaming queries (fixed offered rate, windows
#                                     alternating in one run, medians), one audit record;
#                                     the store is kept in /var/tmp/linecap-api-bench for
#                                     reruns; BENCH_GB, ROUNDS, WINDOW_S, CAPTURE_PPS,
#                                     BENCH_PARTS=conversation,capture select
#   bench/run.sh feed                 the live feed (bench/feed/capture_rate.py): capture rate
#                                     with one reading and one stalled feed consumer against
#                                     none, fixed offered rate, windows alternating in one run;
#                                     --rounds, --window, --pps
#   bench/run.sh volumes              the aggregate written rate with 1, 2 and 4 capture volumes
#                                     (output.volumes; tmpfs and ext4 on loop devices) against
#                                     the raw write speed of the same volumes written together,
#                                     alternated in one run (bench/volumes.py: --fs, --volumes,
#                                     --seconds, --repeat); writes bench/results/volumes.json
#   bench/run.sh ab REV               this tree's linecapd against the one built from git
#                                     revision REV, alternated in one run (64 B and IMIX, one
#                                     worker, tmpfs, 5 repetitions each); REV's build is cached
#                                     in /var/cache/linecap-bench/REV-HASH
#
# Any other option goes to bench/bench.py (see `python3 bench/bench.py --help`), e.g.
# --sizes 64,1514 --fs tmpfs --workers 1w --seconds 20 --burst 128 --blocks 64.
#
# It installs what it needs (scripts/install-deps.sh, python3-matplotlib for the plot),
# builds linecapd and the bench programs into $LINECAP_BUILD (default build-bench/),
# reserves hugepages if fewer than 768 are free (scripts/hugepages.sh ready/provide), mounts a private tmpfs (size
# $BENCH_TMPFS_SIZE, default 6G) and makes a scratch directory on the real disk under
# $BENCH_DISK_DIR (default /var/tmp) — and undoes all of that when it exits, however it
# exits. Numbers are only as good as the machine is quiet: the table records the load.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${LINECAP_BUILD:-$ROOT/build-bench}
export LINECAP_BUILD=$BUILD
mode=suite
case ${1:-} in
    suite | soak | micro | rfc2544 | peers | ab | manifest-ab | api | feed | query | volumes) mode=$1; shift ;;
esac
if [[ $mode == ab ]]; then
    [[ $# -ge 1 ]] || { echo "usage: bench/run.sh ab REV [bench.py options]" >&2; exit 2; }
    AB_REV=$(git -C "$ROOT" rev-parse --verify --quiet "$1^{commit}") \
        || { echo "bench/run.sh ab: $1 is not a commit of this repository" >&2; exit 2; }
    shift
fi
# The system Python: that is where apt puts matplotlib (a pyenv python3 on PATH has none).
PY=python3
[[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3

[[ $(id -u) -eq 0 ]] || { echo "bench/run.sh: needs root (hugepages, mounts, DPDK)" >&2; exit 1; }

log() { printf '[%s bench] %s\n' "$(date +%T)" "$*" >&2; }

CLEANUP=()
cleanup() {
    local i
    set +e
    for ((i = ${#CLEANUP[@]} - 1; i >= 0; i--)); do eval "${CLEANUP[i]}"; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- dependencies and build ---------------------------------------------------------------
if [[ ${BENCH_SKIP_DEPS:-0} != 1 ]]; then
    "$ROOT/scripts/install-deps.sh" >&2
    if ! "$PY" -c 'import matplotlib' 2>/dev/null; then
        log "installing python3-matplotlib (for the plot)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-matplotlib >&2 \
            || log "python3-matplotlib could not be installed: no plot"
    fi
    if [[ $mode == peers ]] && ! command -v stenotype >/dev/null; then
        log "installing stenographer (the peer the live path is measured against)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends stenographer >&2
    fi
    if [[ $mode == query ]] && ! command -v stenoread >/dev/null; then
        log "installing stenographer and stenographer-client (the query table's peer)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends stenographer \
            stenographer-client tcpreplay >&2
    fi
    if ! "$PY" -c 'import yaml' 2>/dev/null; then
        log "installing python3-yaml (the defaults table reads config/linecap.yaml)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-yaml >&2
    fi
fi
if [[ ! -f $BUILD/build.ninja ]]; then
    log "meson setup $BUILD"
    meson setup "$BUILD" "$ROOT" >&2
fi
log "building linecapd and the bench programs in $BUILD"
targets=(src/linecapd bench/linecap_fsbench)
grep -q 'bench/linecap_micro' "$BUILD/build.ninja" && targets+=(bench/linecap_micro)
[[ $mode == api || $mode == query ]] && targets+=(src/linecap bench/store/store_gen)
ninja -C "$BUILD" "${targets[@]}" >&2

if [[ $mode == query ]]; then
    # No hugepages, no mounts: a generated store on the disk, its own cleanup.
    exec "$ROOT/bench/store/query_table.sh" "$BUILD" "$@"
fi

if [[ $mode == ab ]]; then
    # The baseline's build is cached by commit (bench/baseline.sh).
    log "the baseline $AB_REV"
    BASE=$("$ROOT/bench/baseline.sh" "$AB_REV" src/linecapd)
    set -- --baseline "$BASE/build/src/linecapd" "$@"
fi

if [[ $mode == micro ]]; then
    exec taskset -c "$(($(nproc) - 1))" "$BUILD/bench/linecap_micro" "$@"
fi
# --- hugepages -------------------------------------------------------------------------------
if ! "$ROOT/scripts/hugepages.sh" ready 768 >&2; then
    # A private state directory: release restores exactly what this run found.
    HP_STATE=$(mktemp -d /run/linecap-bench-hp.XXXXXX)
    CLEANUP+=("LINECAP_TEST_STATE_DIR='$HP_STATE' '$ROOT/scripts/hugepages.sh' release >&2; rm -rf '$HP_STATE'")
    LINECAP_TEST_STATE_DIR=$HP_STATE "$ROOT/scripts/hugepages.sh" provide 768 >&2
fi

# The runtime directories EAL makes for the reference programs' file prefixes (lcbench*;
# linecapd removes its own).
CLEANUP+=("rm -rf /var/run/dpdk/lcbench*")

if [[ $mode == api ]]; then
    # Its own store (cached in /var/tmp/linecap-api-bench), its own linecapd and veth, its
    # own cleanup; run as a child so that this script's cleanup (hugepages) follows it.
    rc=0
    "$ROOT/bench/api/run.sh" "$BUILD" "$@" || rc=$?
    exit "$rc"
fi

# --- output file systems -----------------------------------------------------------------------
TMPFS_DIR=$(mktemp -d /tmp/linecap-bench-tmpfs.XXXXXX)
CLEANUP+=("rmdir '$TMPFS_DIR'")
mount -t tmpfs -o "size=${BENCH_TMPFS_SIZE:-6G},mode=0700" linecap-bench "$TMPFS_DIR"
CLEANUP+=("umount '$TMPFS_DIR'")
DISK_DIR=$(mktemp -d "${BENCH_DISK_DIR:-/var/tmp}/linecap-bench-disk.XXXXXX")
CLEANUP+=("rm -rf '$DISK_DIR'")
[[ $(findmnt -n -o FSTYPE --target "$DISK_DIR") != tmpfs ]] \
    || log "warning: $DISK_DIR is on tmpfs, not a disk (set BENCH_DISK_DIR)"
WORKDIR=$(mktemp -d /tmp/linecap-bench-work.XXXXXX)
if [[ ${BENCH_KEEP_WORK:-0} == 1 ]]; then
    CLEANUP+=("log 'kept $WORKDIR (logs, configs)'")
else
    CLEANUP+=("rm -rf '$WORKDIR'")
fi

log "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir -p "$ROOT/bench/results"
if [[ $mode == rfc2544 ]]; then
    "$PY" "$ROOT/bench/rfc2544.py" --out-dir "$TMPFS_DIR" --disk-dir "$DISK_DIR" --workdir "$WORKDIR" \
        --json "$ROOT/bench/results/rfc2544-table.json" --md "$ROOT/bench/results/rfc2544-table.md" "$@"
elif [[ $mode == volumes ]]; then
    "$PY" "$ROOT/bench/volumes.py" --workdir "$WORKDIR" --json "$ROOT/bench/results/volumes.json" "$@"
elif [[ $mode == feed ]]; then
    "$PY" "$ROOT/bench/feed/capture_rate.py" --out-dir "$TMPFS_DIR" --workdir "$WORKDIR" \
        --json "$ROOT/bench/results/feed-capture.json" "$@"
elif [[ $mode == peers ]]; then
    # Later options win: --fs, --trial, --rates, --tools given here replace these.
    "$PY" "$ROOT/bench/rfc2544.py" --out-dir "$TMPFS_DIR" --disk-dir "$DISK_DIR" --workdir "$WORKDIR" \
        --tools stenographer,tcpdump,netsniff-ng,linecapd --rates 50000,100000,200000,top --load quiet \
        --json "$ROOT/bench/results/peers-table.json" --md "$ROOT/bench/results/peers-table.md" "$@"
else
    "$PY" "$ROOT/bench/bench.py" "$mode" --workdir "$WORKDIR" --tmpfs-dir "$TMPFS_DIR" --disk-dir "$DISK_DIR" "$@"
fi
