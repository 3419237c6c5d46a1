#!/usr/bin/env bash
# Builds the fuzz harnesses of tests/fuzz/ with clang (libFuzzer + ASan + UBSan, leak
# detection on) and runs each for SECONDS over its in-tree corpus. Fails on any crash,
# hang (an input taking > 10 s), leak or memory use > 2 GiB; the reproducer is kept in
# the work directory's artifacts/ and replays with `fuzz_<name> FILE` (either build).
#
#   scripts/fuzz.sh [READER] [SECONDS]        READER: a harness name (default: all),
#                                             SECONDS per harness (default 600)
#   scripts/fuzz.sh --ci READER SECONDS       what the test suite runs (meson test fuzz-*)
#
# The harnesses and the sources each needs are listed once, in tests/fuzz/meson.build.
# The build goes to $LINECAP_BUILD/fuzz-clang (default build/fuzz-clang) and is reused
# while its sources are unchanged (make, with clang's dependency files). New inputs the
# fuzzer finds go to the work directory, not into the tree: copy the interesting ones to
# tests/fuzz/corpus/<name>/ by hand. Exit 77 (skip) when clang or libFuzzer is missing
# (apt-get install clang-14 libclang-rt-14-dev).
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CI=0
if [[ ${1:-} == --ci ]]; then CI=1; shift; fi
ONLY=${1:-}
SECONDS_EACH=${2:-600}
BUILD=${LINECAP_BUILD:-$SRC/build}
WORK=$BUILD/fuzz-clang
mkdir -p "$WORK"

CXX=${CLANGXX:-}
if [[ -z $CXX ]]; then
    for c in clang++-14 clang++; do command -v "$c" >/dev/null && { CXX=$c; break; }; done
fi
[[ -n $CXX ]] || { echo "SKIP: clang++ not found (apt-get install clang-14 libclang-rt-14-dev)"; exit 77; }
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$WORK/probe.cpp"
"$CXX" -fsanitize=fuzzer "$WORK/probe.cpp" -o "$WORK/probe" 2>/dev/null \
    || { echo "SKIP: $CXX cannot link libFuzzer (apt-get install libclang-rt-14-dev)"; exit 77; }

# name|sources|libs from the one registration line per harness (a source list may be a
# variable assigned a string earlier in the file; the layer after them is meson's).
mapfile -t HARNESSES < <(python3 - "$SRC/tests/fuzz/meson.build" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
names = dict(re.findall(r"^(\w+)\s*=\s*'([^']*)'", text, re.M))
item = r"\s*('[^']*'|\w+)\s*"
for m in re.finditer(r"^\s*\['(\w+)'," + item + "," + item + r"(?:,[^\]]*)?\]", text, re.M):
    print("|".join([m.group(1)] + [names[v] if not v.startswith("'") else v.strip("'") for v in m.groups()[1:]]))
PY
)
[[ ${#HARNESSES[@]} -gt 0 ]] || { echo "no harness found in tests/fuzz/meson.build"; exit 1; }

# One Makefile for all harnesses: objects are shared, dependency files make rebuilds exact.
{
    echo "CXX := $CXX"
    echo "SRC := $SRC"
    echo 'SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined'
    # Only our code is instrumented: the system libraries it links (libpcap, yaml-cpp) are
    # Debian's builds; their headers (and DPDK's rte_config.h, for the configuration's
    # limits) come from pkg-config.
    echo "SYSINC := $(pkg-config --cflags-only-I libdpdk yaml-cpp libpcap 2>/dev/null)"
    echo 'CXXFLAGS := -std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link $(SAN) -I$(SRC)/src -I$(SRC) $(SYSINC) -MMD -MP'
    echo 'obj/%.o: $(SRC)/%.cpp'
    printf '\t@mkdir -p $(dir $@)\n\t$(CXX) $(CXXFLAGS) -c $< -o $@\n'
    targets=()
    for h in "${HARNESSES[@]}"; do
        IFS='|' read -r name sources libs <<<"$h"
        objs="obj/tests/fuzz/fuzz_$name.o"
        for s in $sources; do objs+=" obj/${s%.cpp}.o"; done
        echo "fuzz_$name: $objs"
        printf '\t$(CXX) -fsanitize=fuzzer $(SAN) $^ %s -o $@\n' "$libs"
        echo "DEPS += \$(patsubst %.o,%.d,$objs)"
        targets+=("fuzz_$name")
    done
    echo "all: ${targets[*]}"
    echo '-include $(DEPS)'
} >"$WORK/Makefile"

rc=0
for h in "${HARNESSES[@]}"; do
    IFS='|' read -r name _ _ <<<"$h"
    [[ -z $ONLY || $ONLY == "$name" ]] || continue
    echo "== fuzz_$name: build"
    make -s -C "$WORK" -j"${LINECAP_FUZZ_JOBS:-2}" "fuzz_$name"
    corpus=$WORK/corpus/$name
    mkdir -p "$corpus" "$WORK/artifacts"
    echo "== fuzz_$name: ${SECONDS_EACH}s over tests/fuzz/corpus/$name"
    log=$WORK/fuzz_$name.log
    # A dictionary of the reader's tokens (tests/fuzz/<name>.dict), when there is one.
    dict=()
    [[ -f $SRC/tests/fuzz/$name.dict ]] && dict=(-dict="$SRC/tests/fuzz/$name.dict")
    # The first directory receives new inputs; the in-tree seeds are only read.
    if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 "$WORK/fuzz_$name" "$corpus" "$SRC/tests/fuzz/corpus/$name" \
        -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$WORK/artifacts/$name-" "${dict[@]}" >"$log" 2>&1; then
        :
    else
        rc=1
        echo "FAIL: fuzz_$name found a problem; log $log, reproducer in $WORK/artifacts/"
        grep -m8 -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" || tail -20 "$log"
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
    echo "fuzz_$name: ${execs:-?} executions in ${SECONDS_EACH}s, peak RSS ${rss:-?} MB, corpus $(ls "$corpus" | wc -l) new + $(ls "$SRC/tests/fuzz/corpus/$name" | wc -l) seeds"
done
[[ $CI -eq 1 && $rc -ne 0 ]] && echo "fuzz: reproduce with build/tests/fuzz/fuzz_<name> ARTIFACT"
exit "$rc"
