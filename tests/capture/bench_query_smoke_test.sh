#!/usr/bin/env bash
# The query table (bench/run.sh query), shortest form: a 20 MB store, one run of each query,
# cold and warm, the page cache left alone. Checks that every row has linecap extract's,
# tcpdump's and stenoread's times and the stenoread ÷ extract ratios, that Stenographer's
# store was accepted (stenotype wrote and indexed every replayed packet, no drop), that every
# answer is the same as the reference's, and that no server, stenotype, veth, namespace or
# store is left behind. (Numbers are not judged here.)
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_cmd tcpdump mergecap tcpreplay stenographer stenotype stenoread stenokeys jq
for b in src/linecap bench/store/store_gen; do
    [[ -x $LINECAP_BUILD/$b ]] || skip "$b not built (meson setup -Dbench=true)"
done
make_tmpdir

links_before=$(ip -o link | wc -l)
netns_before=$(ip netns list | wc -l)
dir=$TEST_TMPDIR/store
rc=0
BENCH_GB=0.02 REPS=1 BENCH_DROP_CACHES=0 BENCH_DIR=$dir BENCH_STENO_BLOCKS=32 \
    "$LINECAP_SRC/bench/store/query_table.sh" "$LINECAP_BUILD" >"$TEST_TMPDIR/stdout" 2>"$TEST_TMPDIR/stderr" || rc=$?
show_on_failure "$TEST_TMPDIR/stderr"
((rc == 0)) || fail "bench/store/query_table.sh exited $rc"
cat "$TEST_TMPDIR/stdout" >&2

grep -q "^Stenographer's store: [0-9]* files, [0-9]* packets (all replayed, 0 dropped)" "$TEST_TMPDIR/stdout" \
    || fail "Stenographer's store was not accepted"
n=0
for q in spread clustered nothing; do
    # | spread | 20 | 0.1 / 0.1 | 0.01 / 0.01 | 10.0 / 10.0 | 0.05 / 0.04 | 5.00 / 4.00 | ... | answers |
    row=$(grep "^| $q |" "$TEST_TMPDIR/stdout") || fail "no row for $q"
    num='[0-9.]+ / [0-9.]+'
    [[ $row =~ ^\|\ $q\ \|\ [0-9]+\ \|\ $num\ \|\ $num\ \|\ $num\ \|\ $num\ \|\ $num\ \| ]] \
        || fail "row $q lacks a time or a ratio: $row"
    [[ $row == *"the same records as tcpdump -r's; stenoread's the same frames in the same order |" ]] \
        || fail "row $q: an answer differs: $row"
    n=$((n + 1))
done
((n == 3)) || fail "$n rows"
[[ ! -e $dir && ! -e $dir-steno ]] || fail "a store was left behind"
(($(ip -o link | wc -l) == links_before)) || fail "a veth was left behind"
(($(ip netns list | wc -l) == netns_before)) || fail "a network namespace was left behind"
# Only what this run started: the stores' paths are its own.
! pgrep -f -- "-config=$dir-steno/config" >/dev/null || fail "the stenographer server still runs"
! pgrep -f -- "--dir=$dir-steno/tmp/" >/dev/null || fail "stenotype still runs"
log "OK: extract, tcpdump -r and stenoread on the same packets, every answer the same"
