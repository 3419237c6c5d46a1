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
# The harnesses and the sources each needs are listed once, in tests/fuzz/meson.build, and
# built by meson in $LINECAP_BUILD/fuzz-clang (default build/fuzz-clang), a build directory
# configured with -Dfuzz=true, clang and the sanitizers; ninja rebuilds only what changed.
# New inputs the fuzzer finds go to the work directory, not into the tree: copy the
# interesting ones to tests/fuzz/corpus/<name>/ by hand. Exit 77 (skip) when clang or libFuzzer is missing
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

# The fuzzing build: a meson build directory of its own, with clang, libFuzzer's coverage
# and ASan + UBSan (tests/fuzz/meson.build builds each harness from just the sources its
# line names). Set up once; ninja rebuilds what changed.
if [[ ! -f $WORK/build.ninja ]]; then
    rm -rf "$WORK/obj" "$WORK/Makefile"  # an earlier layout of this directory
    CC=${CXX/clang++/clang} CXX=$CXX meson setup "$WORK" "$SRC" -Dfuzz=true -Dbench=false \
        -Dbuildtype=plain -Dwerror=false -Dwarning_level=0 -Db_sanitize=address,undefined -Db_lundef=false \
        "-Dcpp_args=-O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined" \
        >"$WORK/setup.log" 2>&1 || { cat "$WORK/setup.log"; echo "fuzz: meson setup failed"; exit 1; }
fi
HARNESSES=()
for f in "$SRC"/tests/fuzz/fuzz_*.cpp; do
    f=${f##*/fuzz_}
    HARNESSES+=("${f%.cpp}")
done

rc=0
for name in "${HARNESSES[@]}"; do
    [[ -z $ONLY || $ONLY == "$name" ]] || continue
    echo "== fuzz_$name: build"
    ninja -C "$WORK" -j"${LINECAP_FUZZ_JOBS:-2}" "tests/fuzz/fuzz_$name" >"$WORK/build-$name.log" 2>&1 \
        || { tail -30 "$WORK/build-$name.log"; echo "FAIL: fuzz_$name does not build"; rc=1; continue; }
    corpus=$WORK/corpus/$name
    mkdir -p "$corpus" "$WORK/artifacts"
    echo "== fuzz_$name: ${SECONDS_EACH}s over tests/fuzz/corpus/$name"
    log=$WORK/fuzz_$name.log
    # A dictionary of the reader's tokens (tests/fuzz/<name>.dict), when there is one.
    dict=()
    [[ -f $SRC/tests/fuzz/$name.dict ]] && dict=(-dict="$SRC/tests/fuzz/$name.dict")
    # The first directory receives new inputs; the in-tree seeds are only read.
    if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 "$WORK/tests/fuzz/fuzz_$name" "$corpus" "$SRC/tests/fuzz/corpus/$name" \
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
