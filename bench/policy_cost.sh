#!/usr/bin/env bash
# The capture policies' price per packet in the worker (bench/micro.cpp BM_CapturePolicies:
# cycles per packet off / dedup / flow cap / both, 64-byte, IMIX-like and 1514-byte traffic,
# unique or with every other packet a copy, delta and ratio against the off row of the same
# run), optionally before/after in one run:
#
#   bench/policy_cost.sh [--baseline REV] [--repeat N] [--cpu C] [--nice N] [--min-time S] [--rows REGEX]
#
# This tree's linecap_micro is built in $LINECAP_BUILD (default build-bench/), or
# $LINECAP_MICRO names one already built. --min-time: seconds per benchmark and run
# (Google Benchmark's --benchmark_min_time; default 0.5). --rows: only the rows whose
# benchmark name matches (Google Benchmark's filter after BM_CapturePolicies/, e.g.
# 'traffic:2/flows:32768/copies:0' for 1514 B at half the table). With
# --baseline, the same micro.cpp is also built against REV's sources (bench/baseline.sh:
# git archive of REV, built once into /var/cache/linecap-bench/REVHASH): the benchmark only calls
# apply_dedup / apply_flow_cap and their tables, so the two programs differ only in the
# policies' code. The programs then run alternately N times (default 3), pinned to CPU C
# (default: the last) at nice N (default -5; needs root to go below 0), and the table gives,
# per row and program, the median over the N runs of each per-run median, with the load
# average seen during the runs. The machine is only as quiet as it is: read the same-run
# differences, not the absolutes.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${LINECAP_BUILD:-$ROOT/build-bench}
baseline='' repeat=3 cpu=$(($(nproc) - 1)) niceness=-5 min_time=0.5 rows=''
while [[ $# -gt 0 ]]; do
    case $1 in
        --baseline) baseline=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --cpu) cpu=$2; shift 2 ;;
        --nice) niceness=$2; shift 2 ;;
        --min-time) min_time=$2; shift 2 ;;
        --rows) rows=$2; shift 2 ;;
        *) echo "usage: bench/policy_cost.sh [--baseline REV] [--repeat N] [--cpu C] [--nice N] [--min-time S] [--rows REGEX]" >&2; exit 2 ;;
    esac
done
log() { printf '[%s policy_cost] %s\n' "$(date +%T)" "$*" >&2; }

micro=${LINECAP_MICRO:-}
if [[ -z $micro ]]; then
    [[ -f $BUILD/build.ninja ]] || meson setup "$BUILD" "$ROOT" -Dbench=true >&2
    ninja -C "$BUILD" bench/linecap_micro >&2
    micro=$BUILD/bench/linecap_micro
fi
[[ -x $micro ]] || { echo "policy_cost: no $micro (libbenchmark-dev missing?)" >&2; exit 1; }
programs=("this tree=$micro")

if [[ -n $baseline ]]; then
    base=$("$ROOT/bench/baseline.sh" "$baseline")
    cmp -s "$ROOT/bench/micro.cpp" "$base/src/bench/micro.cpp" || cp "$ROOT/bench/micro.cpp" "$base/src/bench/micro.cpp"
    log "building $baseline with this tree's bench/micro.cpp in $base"
    ninja -C "$base/build" bench/linecap_micro >&2
    programs=("$baseline=$base/build/bench/linecap_micro" "${programs[@]}")
fi

out=$(mktemp -d /tmp/linecap-policy-cost.XXXXXX)
trap 'rm -rf "$out"' EXIT
log "load before: $(cut -d' ' -f1-3 /proc/loadavg); $repeat rounds, CPU $cpu, nice $niceness"
for ((r = 1; r <= repeat; r++)); do
    for p in "${!programs[@]}"; do
        name=${programs[p]%%=*} bin=${programs[p]#*=}
        log "round $r: $name"
        nice -n "$niceness" taskset -c "$cpu" "$bin" --benchmark_filter="BM_CapturePolicies/$rows" \
            --benchmark_min_time="$min_time" --benchmark_format=json --benchmark_out_format=json --benchmark_out="$out/$p-$r.json" >/dev/null
    done
done
log "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

names=()
for p in "${!programs[@]}"; do names+=("${programs[p]%%=*}"); done
python3 - "$out" "$repeat" "${names[@]}" <<'EOF'
import json, statistics, sys
out, repeat, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = {}  # (benchmark, program) -> counter -> [values]
order = []
for p, name in enumerate(names):
    for r in range(1, repeat + 1):
        for b in json.load(open(f"{out}/{p}-{r}.json"))["benchmarks"]:
            key = (b["label"].split(";")[0], name)
            if key not in rows:
                rows[key] = {}
                order.append(key)
            for c in ("off", "dedup", "cap", "both", "dedup_delta", "cap_delta", "both_delta",
                      "dedup_ratio", "cap_ratio", "both_ratio", "load1"):
                rows[key].setdefault(c, []).append(b[c])
print(f"cycles per packet, median of {repeat} runs (each the median over its bursts); "
      "delta and ratio against the off row of the same run")
print("| traffic | program | off | dedup | dedup delta (ratio) | flow cap | cap delta (ratio) | both | both delta (ratio) | load |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
med = statistics.median
for bench in dict.fromkeys(k[0] for k in order):
    for name in names:
        c = rows[(bench, name)]
        cells = [f"{med(c['off']):.1f}"]
        for m in ("dedup", "cap", "both"):
            cells += [f"{med(c[m]):.1f}", f"{med(c[m + '_delta']):+.1f} ({med(c[m + '_ratio']):.2f}x)"]
        print(f"| {bench} | {name} | " + " | ".join(cells) + f" | {min(c['load1']):.1f}-{max(c['load1']):.1f} |")
EOF
