#!/usr/bin/env bash
# scripts/linecap-hugepages.sh against fake sysfs/procfs trees: the pages it derives from a
# configuration (the documented formula) land in the NUMA node's pool of the NICs, the
# global pool takes the rest, a second run changes nothing, hugetlbfs is mounted once, a
# MiB argument works, eal.hugepages: false is a no-op; and what it reserves satisfies
# `linecapd --check` (the same estimate). Needs no root.
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=fake_tree.sh
source "$(dirname "${BASH_SOURCE[0]}")/fake_tree.sh"

HP=$LINECAP_SRC/scripts/linecap-hugepages.sh
[[ -r $HP ]] || fail "no $HP"
make_tmpdir
T=$TEST_TMPDIR

# The fake mount: logs its arguments and adds the mount to the fake /proc/mounts.
cat >"$T/fake-mount" <<'EOF'
#!/usr/bin/env bash
echo "$*" >>"$FAKE_MOUNT_LOG"
echo "nodev ${@: -1} hugetlbfs rw,relatime,pagesize=2M 0 0" >>"$LINECAP_PROC/mounts"
EOF
chmod +x "$T/fake-mount"
export LINECAP_MOUNT=$T/fake-mount LINECAP_MOUNT_DIR=$T/hugepages-mnt FAKE_MOUNT_LOG=$T/mount.log
export LINECAP_SYSFS=$T/sys LINECAP_PROC=$T/proc LINECAP_CONFIG=$T/none.yaml

run_hp() {
    RC=0
    OUT=$(bash "$HP" "$@" 2>&1) || RC=$?
    printf '%s\n' "$OUT" | sed 's/^/    | /' >&2
}
expect_rc() { [[ $RC == "$1" ]] || fail "$2: exit status $RC, expected $1"; }
expect_out() { grep -qF -- "$1" <<<"$OUT" || fail "$2: output lacks '$1'"; }

fresh() {
    rm -rf "$T/sys" "$T/proc" "$T/mount.log" "$T/hugepages-mnt"
    fake_proc "$T/proc" 0 0 0
    fake_cpu "$T/sys" 0 0
    fake_cpu "$T/sys" 1 1
    fake_node_hugepages "$T/sys" 0 0 0
    fake_node_hugepages "$T/sys" 1 0 0
    mkdir -p "$T/sys/kernel/mm/hugepages/hugepages-2048kB"
    echo 0 >"$T/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
    echo 0 >"$T/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages"
}

# Two 82599 ports on NUMA node 1 (bound to vfio-pci), plus a pcap vdev (no node).
fresh
fake_pci "$T/sys" 0000:81:00.0 8086 10fb vfio-pci 1 "" 30
fake_pci "$T/sys" 0000:81:00.1 8086 10fb vfio-pci 1 "" 31
cat >"$T/cfg.yaml" <<EOF
eal:
  lcores: "0-4"      # 4 workers
  hugepages: true
ports:
  - name: wan0
    device: "0000:81:00.0"
    rx_queues: 2
    rx_descriptors: 4096
  - name: wan1
    device: 81:00.1
    rx_queues: 2
  - {name: replay, device: "net_pcap0,rx_pcap=/tmp/x.pcap", rx_queues: 1, rx_descriptors: 1024}
capture:
  burst_size: 64
  workers:
    - {lcore: 1, queues: ["wan0:0", "wan1:0"]}
    - {lcore: 2, queues: ["wan0:1"]}
    - {lcore: 3, queues: ["wan1:1"]}
    - {lcore: 4, queues: ["replay:0"]}
output:
  directory: $T/out
  block_size_kb: 1024
  blocks_per_queue: 32
EOF
mkdir -p "$T/out"

log "derived from the configuration"
run_hp --config "$T/cfg.yaml"
expect_rc 0 "reserve from the configuration"
# node 1: descriptors 2*4096 + 2*4096 = 16384; workers 4 -> (16384 + 4*(64+256) + 256) * 1.25
# = 22400 -> 32767 mbufs = 80 MiB; blocks 4 queues * 32 MiB = 128 MiB; + 256 = 464 MiB = 232
# pages. No node: 1024 descriptors -> (1024 + 1280 + 256) * 1.25 = 3200 -> 4095 mbufs = 10
# MiB; 1 queue * 32 MiB; + 256 = 298 MiB = 149 pages.
assert_file "$T/sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages" 232
assert_file "$T/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages" 0
assert_file "$T/proc/sys/vm/nr_hugepages" $((232 + 149))
expect_out "node 1: 464 MiB = 232 pages" "node 1 estimate"
expect_out "32767 mbufs" "node 1 estimate"
expect_out "no NUMA node (global pool): 298 MiB = 149 pages" "vdev estimate"
assert_file "$FAKE_MOUNT_LOG" "-t hugetlbfs -o pagesize=2M nodev $T/hugepages-mnt"

log "idempotent"
cp "$T/sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages" "$T/before"
run_hp --config "$T/cfg.yaml"
expect_rc 0 "second run"
expect_out "already 232" "second run"
expect_out "hugetlbfs already mounted" "second run"
assert_file "$T/sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages" "$(cat "$T/before")"
[[ $(wc -l <"$FAKE_MOUNT_LOG") == 1 ]] || fail "mounted twice"
# never lowered: a bigger pool stays as it is
echo 500 >"$T/sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages"
run_hp --config "$T/cfg.yaml"
assert_file "$T/sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages" 500

log "lcores placed on CPUs (--lcores style) count as lcores"
fresh
fake_pci "$T/sys" 0000:81:00.0 8086 10fb vfio-pci 1 "" 30
fake_pci "$T/sys" 0000:81:00.1 8086 10fb vfio-pci 1 "" 31
sed 's/lcores: "0-4" .*/lcores: "0@0,1@1,2@1,3@0,4@1"/' "$T/cfg.yaml" >"$T/placed.yaml"
run_hp --config "$T/placed.yaml"
expect_rc 0 "placed lcores"
expect_out "node 1: 464 MiB = 232 pages" "placed lcores: 4 workers, as with 0-4"

# What the script reserved satisfies linecapd --check's estimate (same formula, less slack).
if [[ -x ${LINECAPD:-} ]]; then
    log "linecapd --check accepts what the script reserved"
    fresh
    fake_pci "$T/sys" 0000:81:00.0 8086 10fb vfio-pci 1 "" 30
    fake_pci "$T/sys" 0000:81:00.1 8086 10fb vfio-pci 1 "" 31
    for n in 2 3 4; do fake_cpu "$T/sys" "$n" 1; done
    run_hp --config "$T/cfg.yaml"
    expect_rc 0 "reserve for --check"
    node1=$(cat "$T/sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages")
    total=$(cat "$T/proc/sys/vm/nr_hugepages")
    fake_node_hugepages "$T/sys" 1 "$node1" "$node1"
    fake_proc "$T/proc" "$total" "$total" 1
    RC=0
    OUT=$("$LINECAPD" --config "$T/cfg.yaml" --check 2>&1) || RC=$?
    printf '%s\n' "$OUT" | sed 's/^/    | /' >&2
    grep -q "eal.hugepages" <<<"$OUT" && fail "--check complains about hugepages the script reserved"
    # one page less on node 1 than its pool and blocks need: --check names the node
    fake_node_hugepages "$T/sys" 1 "$node1" 50
    RC=0
    OUT=$("$LINECAPD" --config "$T/cfg.yaml" --check 2>&1) || RC=$?
    printf '%s\n' "$OUT" | sed 's/^/    | /' >&2
    expect_rc 78 "--check with too few pages on node 1"
    expect_out "NUMA node 1 (ports wan0, wan1) has 100 MiB of hugepages free" "--check per node"
else
    log "LINECAPD not built: the --check consistency part is not run"
fi

log "MiB argument"
fresh
run_hp --node 0 1000 --no-mount
expect_rc 0 "MiB argument"
assert_file "$T/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages" 500
[[ ! -e $FAKE_MOUNT_LOG ]] || fail "--no-mount mounted"

log "no per-node pools: the global pool"
fresh
fake_pci "$T/sys" 0000:81:00.0 8086 10fb vfio-pci 1 "" 30
fake_pci "$T/sys" 0000:81:00.1 8086 10fb vfio-pci 1 "" 31
rm -rf "$T/sys/devices/system/node"
run_hp --config "$T/cfg.yaml" --dry-run
expect_rc 0 "dry run"
assert_file "$T/proc/sys/vm/nr_hugepages" 0
run_hp --config "$T/cfg.yaml"
expect_rc 0 "global pool"
expect_out "no per-node hugepage pool for node 1" "global pool"
assert_file "$T/proc/sys/vm/nr_hugepages" $((232 + 149))

log "default page size 1 GiB: the 2 MiB pool in sysfs, not /proc/sys/vm/nr_hugepages"
fresh
rm -rf "$T/sys/devices/system/node"
sed -i 's/^Hugepagesize:.*/Hugepagesize:    1048576 kB/' "$T/proc/meminfo"
run_hp 100
expect_rc 0 "1 GiB default pages"
assert_file "$T/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages" 50
assert_file "$T/proc/sys/vm/nr_hugepages" 0

log "eal.hugepages: false"
fresh
printf 'eal:\n  hugepages: false\nports:\n  - {name: a, device: net_null0}\noutput:\n  directory: /tmp\n' >"$T/nohuge.yaml"
run_hp --config "$T/nohuge.yaml"
expect_rc 0 "eal.hugepages false"
expect_out "nothing to reserve" "eal.hugepages false"
assert_file "$T/proc/sys/vm/nr_hugepages" 0

log "missing configuration"
run_hp --config "$T/does-not-exist.yaml"
expect_rc 1 "missing configuration"
expect_out "cannot read the configuration" "missing configuration"

log "all linecap-hugepages checks passed"
