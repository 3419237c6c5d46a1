# shellcheck shell=bash
# tests/appliance/fake_tree.sh: build fake sysfs and procfs trees, shaped the way the
# kernel lays them out, for linecapd --check, linecap-bind and linecap-hugepages
# (LINECAP_SYSFS / LINECAP_PROC point them there). Sourced by the appliance tests.

# fake_cpu ROOT N NODE: /sys/devices/system/cpu/cpuN with its nodeNODE link, listed in
# present/online, and NODE's cpulist.
fake_cpu() {
    local root=$1 n=$2 node=$3
    mkdir -p "$root/devices/system/cpu/cpu$n" "$root/devices/system/node/node$node"
    ln -sfn "../../node/node$node" "$root/devices/system/cpu/cpu$n/node$node"
    local present=$root/devices/system/cpu/present
    local cpus
    cpus=$(find "$root/devices/system/cpu" -maxdepth 1 -name 'cpu[0-9]*' -printf '%f\n' | sed 's/cpu//' | sort -n | paste -sd, -)
    echo "$cpus" >"$present"
    echo "$cpus" >"$root/devices/system/cpu/online"
    echo "$n" >>"$root/devices/system/node/node$node/cpulist"
    [[ -e $root/devices/system/cpu/isolated ]] || echo "" >"$root/devices/system/cpu/isolated"
}

# fake_driver ROOT NAME: a registered PCI driver with its bind/unbind/new_id files.
fake_driver() {
    local d=$1/bus/pci/drivers/$2
    mkdir -p "$d"
    : >"$d/bind"
    : >"$d/unbind"
    : >"$d/new_id"
}

# fake_pci ROOT ADDR VENDOR DEVICE DRIVER NODE [NETDEV] [IOMMU_GROUP]: a PCI function
# (class Ethernet) bound to DRIVER ("" = none), with an optional kernel interface and
# IOMMU group. VENDOR/DEVICE without 0x (8086 10fb).
fake_pci() {
    local root=$1 addr=$2 vendor=$3 device=$4 driver=$5 node=$6 netdev=${7:-} group=${8:-}
    local d=$root/bus/pci/devices/$addr
    mkdir -p "$d"
    echo "0x$vendor" >"$d/vendor"
    echo "0x$device" >"$d/device"
    echo "0x020000" >"$d/class"
    echo "$node" >"$d/numa_node"
    : >"$d/driver_override"
    if [[ -n $driver ]]; then
        fake_driver "$root" "$driver"
        ln -sfn "../../drivers/$driver" "$d/driver"
    fi
    if [[ -n $netdev ]]; then
        mkdir -p "$d/net/$netdev"
    fi
    if [[ -n $group ]]; then
        mkdir -p "$root/kernel/iommu_groups/$group/devices"
        ln -sfn "../../../../kernel/iommu_groups/$group" "$d/iommu_group"
    fi
}

# fake_node_hugepages ROOT NODE NR FREE: a NUMA node's 2 MiB hugepage pool.
fake_node_hugepages() {
    local d=$1/devices/system/node/node$2/hugepages/hugepages-2048kB
    mkdir -p "$d"
    echo "$3" >"$d/nr_hugepages"
    echo "$4" >"$d/free_hugepages"
}

# fake_proc PROC TOTAL FREE [MOUNTED]: meminfo with TOTAL/FREE 2 MiB hugepages, mounts
# with (MOUNTED=1) or without a hugetlbfs, and the sys/vm files linecap-hugepages writes.
fake_proc() {
    local p=$1 total=$2 free=$3 mounted=${4:-0}
    mkdir -p "$p/sys/vm"
    cat >"$p/meminfo" <<EOF
MemTotal:        8048576 kB
MemFree:         4024288 kB
HugePages_Total:    $total
HugePages_Free:     $free
HugePages_Rsvd:        0
HugePages_Surp:        0
Hugepagesize:       2048 kB
Hugetlb:         $((total * 2048)) kB
EOF
    {
        echo "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0"
        echo "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0"
        ((mounted)) && echo "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0"
        true
    } >"$p/mounts"
    echo "$total" >"$p/sys/vm/nr_hugepages"
    : >"$p/sys/vm/compact_memory"
}

# assert_file FILE EXPECTED: FILE's content (without a trailing newline) is EXPECTED.
assert_file() {
    local got
    [[ -e $1 ]] || fail "expected $1 to exist"
    got=$(cat "$1")
    [[ $got == "$2" ]] || fail "$1 holds '$got', expected '$2'"
}
