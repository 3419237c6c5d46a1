#!/usr/bin/env bash
# bench/policy_cost.sh, shortest form: this build's linecap_micro, one run of 0.05 s per
# row. Checks that every row (60 B, IMIX, 1514 B; unique, and with every other packet a
# copy) has its off / dedup / flow cap / both cycles with the delta and ratio against off;
# numbers are not judged here. Then --rows with one row.
#
#   bench_policy_cost_smoke_test.sh [baseline]
#
# With `baseline` (test bench-policy-cost-baseline, suite slow: it builds a second tree,
# about two minutes), as doc/perf quotes it: --baseline HEAD (built from `git archive` into
# /var/cache/linecap-bench), both programs' rows.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
micro=${LINECAP_BUILD:?}/bench/linecap_micro
[[ -x $micro ]] || skip "no $micro (built with -Dbench=true and libbenchmark-dev)"
make_tmpdir

programs=("this tree") baseline=()
if [[ ${1:-} == baseline ]]; then
    git -C "$LINECAP_SRC" rev-parse --verify -q HEAD >/dev/null 2>&1 \
        || skip "not a git checkout: --baseline HEAD has nothing to build"
    programs+=(HEAD) baseline=(--baseline HEAD)
fi
rc=0
LINECAP_MICRO=$micro "$LINECAP_SRC/bench/policy_cost.sh" "${baseline[@]}" --repeat 1 --min-time 0.05 --nice 0 \
    >"$TEST_TMPDIR/stdout" 2>"$TEST_TMPDIR/stderr" || rc=$?
show_on_failure "$TEST_TMPDIR/stderr"
((rc == 0)) || fail "policy_cost.sh exited $rc"
cat "$TEST_TMPDIR/stdout" >&2
# "| 60 B, 2 flows | this tree | 14.2 | 40.1 | +25.9 (2.82x) | ... | 3.1-3.2 |"
num='-?[0-9]+\.[0-9]'
cell="$num \| [+-][0-9]+\.[0-9] \([0-9]+\.[0-9]+x\)"
for row in '60 B, 2 flows' '60 B, 32768 flows' '60 B, 65536 flows' 'IMIX, 2 flows' 'IMIX, 32768 flows' \
    'IMIX, 65536 flows' '1514 B, 32768 flows' '1514 B, 65536 flows' 'IMIX, 32768 flows, every other a copy' \
    '1514 B, 32768 flows, every other a copy'; do
    for program in "${programs[@]}"; do
        grep -Eq "^\| $row \| $program \| $num \| $cell \| $cell \| $cell \| [0-9.]+-[0-9.]+ \|$" "$TEST_TMPDIR/stdout" \
            || fail "no row for $row ($program) with off, dedup, flow cap and both, delta and ratio"
    done
done

# --rows, as bench/README shows it: that row alone.
LINECAP_MICRO=$micro "$LINECAP_SRC/bench/policy_cost.sh" --rows 'traffic:2/flows:32768/copies:0' --repeat 1 \
    --min-time 0.05 --nice 0 >"$TEST_TMPDIR/rows" 2>"$TEST_TMPDIR/stderr" || fail "policy_cost.sh --rows exited $?"
[[ $(grep -c '^| [0-9I]' "$TEST_TMPDIR/rows") == 1 ]] && grep -q '^| 1514 B, 32768 flows | this tree |' "$TEST_TMPDIR/rows" \
    || fail "--rows 'traffic:2/flows:32768/copies:0' did not give the 1514 B, 32768 flows row alone: $(cat "$TEST_TMPDIR/rows")"
log "OK: every row of ${programs[*]} has its four ways, deltas and ratios against off; --rows selects one"
