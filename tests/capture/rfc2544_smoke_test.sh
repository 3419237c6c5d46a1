#!/usr/bin/env bash
# The live-path benchmark as a user runs it, shortest form: bench/rfc2544.py over every
# cell of the table (tmpfs and disk × quiet and busy × linecapd and tcpdump), one 2 s trial
# at top speed per cell (--probe 1). Checks that it produces the whole table without an
# error, writes the markdown and JSON, that the kernel ran the receiving veth's work in a
# NAPI thread of its own, on the capture CPU at SCHED_FIFO 50, and autogroups were off (the
# default rig: read back from sysfs, ethtool and /proc), that trafgen sent the frames, and that it leaves no veth or
# namespace behind and the kernel settings it changed as they were. (Numbers are not judged here; bench/run.sh rfc2544 measures.)
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_cmd tcpreplay tcpdump ethtool trafgen netsniff-ng
need_hugepages 512
need_bpffs
make_tmpdir

mkdir -p "$TEST_TMPDIR/work"
mount_small_fs tmpfs 1G
disk=$(mktemp -d /var/tmp/linecap-smoke-disk.XXXXXX)
on_exit "rm -rf '$disk'"

sysctls=(/proc/sys/kernel/sched_autogroup_enabled /proc/sys/net/core/wmem_default)
sysctls_before=$(cat "${sysctls[@]}")
links_before=$(ip -o link | wc -l)
netns_before=$(ip netns list | wc -l)
rc=0
python3 "$LINECAP_SRC/bench/rfc2544.py" --out-dir "$tmpfs" --disk-dir "$disk" \
    --workdir "$TEST_TMPDIR/work" --probe 1 --trial 2 --blocks 32 \
    --json "$TEST_TMPDIR/table.json" --md "$TEST_TMPDIR/table.md" \
    >"$TEST_TMPDIR/stdout" 2>"$TEST_TMPDIR/stderr" || rc=$?
show_on_failure "$TEST_TMPDIR/stderr"
((rc == 0)) || fail "rfc2544.py exited $rc"
cat "$TEST_TMPDIR/stdout" >&2

for fs in tmpfs disk; do
    for load in quiet busy; do
        for tool in linecapd tcpdump; do
            grep -Eq "^$fs +$load +$tool +\(top only\)" "$TEST_TMPDIR/stdout" \
                || fail "no result for $fs/$load/$tool in the table"
        done
    done
done
! grep -q ' error ' "$TEST_TMPDIR/stdout" || fail "a cell ended in an error"
grep -q '^## Live path: zero-loss throughput' "$TEST_TMPDIR/table.md" || fail "no markdown table"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["cells"]) == 4, d["cells"]' \
    "$TEST_TMPDIR/table.json" || fail "the JSON does not hold the 4 cells"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); r = d["rig"]
assert d["generator"] == "trafgen", d["generator"]
assert r == {"receive_path": "napi-thread", "napi_threaded": True, "receiver_gro": "on", "sender_tso": "off",
             "napi_threads": [{"cpus": [1], "policy": "fifo", "priority": 50}], "autogroup": "0"}, r' \
    "$TEST_TMPDIR/table.json" \
    || fail "the rig is not the default one (trafgen, threaded NAPI on CPU 1 at SCHED_FIFO 50, no autogroups)"

(($(ip -o link | wc -l) == links_before)) || fail "a veth was left behind"
(($(ip netns list | wc -l) == netns_before)) || fail "a network namespace was left behind"
[[ $(cat "${sysctls[@]}") == "$sysctls_before" ]] \
    || fail "autogroup / wmem_default not restored: $(cat "${sysctls[@]}" | tr '\n' ' ') (before: $(tr '\n' ' ' <<<"$sysctls_before"))"
log "OK: the whole table (2 file systems x 2 loads x 2 tools) in one run"
