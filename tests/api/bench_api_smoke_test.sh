#!/usr/bin/env bash
# `bench/run.sh api` end to end, shortest form: a 0.05 GB store (generated into this
# test's own cache directory), one 4 s window without and one with the four streaming
# queries at a low offered rate, no page-cache drops (they take seconds each on a busy
# machine; the full run makes them). Checks that the report has its three parts — the
# conversation table (five paths, each with the conversation's packets, cold and warm
# times), the capture-rate rows and medians with bytes streamed by every query, and an
# audit record naming the bench's token. (bench/api/run.sh says in its report whether it
# generated or reused the cached store.)
# Numbers are not judged here (bench/run.sh api measures).
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_hugepages 768
need_bpffs
need_linecapd
need_cmd tcpreplay tcpdump curl chrt ionice flock stenoread
[[ -x ${STORE_GEN:-} ]] || skip "store_gen not built (meson -Dbench=true)"
make_tmpdir

run_bench() {  # run_bench LOG: bench/run.sh api as a user runs it, small
    local log=$1 rc=0
    env BENCH_SKIP_DEPS=1 LINECAP_BUILD="$LINECAP_BUILD" BENCH_GB=0.05 BENCH_DROP_CACHES=0 CONV_REPS=1 ROUNDS=1 WINDOW_S=4 CAPTURE_PPS=2000 \
        BENCH_CACHE="$TEST_TMPDIR/cache" BENCH_RESULTS="$TEST_TMPDIR/results" BENCH_TIMEOUT=300 \
        "$LINECAP_SRC/bench/run.sh" api >"$log" 2>"$log.err" || rc=$?
    show_on_failure "$log.err" "$log"
    ((rc == 0)) || fail "bench/run.sh api exited $rc"
    cmp -s "$log" "$TEST_TMPDIR/results/api.txt" || fail "the report printed differs from results/api.txt"
}

shm_before=$(find /dev/shm -maxdepth 1 -name 'lc-api-bench-cap.*' | sort)
run_bench "$TEST_TMPDIR/first.txt"
R=$TEST_TMPDIR/first.txt
cat "$R" >&2
grep -q 'generated into .*/store-0.05GB-' "$R" || fail "the first run did not generate the store into the cache"
# Part 1: five paths, numbers in all four time columns (tcpdump: cold only), the
# conversation's packets (those of it that a 0.05 GB store's time span holds).
conv=$(sed -n 's/^conversation: .* (\([0-9]*\) packets)$/\1/p' "$R")
[[ $conv -gt 0 ]] 2>/dev/null || fail "no conversation line with its packet count"
for path in 'API as shipped' 'API, serve' 'linecap extract -o -' 'linecap extract under chrt' 'tcpdump -V' 'stenoread'; do
    grep -Eq "^\| ${path}[^|]* \| [0-9.]+ \| [0-9.]+ \| ([0-9.]+|-) \| ([0-9.]+|-) \| $conv \|$" "$R" \
        || fail "no conversation row for '$path' with times and $conv packets"
done
grep -q "the API's is byte-identical to linecap extract's" "$R" || fail "no byte-identity line"
grep -Eq '^stenoread ÷ linecap extract, total: cold [0-9.]+, warm [0-9.]+$' "$R" || fail "no stenoread ratio line"
grep -q '^NOT COLD (BENCH_DROP_CACHES=0' "$R" || fail "the report does not say that its 'cold' runs were not cold"
# Part 2: one window of each kind; every query streamed something in the 'with' window.
grep -Eq '^\| 1 \| without \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [^|]+ \| 0\.0 \| - \|' "$R" || fail "no 'without' row"
grep -Eq '^\| 1 \| with \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [^|]+ \| [0-9.]+ \| [0-9.]+ / [0-9.]+ / [0-9.]+ / [0-9.]+ \|' "$R" \
    || fail "no 'with' row with four per-query byte counts"
grep -q '^median written pkt/s: without [0-9]*, with 4 queries [0-9]*; median ratio' "$R" || fail "no medians line"
grep -q '^whole run .*sent [0-9]*, written [0-9]*' "$R" || fail "no whole-run accounting line"
! grep -q '^FAIL' "$R" || fail "the capture part reported a failure"
# Part 3: an audit record of a complete answer, naming the client.
grep -q '^{"time":.*"who":"token:bench-analyst".*"request":"/api/v1/packets.*"outcome":"complete"}$' "$R" \
    || fail "no audit record naming token:bench-analyst"

[[ $(find /dev/shm -maxdepth 1 -name 'lc-api-bench-cap.*' | sort) == "$shm_before" ]] \
    || fail "the capture part left its tmpfs directory in /dev/shm"
log "OK: bench/run.sh api printed all three parts"
