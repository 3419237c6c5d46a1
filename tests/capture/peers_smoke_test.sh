#!/usr/bin/env bash
# The peer benchmark as the bench README shows it (bench/run.sh peers), shortest form: one
# 1 s trial at 50 kpps per tool into tmpfs, after each tool's warm-up. Checks that every
# peer ran and captured (Stenographer's count comes from the blocks it wrote), that the
# table and its verdict lines are printed and written, and that nothing is left behind.
# (Numbers are not judged here; bench/run.sh peers measures.)
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_cmd stenotype tcpdump netsniff-ng trafgen ethtool
need_hugepages 768
need_bpffs
need_linecapd
make_tmpdir

links_before=$(ip -o link | wc -l)
netns_before=$(ip netns list | wc -l)
results=$LINECAP_SRC/bench/results
touch "$TEST_TMPDIR/start"
rc=0
LINECAP_BUILD=$LINECAP_BUILD BENCH_SKIP_DEPS=1 BENCH_TMPFS_SIZE=2G \
    "$LINECAP_SRC/bench/run.sh" peers --fs tmpfs --trial 1 --rates 50000 --blocks 32 \
    >"$TEST_TMPDIR/stdout" 2>"$TEST_TMPDIR/stderr" || rc=$?
show_on_failure "$TEST_TMPDIR/stderr"
((rc == 0)) || fail "bench/run.sh peers exited $rc"
cat "$TEST_TMPDIR/stdout" >&2

for tool in stenographer tcpdump netsniff-ng linecapd; do
    grep -Eq "^tmpfs +quiet +$tool +[0-9.]+ %" "$TEST_TMPDIR/stdout" || fail "no loss figure for $tool in the table"
done
grep -Eq '^tmpfs/quiet: at 50 kpps linecapd lost [0-9.]+ %, stenographer [0-9.]+ %: (ok|BEHIND STENOGRAPHER)$' \
    "$TEST_TMPDIR/stdout" || fail "no verdict against Stenographer"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
tools = d["cells"][0]["tools"]
for name in ("stenographer", "tcpdump", "netsniff-ng", "linecapd"):
    t = [x for x in tools[name]["trials"] if not x.get("warm_up")]
    assert t and t[0]["offered"] == 50000 and t[0]["sent"] > 0 and t[0]["got"] > 0, (name, tools[name])' \
    "$results/peers-table.json" || fail "a peer captured nothing, or the JSON lacks its trial"
[[ $results/peers-table.json -nt $TEST_TMPDIR/start && $results/peers-table.md -nt $TEST_TMPDIR/start ]] \
    || fail "bench/results/peers-table.{md,json} were not written by this run"
grep -q '^## Live path: loss at fixed offered rates' "$results/peers-table.md" || fail "no markdown table"
(($(ip -o link | wc -l) == links_before)) || fail "a veth was left behind"
(($(ip netns list | wc -l) == netns_before)) || fail "a network namespace was left behind"
! pgrep -x stenotype >/dev/null || fail "stenotype still runs"
log "OK: stenographer, tcpdump, netsniff-ng and linecapd on one rig, one table"
