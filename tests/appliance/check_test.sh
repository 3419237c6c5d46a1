#!/usr/bin/env bash
# `linecapd --check` (the preflight): each failure case gives exit status 78 and its own
# one-line message with the fix; a good configuration gives 0. Runs against a fake sysfs
# tree and fake /proc files (LINECAP_SYSFS, LINECAP_PROC), so it needs no NIC and no
# hugepages. Usage: check_test.sh CASE (one meson test per case; see meson.build).
CASE=${1:?usage: check_test.sh CASE}
TEST_NAME="check-$CASE"   # for common.sh's log lines and temp dir names
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=fake_tree.sh
source "$(dirname "${BASH_SOURCE[0]}")/fake_tree.sh"
need_linecapd
make_tmpdir
T=$TEST_TMPDIR
S=$T/sys
OUTDIR=$T/out
mkdir -p "$OUTDIR"

# A two-CPU machine on one NUMA node, CPU 1 isolated (no warning about that), no hugepages.
fake_cpu "$S" 0 0
fake_cpu "$S" 1 0
echo 1 >"$S/devices/system/cpu/isolated"
fake_proc "$T/proc" 0 0 0
export LINECAP_SYSFS=$S LINECAP_PROC=$T/proc

# write_cfg [HUGEPAGES] [LCORES] [PORTS_YAML]: one net_null port unless PORTS_YAML is given.
write_cfg() {
    local huge=${1:-false} lcores=${2:-0-1} ports=${3:-}
    [[ -n $ports ]] || ports='  - {name: p0, device: net_null0, rx_queues: 1, rx_descriptors: 512}'
    cat >"$T/cfg.yaml" <<EOF
eal: {lcores: "$lcores", hugepages: $huge, memory_mb: 256}
ports:
$ports
output:
  directory: "$OUTDIR"
  rotate: {size_mb: 16}
  block_size_kb: 256
  blocks_per_queue: 4
metrics:
  enabled: false
EOF
}

# check: runs linecapd --check; output in $OUT, status in $RC.
check() {
    RC=0
    OUT=$("$LINECAPD" --config "$T/cfg.yaml" --check 2>&1) || RC=$?
    printf '%s\n' "$OUT" | sed 's/^/    | /' >&2
}
expect_rc() { [[ $RC == "$1" ]] || fail "$CASE: exit status $RC, expected $1"; }
expect_out() { grep -qF -- "$1" <<<"$OUT" || fail "$CASE: output lacks '$1'"; }
expect_no() { grep -qF -- "$1" <<<"$OUT" && fail "$CASE: output has '$1'"; return 0; }
# expect_error TEXT: exit 78, and TEXT in a line logged as an error.
expect_error() {
    expect_rc 78
    grep -E '\berror\b' <<<"$OUT" | grep -qF -- "$1" || fail "$CASE: no error line with '$1'"
}

case $CASE in
    good)
        write_cfg
        check
        expect_rc 0
        expect_out "configuration and machine ready"
        expect_no "error"
        # also with PCI ports: an 82599 bound to vfio-pci, hugepages reserved and mounted
        fake_pci "$S" 0000:03:00.0 8086 10fb vfio-pci 0 "" 12
        fake_node_hugepages "$S" 0 512 512
        fake_proc "$T/proc" 512 512 1
        write_cfg true 0-1 '  - {name: wan0, device: "0000:03:00.0", rx_queues: 1, rx_descriptors: 1024}'
        check
        expect_rc 0
        expect_no "error"
        # (the disk-speed probe may warn, depending on this machine's disk)
        for w in "NUMA node" "not an Intel" "hugetlbfs" "isolated" "eal.hugepages"; do expect_no "$w"; done
        ;;
    hugepages-missing)
        # none reserved, no hugetlbfs mounted
        write_cfg true
        check
        expect_error "eal.hugepages: no hugepages are reserved (HugePages_Total: 0 in $T/proc/meminfo)"
        expect_out "linecap-hugepages --config $T/cfg.yaml"
        expect_out "no hugetlbfs is mounted (none in $T/proc/mounts)"
        # reserved but too few free
        fake_proc "$T/proc" 100 10 1
        check
        expect_error "eal.hugepages: only 20 MiB of hugepages free (10 of 100 2 MiB pages), the configuration needs about"
        expect_no "no hugetlbfs is mounted"
        # enough: no finding at all
        fake_proc "$T/proc" 1000 1000 1
        check
        expect_rc 0
        expect_no "eal.hugepages"
        expect_no "hugetlbfs"
        # eal.hugepages: false: not checked
        fake_proc "$T/proc" 0 0 0
        write_cfg false
        check
        expect_rc 0
        expect_no "eal.hugepages"
        expect_no "hugetlbfs"
        ;;
    hugepages-node)
        # enough in total, but not on the NIC's node 1
        fake_cpu "$S" 2 1
        fake_pci "$S" 0000:81:00.0 8086 1583 vfio-pci 1 "" 30
        fake_node_hugepages "$S" 0 1000 1000
        fake_node_hugepages "$S" 1 2 2
        fake_proc "$T/proc" 1002 1002 1
        write_cfg true 0-2 '  - {name: wan0, device: "0000:81:00.0", rx_queues: 2, rx_descriptors: 1024}'
        check
        expect_error "eal.hugepages: NUMA node 1 (ports wan0) has 4 MiB of hugepages free, its mbuf pool and write blocks need about 12 MiB"
        expect_out "hugepages-2048kB/nr_hugepages"
        ;;
    numa)
        # the port is on node 1, its worker lcore 1 on node 0: a warning with the fix
        mkdir -p "$S/devices/system/node/node1"
        echo "2-3" >"$S/devices/system/node/node1/cpulist"
        fake_pci "$S" 0000:81:00.0 8086 10fb vfio-pci 1 "" 30
        write_cfg false 0-1 '  - {name: wan0, device: "0000:81:00.0", rx_queues: 1, rx_descriptors: 1024}'
        check
        expect_rc 0
        expect_out "ports[wan0] (0000:81:00.0) is on NUMA node 1 but worker lcore 1 that polls it is on node 0"
        expect_out "use lcores of node 1 (2-3)"
        ;;
    pci-unbound)
        # the device is still bound to the kernel's ixgbe
        fake_pci "$S" 0000:03:00.0 8086 10fb ixgbe 0 eth3 12
        write_cfg false 0-1 '  - {name: wan0, device: "0000:03:00.0"}'
        check
        expect_error "ports[wan0].device 0000:03:00.0: bound to the kernel driver 'ixgbe', not to vfio-pci; bind it: linecap-bind bind 0000:03:00.0"
        # and bound to nothing at all
        rm "$S/bus/pci/devices/0000:03:00.0/driver"
        check
        expect_error "ports[wan0].device 0000:03:00.0: not bound to any driver"
        ;;
    pci-missing)
        write_cfg false 0-1 '  - {name: wan0, device: "0000:3b:00.0"}'
        check
        expect_error "ports[wan0].device 0000:3b:00.0: no such PCI device"
        ;;
    lcore-missing)
        # lcore 2 does not exist on this (fake) two-CPU machine
        write_cfg false 0-2 '  - {name: p0, device: net_null0, rx_queues: 2, rx_descriptors: 512}'
        check
        expect_error "eal.lcores: lcore 2 does not exist on this machine (0,1 present)"
        # an offline one
        echo 0 >"$S/devices/system/cpu/cpu1/online"
        write_cfg
        check
        expect_error "eal.lcores: lcore 1 is offline"
        ;;
    filter-invalid)
        write_cfg false 0-1 '  - {name: p0, device: net_null0, filter: "tcp and and port 80"}'
        check
        expect_error "ports[0].filter: "
        expect_out "tcp and and port 80"
        ;;
    output-readonly)
        # root writes through chmod; only a read-only mount stops it. A private mount
        # namespace: the mount disappears with the process, whatever happens to the test.
        need_root
        need_cmd unshare
        unshare -m --propagation private true 2>/dev/null || skip "cannot create a mount namespace (unshare -m)"
        write_cfg
        RC=0
        # shellcheck disable=SC2016 # $1.. are the inner shell's
        OUT=$(unshare -m --propagation private sh -c \
            'mount -t tmpfs -o ro,size=1m linecap-ro "$1" && exec "$2" --config "$3" --check' \
            sh "$OUTDIR" "$LINECAPD" "$T/cfg.yaml" 2>&1) || RC=$?
        printf '%s\n' "$OUT" | sed 's/^/    | /' >&2
        expect_error "output.directory $OUTDIR: cannot create files there: Read-only file system"
        # a missing directory
        rmdir "$OUTDIR"
        check
        expect_error "output.directory $OUTDIR: No such file or directory; create it (mkdir -p $OUTDIR)"
        ;;
    disk-probe)
        # Eight XL710 ports (40 Gbit/s each, 40 GB/s together): any disk is slower, so the
        # probe warns; it leaves no file behind, and warnings keep the exit status 0.
        ports=
        for i in 0 1 2 3 4 5 6 7; do
            fake_pci "$S" "0000:8$i:00.0" 8086 1583 vfio-pci 0 "" "4$i"
            ports+="  - {name: x$i, device: \"0000:8$i:00.0\", rx_queues: 1, rx_descriptors: 512}"$'\n'
        done
        write_cfg false 0-1 "${ports%$'\n'}"
        check
        expect_rc 0
        expect_out "less than the ports deliver at line rate (x0 40 Gbit/s + x1 40 Gbit/s"
        expect_out "= 40000 MB/s"
        [[ -z $(find "$OUTDIR" -mindepth 1) ]] || fail "the probe left files: $(ls -A "$OUTDIR")"
        ;;
    overrides)
        # LINECAP_SYSFS is what --check looks at: the same configuration passes against the
        # fake tree and fails against an empty one.
        write_cfg
        check
        expect_rc 0
        mkdir -p "$T/empty-sys"
        LINECAP_SYSFS=$T/empty-sys check
        expect_error "eal.lcores: lcore 0 does not exist on this machine"
        ;;
    shield)
        # CPU shielding: warnings only (exit 0 throughout), each naming what is missing.
        # Worker CPU 1 is in isolcpus= (the common setup) but not in nohz_full=.
        write_cfg
        check
        expect_rc 0
        expect_out "CPU shielding: nohz_full= lacks worker CPU 1 on the kernel command line"
        expect_no "isolcpus= lacks"
        expect_out "nohz_full=1 rcu_nocbs=1 irqaffinity=0"
        expect_out "CPU shielding: no cgroup v2 hierarchy at $S/fs/cgroup"
        # systemd's slices: system.slice may still use CPU 1, user.slice is confined.
        mkdir -p "$S/fs/cgroup/system.slice" "$S/fs/cgroup/user.slice"
        echo "cpuset cpu io memory pids" >"$S/fs/cgroup/cgroup.controllers"
        echo 0-1 >"$S/fs/cgroup/system.slice/cpuset.cpus.effective"
        echo 0 >"$S/fs/cgroup/user.slice/cpuset.cpus.effective"
        check
        expect_rc 0
        expect_out "CPU shielding: system.slice may run on worker CPU 1 ($S/fs/cgroup/system.slice/cpuset.cpus.effective: 0-1)"
        expect_out "systemctl start linecap-shield"
        expect_no "user.slice may run"
        # machine.slice without the cpuset controller may use every CPU.
        mkdir -p "$S/fs/cgroup/machine.slice"
        check
        expect_out "machine.slice may run on worker CPU 1 (no cpuset controller on it)"
        # Everything shielded: no finding about it at all.
        rmdir "$S/fs/cgroup/machine.slice"
        echo 0 >"$S/fs/cgroup/system.slice/cpuset.cpus.effective"
        echo 1 >"$S/devices/system/cpu/nohz_full"
        check
        expect_rc 0
        expect_no "CPU shielding"
        # The workers take every CPU: nothing can be shielded, and that is said.
        write_cfg false "0@0,1@1,2@0"
        check
        expect_out "CPU shielding: the worker lcores take every online CPU (0-1)"
        # --print-cpus: what linecap-shield applies. Four CPUs, workers on 1 and 2.
        fake_cpu "$S" 2 0
        fake_cpu "$S" 3 0
        write_cfg false 0-2
        OUT=$("$LINECAPD" --config "$T/cfg.yaml" --print-cpus) || fail "--print-cpus failed"
        [[ $OUT == $'worker_cpus=1-2\nother_cpus=0,3' ]] || fail "--print-cpus printed: $OUT"
        write_cfg false "0@0,1@3,2@3"
        OUT=$("$LINECAPD" --config "$T/cfg.yaml" --print-cpus) || fail "--print-cpus failed"
        [[ $OUT == $'worker_cpus=3\nother_cpus=0-2' ]] || fail "--print-cpus printed: $OUT"
        echo "eal: {lcores: oops}" >"$T/bad.yaml"
        RC=0
        "$LINECAPD" --config "$T/bad.yaml" --print-cpus >/dev/null 2>&1 || RC=$?
        expect_rc 78
        ;;
    receive-work)
        # The kernel's receive work of an af_xdp port's interface on a worker CPU (fake tree).
        # fake_task PID COMM POLICY RT_PRIORITY CPUS: a task as /proc shows it.
        fake_task() {
            mkdir -p "$T/proc/$1"
            echo "$2" >"$T/proc/$1/comm"
            # fields 3..41 after "(COMM)": field 40 rt_priority, field 41 policy
            echo "$1 ($2) S 2 0 0 0 -1 2129984 0 0 0 0 0 7 0 0 -51 0 1 0 412 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 0 1 $4 $3 0 0 0" >"$T/proc/$1/stat"
            printf 'Name:\t%s\nCpus_allowed_list:\t%s\n' "$2" "$5" >"$T/proc/$1/status"
        }
        ports='  - {name: live, device: "net_af_xdp0,iface=veth-cap0,start_queue=0,queue_count=1", rx_queues: 1}'
        write_cfg false 0-1 "$ports"
        mkdir -p "$S/class/net/veth-cap0"
        echo 1 >"$S/class/net/veth-cap0/threaded"
        fake_task 4711 napi/veth-cap0- 1 50 1   # SCHED_FIFO 50 on the worker's CPU 1
        fake_task 4712 napi/veth-cap0- 1 50 0   # the same on the control CPU: harmless
        fake_task 4713 napi/eth7-8193 1 50 1    # another interface's
        check
        expect_rc 0
        expect_out "receive work: ports[live] interface veth-cap0: its NAPI thread (pid 4711, SCHED_FIFO 50) may run on worker CPU 1 and outranks capture.worker_priority rr:1"
        expect_out "taskset -p -c 0 4711"
        expect_out "capture.worker_priority: fifo:60"
        expect_no "pid 4712"
        expect_no "pid 4713"
        # The worker ranked above it: nothing to say.
        sed -i 's/^eal:/capture: {worker_priority: "fifo:60"}\neal:/' "$T/cfg.yaml"
        check
        expect_rc 0
        expect_no "receive work"
        # Without threaded NAPI: the interface's interrupts. One on the worker CPU, one not.
        write_cfg false 0-1 "$ports"
        echo 0 >"$S/class/net/veth-cap0/threaded"
        mkdir -p "$S/class/net/veth-cap0/device/msi_irqs/45" "$S/class/net/veth-cap0/device/msi_irqs/46" \
            "$T/proc/irq/45" "$T/proc/irq/46"
        echo 1 >"$T/proc/irq/45/smp_affinity_list"
        echo 0-1 >"$T/proc/irq/46/smp_affinity_list"
        echo 0 >"$T/proc/irq/46/effective_affinity_list"  # where the kernel really delivers it
        check
        expect_rc 0
        expect_out "receive work: ports[live] interface veth-cap0: interrupt 45 is delivered to worker CPU 1"
        expect_out "echo 0 > $T/proc/irq/45/smp_affinity_list"
        expect_no "interrupt 46"
        ;;
    receive-work-live)
        # The same against the kernel's own files: a veth with threaded NAPI (GRO on, so it
        # uses NAPI without an XDP program), its NAPI thread put at SCHED_FIFO 50 on CPU 1.
        unset LINECAP_SYSFS LINECAP_PROC
        need_root
        need_cmd ethtool
        veth_pair receive-work
        ethtool -K "$CAP_IF" gro on >/dev/null
        echo 1 >"/sys/class/net/$CAP_IF/threaded"
        prefix="napi/$CAP_IF-"
        prefix=${prefix:0:15}
        napi_pids() {  # the NAPI threads of $CAP_IF (a task's comm is cut to 15 characters)
            local c
            for c in /proc/[0-9]*/comm; do
                if [[ $(cat "$c" 2>/dev/null) == "$prefix"* ]]; then c=${c%/comm}; echo "${c#/proc/}"; fi
            done
        }
        wait_for '[[ -n $(napi_pids) ]]' 5 || skip "no NAPI thread appeared for $CAP_IF (threaded NAPI unsupported here)"
        pids=($(napi_pids))
        for pid in "${pids[@]}"; do taskset -p -c 1 "$pid" >/dev/null && chrt -f -p 50 "$pid"; done
        pid=${pids[0]}
        ports="  - {name: live, device: \"net_af_xdp0,iface=$CAP_IF,start_queue=0,queue_count=1\", rx_queues: 1}"
        write_cfg false 0-1 "$ports"
        check
        expect_out "receive work: ports[live] interface $CAP_IF: its NAPI thread (pid $pid, SCHED_FIFO 50) may run on worker CPU 1"
        sed -i 's/^eal:/capture: {worker_priority: "fifo:60"}\neal:/' "$T/cfg.yaml"
        check
        expect_no "receive work"
        ;;
    *) fail "unknown case $CASE" ;;
esac
log "$CASE: ok"
