#!/bin/bash
# linecap-bind: hand linecapd's capture NICs to vfio-pci, and give them back.
#
# Usage: linecap-bind [--config FILE] [--force] bind [ADDR...]
#        linecap-bind [--config FILE] [--driver NAME] unbind [ADDR...]
#        linecap-bind [--config FILE] status [ADDR...]
#
#   bind    bind each PCI address (default: every PCI ports[].device of the configuration)
#           to vfio-pci. Refuses when the IOMMU is off, when the device is not an Intel
#           82599/X710-family port (unless --force), and - always, --force or not - when its
#           kernel interface carries an IP address or a route, or is enslaved to a bond or
#           bridge: that may be the management link. The kernel driver it had is recorded in
#           /run/linecap/bind/ADDR.driver for unbind.
#   unbind  return each address to its kernel driver: --driver NAME, else the one recorded at
#           bind time, else ixgbe (82599) or i40e (X710 family).
#   status  driver, NUMA node, IOMMU group and interface of each address (default: the
#           configured ones, or every Ethernet controller when there is no configuration).
#
#   --config FILE  linecapd's configuration (default /etc/linecap/linecap.yaml, or $LINECAP_CONFIG)
#
# The binding uses the kernel's sysfs interface directly, as dpdk-devbind.py does:
# driver_override (or new_id on kernels without it), the old driver's unbind, vfio-pci's
# bind. driver_override stays set while the device belongs to vfio-pci, so a driver reload
# or rescan cannot take it back; unbind clears it.
# Run at boot by linecap-bind.service (before linecapd.service); installed to sbindir.
#
# Environment (tests): LINECAP_SYSFS (sysfs root, default /sys; when set, the result of a
# bind is not read back, since a fake tree does not react to it), LINECAP_IP (the ip
# command), LINECAP_MODPROBE (modprobe command), LINECAP_RUNDIR (default /run/linecap),
# LINECAP_CONFIG. Exit status: 0 ok, 1 refused or failed (for any address), 2 usage.
set -euo pipefail

SYSFS=${LINECAP_SYSFS:-/sys}
FAKE_SYSFS=0
[[ -z ${LINECAP_SYSFS:-} ]] || FAKE_SYSFS=1
IP=${LINECAP_IP:-ip}
MODPROBE=${LINECAP_MODPROBE:-modprobe}
RUNDIR=${LINECAP_RUNDIR:-/run/linecap}
CONFIG=${LINECAP_CONFIG:-/etc/linecap/linecap.yaml}
VFIO=vfio-pci

say() { printf 'linecap-bind: %s\n' "$*"; }
warn() { printf 'linecap-bind: warning: %s\n' "$*" >&2; }
err() { printf 'linecap-bind: error: %s\n' "$*" >&2; }
die() {
    err "$@"
    exit 1
}
help() { # the comment block at the top of this file
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit 0
}
usage() {
    sed -n '4,6p' "$0" | sed 's/^# \{0,1\}//' >&2
    echo "(--help: more)" >&2
    exit 2
}

# ---- PCI identity ------------------------------------------------------------------------

# nic_family DEVICE_ID (4 hex digits, Intel vendor): "family driver" or nothing.
nic_family() {
    case $1 in
        10f7 | 10f8 | 10f9 | 10fb | 10fc | 1507 | 1514 | 1517 | 151c | 154d | 1557) echo "82599 ixgbe" ;;
        1528) echo "X540 ixgbe" ;;
        1572 | 1581 | 1585 | 1586 | 1589 | 15ff) echo "X710 i40e" ;;
        1580 | 1583 | 1584) echo "XL710 i40e" ;;
        158a | 158b) echo "XXV710 i40e" ;;
        37d0 | 37d1 | 37d2 | 37d3) echo "X722 i40e" ;;
    esac
}

normalize() { # normalize ADDR: 0000:bb:dd.f, lower case; fails on anything else
    local a=${1,,}
    [[ $a =~ ^([0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]] || return 1
    [[ $a == ????:* ]] || a=0000:$a
    echo "$a"
}

dev_dir() { echo "$SYSFS/bus/pci/devices/$1"; }
read_id() { local v; v=$(cat "$1" 2>/dev/null) || v='0x????'; v=${v#0x}; echo "${v,,}"; }
current_driver() { # prints the bound driver's name, or nothing
    local link=$1/driver
    [[ -e $link ]] || return 0
    basename "$(readlink "$link")"
}
iommu_group() {
    [[ -e $1/iommu_group ]] || return 0
    basename "$(readlink "$1/iommu_group")"
}
netdevs() { # kernel interface names of a device (none when a user-space driver has it)
    local n
    # NIC drivers register the interface under the PCI device; virtio one level down.
    for n in "$1"/net/* "$1"/virtio*/net/*; do
        [[ -e $n ]] && basename "$n"
    done
    return 0
}
describe() { # describe ADDR: "Intel 82599 8086:10fb" or "8086:1234 (unknown)"
    local dev vendor device fam
    dev=$(dev_dir "$1")
    vendor=$(read_id "$dev/vendor") device=$(read_id "$dev/device")
    fam=
    [[ $vendor != 8086 ]] || fam=$(nic_family "$device")
    if [[ -n $fam ]]; then
        echo "Intel ${fam% *} $vendor:$device"
    else
        echo "$vendor:$device (not an 82599/X710-family port)"
    fi
}

# ---- safety: never take the management link ------------------------------------------------

# busy_reason IFNAME: prints why the interface must not be taken from the kernel, or nothing.
# Counted: every IPv4 address, every IPv6 address except link-local ones (fe80::/10, which
# the kernel puts on any up interface by itself), every route except the link-local and
# multicast ones that come with those, and membership of a bond or bridge.
# Returns 1 (with a message on stderr) when it cannot tell.
busy_reason() {
    local ifname=$1 out line addrs=() routes=() master link
    if ! command -v "$IP" >/dev/null 2>&1; then
        err "'$IP' not found: need iproute2 to check that $ifname is idle"
        return 1
    fi
    if ! link=$("$IP" -o link show dev "$ifname" 2>&1); then
        echo "ip cannot inspect interface $ifname ($link), so it is not known to be idle"
        return 0
    fi
    out=$("$IP" -o addr show dev "$ifname" 2>/dev/null) || out=
    while read -r line; do
        [[ -n $line ]] || continue
        # "2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0\  valid_lft ..."
        read -r _ _ fam addr rest <<<"$line"
        [[ $fam == inet6 && $rest == *"scope link"* ]] && continue
        [[ $fam == inet || $fam == inet6 ]] && addrs+=("$addr")
    done <<<"$out"
    if ((${#addrs[@]})); then
        echo "interface $ifname has the address ${addrs[*]}"
        return 0
    fi
    out=$( { "$IP" route show dev "$ifname"; "$IP" -6 route show dev "$ifname"; } 2>/dev/null) || true
    while read -r line; do
        [[ -n $line ]] || continue
        case $line in
            fe80::* | ff00::* | "multicast ff00::"* | "local fe80::"*) continue ;;
        esac
        routes+=("$line")
    done <<<"$out"
    if ((${#routes[@]})); then
        echo "interface $ifname carries the route '${routes[0]}'"
        return 0
    fi
    if [[ $link =~ [[:space:]]master[[:space:]]+([^[:space:]]+) ]]; then
        master=${BASH_REMATCH[1]}
        echo "interface $ifname is enslaved to $master (which may carry the management address)"
        return 0
    fi
}

# ---- sysfs writes ------------------------------------------------------------------------

write_sysfs() { # write_sysfs FILE VALUE: the value without a newline, as the kernel expects
    printf '%s' "$2" >"$1" 2>/dev/null || {
        err "writing '$2' to $1 failed"
        return 1
    }
}

ensure_driver() { # ensure_driver NAME: the driver is registered (load its module if needed)
    [[ -d $SYSFS/bus/pci/drivers/$1 ]] && return 0
    "$MODPROBE" "$1" >/dev/null 2>&1 || true
    [[ -d $SYSFS/bus/pci/drivers/$1 ]] || {
        err "driver $1 is not available ($MODPROBE $1 failed)"
        return 1
    }
}

check_iommu() {
    local groups=$SYSFS/kernel/iommu_groups
    if [[ -d $groups ]] && [[ -n $(ls -A "$groups" 2>/dev/null) ]]; then
        return 0
    fi
    die "the IOMMU is off ($groups is empty), and vfio-pci needs it: enable VT-d (AMD-Vi) in the firmware and add 'intel_iommu=on iommu=pt' ('amd_iommu=on iommu=pt' on AMD) to the kernel command line (GRUB_CMDLINE_LINUX in /etc/default/grub, update-grub, reboot)"
}

bind_one() {
    local addr=$1 dev drv vendor device fam ifname reason group
    dev=$(dev_dir "$addr")
    [[ -e $dev ]] || { err "$addr: no such PCI device (check the address with lspci -D)"; return 1; }
    vendor=$(read_id "$dev/vendor") device=$(read_id "$dev/device")
    fam=
    [[ $vendor != 8086 ]] || fam=$(nic_family "$device")
    if [[ -z $fam ]]; then
        if ((FORCE)); then
            warn "$addr: $vendor:$device is not an Intel 82599/X710-family port; binding anyway (--force)"
        else
            err "$addr: $vendor:$device is not an Intel 82599/X710-family port; linecap is tested with ixgbe/i40e ports only (use --force to bind it anyway; for linecap-bind.service: LINECAP_BIND_OPTS=--force in /etc/default/linecap)"
            return 1
        fi
    fi
    drv=$(current_driver "$dev")
    group=$(iommu_group "$dev")
    if [[ $drv == "$VFIO" ]]; then
        say "$addr ($(describe "$addr")) is already bound to $VFIO${group:+ (/dev/vfio/$group)}"
        return 0
    fi
    for ifname in $(netdevs "$dev"); do
        reason=$(busy_reason "$ifname") || return 1
        if [[ -n $reason ]]; then
            err "$addr: refusing to take it from the kernel: $reason - it may be the management link. If it really is a capture port, remove that first (ip addr flush dev $ifname; ip link set $ifname down nomaster)"
            return 1
        fi
    done
    ensure_driver "$VFIO" || return 1
    if [[ -n $drv ]]; then
        mkdir -p "$RUNDIR/bind"
        printf '%s\n' "$drv" >"$RUNDIR/bind/$addr.driver"
    fi
    if [[ -e $dev/driver_override ]]; then
        write_sysfs "$dev/driver_override" "$VFIO" || return 1
    else
        # Kernels before 3.16: teach vfio-pci the id (it then also claims other unbound
        # devices with that id, as dpdk-devbind.py's fallback does).
        write_sysfs "$SYSFS/bus/pci/drivers/$VFIO/new_id" "$vendor $device" || true
    fi
    if [[ -n $drv ]]; then
        write_sysfs "$dev/driver/unbind" "$addr" || return 1
    fi
    if [[ $(current_driver "$dev") != "$VFIO" ]]; then
        write_sysfs "$SYSFS/bus/pci/drivers/$VFIO/bind" "$addr" || return 1
    fi
    if ((!FAKE_SYSFS)) && [[ $(current_driver "$dev") != "$VFIO" ]]; then
        err "$addr: still not bound to $VFIO after the bind (see dmesg)"
        return 1
    fi
    group=$(iommu_group "$dev")
    say "$addr ($(describe "$addr")${drv:+, was $drv}) bound to $VFIO${group:+: /dev/vfio/$group}"
}

unbind_one() {
    local addr=$1 dev drv target='' record vendor device fam group pid fd
    dev=$(dev_dir "$addr")
    [[ -e $dev ]] || { err "$addr: no such PCI device"; return 1; }
    drv=$(current_driver "$dev")
    if [[ $drv != "$VFIO" ]]; then
        say "$addr is not bound to $VFIO (driver: ${drv:-none}): nothing to do"
        return 0
    fi
    record=$RUNDIR/bind/$addr.driver
    if [[ -n $DRIVER ]]; then
        target=$DRIVER
    elif [[ -s $record ]]; then
        target=$(cat "$record")
    else
        vendor=$(read_id "$dev/vendor") device=$(read_id "$dev/device")
        fam=
        [[ $vendor != 8086 ]] || fam=$(nic_family "$device")
        target=${fam#* }
    fi
    [[ -n $target ]] || { err "$addr: which kernel driver does it belong to? give it: linecap-bind --driver NAME unbind $addr"; return 1; }
    group=$(iommu_group "$dev")
    if ((!FAKE_SYSFS)) && [[ -n $group ]]; then
        for fd in /proc/[0-9]*/fd/*; do
            if [[ $(readlink "$fd" 2>/dev/null) == "/dev/vfio/$group" ]]; then
                pid=${fd#/proc/}
                pid=${pid%%/*}
                err "$addr: /dev/vfio/$group is in use by pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null)); stop it first (systemctl stop linecapd)"
                return 1
            fi
        done
    fi
    if [[ -e $dev/driver_override ]]; then
        printf '\n' >"$dev/driver_override" 2>/dev/null || { err "clearing $dev/driver_override failed"; return 1; }
    fi
    write_sysfs "$dev/driver/unbind" "$addr" || return 1
    ensure_driver "$target" || return 1
    write_sysfs "$SYSFS/bus/pci/drivers/$target/bind" "$addr" || return 1
    rm -f "$record"
    if ((!FAKE_SYSFS)) && [[ $(current_driver "$dev") != "$target" ]]; then
        warn "$addr: not bound to $target after the bind (see dmesg)"
    fi
    say "$addr ($(describe "$addr")) returned to $target"
}

status_one() {
    local addr=$1 dev drv node group ifs ifname reason state
    dev=$(dev_dir "$addr")
    if [[ ! -e $dev ]]; then
        printf '%s  no such PCI device\n' "$addr"
        return 1
    fi
    drv=$(current_driver "$dev")
    node=$(cat "$dev/numa_node" 2>/dev/null || echo '?')
    group=$(iommu_group "$dev")
    ifs=$(netdevs "$dev" | paste -sd, -)
    state=
    if [[ $drv == "$VFIO" ]]; then
        state="ready for linecapd"
    else
        state="not bound to $VFIO"
        for ifname in ${ifs//,/ }; do
            reason=$(busy_reason "$ifname") || reason="cannot check $ifname"
            [[ -z $reason ]] || state="$state; will not bind: $reason"
        done
    fi
    printf '%s  %s  driver=%s  numa_node=%s  iommu_group=%s  interface=%s  [%s]\n' \
        "$addr" "$(describe "$addr")" "${drv:-none}" "$node" "${group:--}" "${ifs:--}" "$state"
}

# Every PCI ports[].device of the configuration (block or flow style; comments ignored).
config_addresses() {
    [[ -r $CONFIG ]] || return 0
    sed -e 's/\(^\|[[:space:]]\)#.*$//' "$CONFIG" \
        | grep -oE "device[[:space:]]*:[[:space:]]*[\"']?([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7][\"']?[[:space:]]*([,}]|$)" \
        | sed -E "s/^device[[:space:]]*:[[:space:]]*[\"']?//; s/[\"']?[[:space:]]*[,}]?$//" || true
}

FORCE=0 DRIVER='' cmd=''
while (($#)); do
    case $1 in
        --config) CONFIG=${2:?--config needs a FILE}; shift 2 ;;
        --config=*) CONFIG=${1#*=}; shift ;;
        --force) FORCE=1; shift ;;
        --driver) DRIVER=${2:?--driver needs a NAME}; shift 2 ;;
        --driver=*) DRIVER=${1#*=}; shift ;;
        -h | --help) help ;;
        bind | unbind | status) cmd=$1; shift; break ;;
        *) echo "linecap-bind: unknown argument '$1'" >&2; usage ;;
    esac
done
[[ -n $cmd ]] || usage

addrs=()
for a in "$@"; do
    n=$(normalize "$a") || { echo "linecap-bind: '$a' is not a PCI address (DDDD:BB:DD.F)" >&2; exit 2; }
    addrs+=("$n")
done
if ((${#addrs[@]} == 0)); then
    while read -r a; do
        [[ -n $a ]] && addrs+=("$(normalize "$a")")
    done < <(config_addresses)
fi

rc=0
case $cmd in
    bind)
        if ((${#addrs[@]} == 0)); then
            say "no PCI ports in $CONFIG: nothing to bind"
            exit 0
        fi
        check_iommu
        for a in "${addrs[@]}"; do bind_one "$a" || rc=1; done
        ;;
    unbind)
        if ((${#addrs[@]} == 0)); then
            say "no PCI ports in $CONFIG: nothing to unbind"
            exit 0
        fi
        for a in "${addrs[@]}"; do unbind_one "$a" || rc=1; done
        ;;
    status)
        if [[ -d $SYSFS/kernel/iommu_groups && -n $(ls -A "$SYSFS/kernel/iommu_groups" 2>/dev/null) ]]; then
            echo "IOMMU: on"
        else
            echo "IOMMU: off (vfio-pci needs intel_iommu=on iommu=pt on the kernel command line)"
        fi
        if ((${#addrs[@]} == 0)); then
            for d in "$SYSFS"/bus/pci/devices/*; do
                [[ -e $d/class ]] || continue
                [[ $(cat "$d/class") == 0x0200* ]] && addrs+=("$(basename "$d")")
            done
        fi
        for a in "${addrs[@]}"; do status_one "$a" || rc=1; done
        ;;
esac
exit "$rc"
