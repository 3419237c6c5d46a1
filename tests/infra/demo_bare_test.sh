#!/usr/bin/env bash
# The README's first command on a bare machine: `scripts/demo.sh` (a short run) from the state
# a fresh boot leaves — no 2 MiB page reserved, neither hugetlbfs nor bpffs mounted, no
# hugepages.sh state file. It must exit 0, capture packets into valid pcap files, and leave the
# machine exactly as it found it (pages, mounts, state files, namespaces, veths, processes).
#
# scripts/run-tests.sh runs this test (suite `bare`) first, before it reserves anything, so on
# a fresh CI machine it really runs; on a prepared machine it skips, saying what is not bare.
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

need_root
HP="bash $LINECAP_SRC/scripts/hugepages.sh"
why=$($HP bare) || skip "machine not bare (${why#not bare: })"
need_cmd tcpreplay capinfos ip

# What "as found" means, compared after the demo.
machine_state() {
    echo "nr_hugepages=$(cat /proc/sys/vm/nr_hugepages)"
    awk '$3 == "hugetlbfs" || $3 == "bpf" { print "mount", $2, $3 }' /proc/mounts | sort
    echo "hugepages_dir=$([[ -d /dev/hugepages ]] && echo yes || echo no)"
    find /dev/hugepages -mindepth 1 2>/dev/null | sed 's/^/hugepage file /'
    find /run -maxdepth 1 -name 'linecap-*' 2>/dev/null | sort | sed 's/^/run /'
    ip netns list 2>/dev/null | awk '$1 ~ /^lc-demo-/ { print "netns", $1 }'
    ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^lc[0-9]+x/ { print "veth", $2 }'
    pgrep -x linecapd | sed 's/^/linecapd pid /'
    pgrep -x tcpreplay | sed 's/^/tcpreplay pid /'
    return 0  # pgrep finds nothing on a clean machine: not a failure of the listing
}
before=$(machine_state)

# The demo keeps its capture files in /tmp/linecap-demo; this test removes only the ones it made.
demo_dir=/tmp/linecap-demo
had_dir=$([[ -d $demo_dir ]] && echo yes || echo no)
old_files=$(find "$demo_dir" -maxdepth 1 -type f 2>/dev/null | sort || true)  # no directory yet: none
cleanup_demo_files() {
    local f
    comm -13 <(echo "$old_files") <(find "$demo_dir" -maxdepth 1 -type f 2>/dev/null | sort) |
        while read -r f; do [[ -n $f ]] && rm -f -- "$f"; done
    [[ $had_dir == yes ]] || rmdir "$demo_dir" 2>/dev/null || true
}
on_exit cleanup_demo_files
make_tmpdir
show_on_failure "$TEST_TMPDIR/demo.log"

# As the README writes it, with a short duration. LINECAP_BUILD_DIR: the build meson tests.
log "running scripts/demo.sh 6 from a bare machine"
rc=0
(cd "$LINECAP_SRC" && LINECAP_BUILD_DIR=$LINECAP_BUILD bash scripts/demo.sh 6) >"$TEST_TMPDIR/demo.log" 2>&1 || rc=$?
((rc == 0)) || fail "scripts/demo.sh exited $rc"

new_files=$(comm -13 <(echo "$old_files") <(find "$demo_dir" -maxdepth 1 -type f -name '*.pcap' | sort))
[[ -n $new_files ]] || fail "the demo finished no capture file in $demo_dir"
packets=0
while read -r f; do
    pcap_compare validate "$f" >/dev/null || fail "$f is not a valid capture file"
    n=$(pcap_compare count "$f" | sed -n 's/^.*: \([0-9]*\) packets.*$/\1/p' | head -n 1)
    packets=$((packets + n))
done <<<"$new_files"
((packets > 0)) || fail "the demo's files hold no packet"
grep -q 'reached the port' "$TEST_TMPDIR/demo.log" || fail "no shutdown summary from linecapd in the demo's output"

after=$(machine_state)
[[ $after == "$before" ]] || fail "the demo left the machine changed:
$(diff <(echo "$before") <(echo "$after"))"
$HP bare >/dev/null || fail "not bare after the demo: $($HP bare)"
log "demo: exit 0, $packets packets in $(wc -l <<<"$new_files") file(s); machine left as found"
