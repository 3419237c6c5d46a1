#!/usr/bin/env bash
# bench/baseline.sh REV [TARGET...]: another revision of this repository built for an A/B
# run, cached by commit in /var/cache/linecap-bench/REV ($LINECAP_BASELINE_CACHE): its
# sources (git archive, so nothing in this checkout changes) in src/, a meson build
# (-Dbench=true -Dtests=false) in build/. Builds the TARGETs (ninja names, e.g.
# src/linecapd) and prints the directory. A caller may change a file in src/ before
# building more (policy_cost.sh builds REV with this tree's bench/micro.cpp): ninja rebuilds
# what it touched. Used by bench/run.sh ab and bench/policy_cost.sh --baseline.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ $# -ge 1 ]] || { echo "usage: bench/baseline.sh REV [TARGET...]" >&2; exit 2; }
rev=$(git -C "$ROOT" rev-parse --verify --quiet "$1^{commit}") \
    || { echo "bench/baseline.sh: $1 is not a commit of this repository" >&2; exit 2; }
shift
dir=${LINECAP_BASELINE_CACHE:-/var/cache/linecap-bench}/$rev
if [[ ! -f $dir/build/build.ninja ]]; then
    rm -rf "$dir"
    mkdir -p "$dir/src"
    git -C "$ROOT" archive "$rev" | tar -x -C "$dir/src"
    meson setup "$dir/build" "$dir/src" -Dbench=true -Dtests=false >&2
fi
[[ $# -eq 0 ]] || ninja -C "$dir/build" "$@" >&2
echo "$dir"
