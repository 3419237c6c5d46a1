#!/usr/bin/env bash
# scripts/linecap-bind.sh against a fake sysfs tree and a fake `ip`: the kernel files a bind
# and an unbind write, the refusal to take an interface that has an address, a route or a
# master (the management link), PCI id recognition, the IOMMU check, the configured
# addresses. Needs no NIC and no root.
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=fake_tree.sh
source "$(dirname "${BASH_SOURCE[0]}")/fake_tree.sh"

BIND=$LINECAP_SRC/scripts/linecap-bind.sh
[[ -r $BIND ]] || fail "no $BIND"
make_tmpdir
T=$TEST_TMPDIR

# The fake `ip`: answers from $T/ip/IFNAME.{addr,route,route6,link}, logs its calls.
mkdir -p "$T/ip"
cat >"$T/fake-ip" <<EOF
#!/usr/bin/env bash
echo "\$*" >>"$T/ip/calls"
dir=$T/ip
case "\$*" in
    "-o addr show dev "*) f=\$dir/\${5}.addr ;;
    "route show dev "*) f=\$dir/\${4}.route ;;
    "-6 route show dev "*) f=\$dir/\${5}.route6 ;;
    "-o link show dev "*) f=\$dir/\${5}.link ;;
    *) echo "fake-ip: unexpected: \$*" >&2; exit 2 ;;
esac
[[ -e \$f ]] && cat "\$f"
exit 0
EOF
chmod +x "$T/fake-ip"

cat >"$T/fake-modprobe" <<EOF
#!/usr/bin/env bash
# "loads" a driver: registers it in the fake tree
echo "\$*" >>"$T/modprobe.calls"
d=\$LINECAP_SYSFS/bus/pci/drivers/\$1
mkdir -p "\$d" && : >"\$d/bind" && : >"\$d/unbind" && : >"\$d/new_id"
EOF
chmod +x "$T/fake-modprobe"

export LINECAP_IP=$T/fake-ip LINECAP_MODPROBE=$T/fake-modprobe LINECAP_RUNDIR=$T/run
export LINECAP_CONFIG=$T/none.yaml

# new_tree NAME: a fresh sysfs tree with the IOMMU on and vfio-pci registered.
new_tree() {
    S=$T/$1
    rm -rf "$S" "$T/run"
    mkdir -p "$S/kernel/iommu_groups"
    fake_driver "$S" vfio-pci
    export LINECAP_SYSFS=$S
}

# run_bind ARGS...: runs the script, output in $OUT, status in $RC.
run_bind() {
    RC=0
    OUT=$(bash "$BIND" "$@" 2>&1) || RC=$?
    printf '%s\n' "$OUT" | sed 's/^/    | /' >&2
}

expect_rc() { [[ $RC == "$1" ]] || fail "$2: exit status $RC, expected $1"; }
expect_out() { grep -qF -- "$1" <<<"$OUT" || fail "$2: output lacks '$1'"; }

# ---- IOMMU off: refused, with the kernel parameters to add ------------------------------
log "IOMMU off"
new_tree iommu-off
rmdir "$S/kernel/iommu_groups"
mkdir -p "$S/kernel/iommu_groups"   # present but empty, as with intel_iommu=off
fake_pci "$S" 0000:03:00.0 8086 10fb ixgbe 0 eth3
run_bind bind 0000:03:00.0
expect_rc 1 "bind with the IOMMU off"
expect_out "IOMMU is off" "IOMMU off"
expect_out "intel_iommu=on iommu=pt" "IOMMU off"
assert_file "$S/bus/pci/devices/0000:03:00.0/driver_override" ""

# ---- an interface with an address: refused, names interface and address --------------------
log "interface with an address"
new_tree busy
fake_pci "$S" 0000:03:00.0 8086 10fb ixgbe 0 eth7 12
cat >"$T/ip/eth7.addr" <<'EOF'
7: eth7    inet 10.1.2.3/24 brd 10.1.2.255 scope global eth7\       valid_lft forever preferred_lft forever
7: eth7    inet6 fe80::1/64 scope link \       valid_lft forever preferred_lft forever
EOF
run_bind bind 0000:03:00.0
expect_rc 1 "bind of an interface with an address"
expect_out "eth7" "busy interface"
expect_out "10.1.2.3/24" "busy interface"
expect_out "management link" "busy interface"
assert_file "$S/bus/pci/devices/0000:03:00.0/driver_override" ""
assert_file "$S/bus/pci/drivers/ixgbe/unbind" ""
assert_file "$S/bus/pci/drivers/vfio-pci/bind" ""
[[ ! -e $T/run/bind/0000:03:00.0.driver ]] || fail "a refused bind recorded a driver"
# --force does not override the management-link check.
run_bind --force bind 0000:03:00.0
expect_rc 1 "bind --force of an interface with an address"
assert_file "$S/bus/pci/drivers/ixgbe/unbind" ""
# status says why it will not bind
run_bind status 0000:03:00.0
expect_out "will not bind: interface eth7 has the address 10.1.2.3/24" "status of a busy port"

# ---- a route, and a bond master, are refused as well ----------------------------------------
log "interface with a route / a master"
new_tree route
fake_pci "$S" 0000:03:00.1 8086 10fb ixgbe 0 eth8 13
echo "10.9.0.0/16 via 10.1.2.1" >"$T/ip/eth8.route"
run_bind bind 0000:03:00.1
expect_rc 1 "bind of an interface with a route"
expect_out "eth8 carries the route '10.9.0.0/16 via 10.1.2.1'" "route"
rm -f "$T/ip/eth8.route"
echo "8: eth8: <BROADCAST,MULTICAST,SLAVE,UP,LOWER_UP> mtu 1500 qdisc mq master bond0 state UP mode DEFAULT group default qlen 1000\    link/ether 02:00:00:00:00:08 brd ff:ff:ff:ff:ff:ff" >"$T/ip/eth8.link"
run_bind bind 0000:03:00.1
expect_rc 1 "bind of a bond member"
expect_out "eth8 is enslaved to bond0" "bond member"
rm -f "$T/ip/eth8.link"

# ---- without a working `ip` nothing is known to be idle: refused --------------------------
log "no ip command"
new_tree noip
fake_pci "$S" 0000:03:00.2 8086 10fb ixgbe 0 eth9 14
LINECAP_IP=$T/no-such-ip run_bind bind 0000:03:00.2
expect_rc 1 "bind without ip"
expect_out "need iproute2" "bind without ip"
assert_file "$S/bus/pci/devices/0000:03:00.2/driver_override" ""

# ---- an idle interface is bound: the files the kernel interface expects ---------------------
log "idle interface: bind"
new_tree idle
fake_pci "$S" 0000:03:00.0 8086 10fb ixgbe 0 eth3 12
# link-local IPv6 only (the kernel adds it to any up interface): still idle
echo "5: eth3    inet6 fe80::2/64 scope link \       valid_lft forever preferred_lft forever" >"$T/ip/eth3.addr"
printf 'fe80::/64 proto kernel metric 256 pref medium\nmulticast ff00::/8 table local proto kernel metric 256 pref medium\n' >"$T/ip/eth3.route6"
run_bind bind 0000:03:00.0
expect_rc 0 "bind of an idle 82599"
assert_file "$S/bus/pci/devices/0000:03:00.0/driver_override" "vfio-pci"
assert_file "$S/bus/pci/drivers/ixgbe/unbind" "0000:03:00.0"
assert_file "$S/bus/pci/drivers/vfio-pci/bind" "0000:03:00.0"
assert_file "$T/run/bind/0000:03:00.0.driver" "ixgbe"
expect_out "Intel 82599 8086:10fb" "bind message"
expect_out "/dev/vfio/12" "bind message"
grep -qx -- "-o addr show dev eth3" "$T/ip/calls" || fail "ip was not asked about eth3's addresses"
grep -qx -- "route show dev eth3" "$T/ip/calls" || fail "ip was not asked about eth3's routes"

# ---- unbind: back to the recorded driver ------------------------------------------------------
log "unbind"
ln -sfn ../../drivers/vfio-pci "$S/bus/pci/devices/0000:03:00.0/driver"   # what the kernel did
rm -rf "$S/bus/pci/devices/0000:03:00.0/net"
: >"$S/bus/pci/drivers/vfio-pci/unbind"
run_bind unbind 0000:03:00.0
expect_rc 0 "unbind"
assert_file "$S/bus/pci/devices/0000:03:00.0/driver_override" ""   # cleared ("\n")
[[ $(od -An -c "$S/bus/pci/devices/0000:03:00.0/driver_override" | tr -d ' ') == '\n' ]] \
    || fail "unbind did not clear driver_override with a newline"
assert_file "$S/bus/pci/drivers/vfio-pci/unbind" "0000:03:00.0"
assert_file "$S/bus/pci/drivers/ixgbe/bind" "0000:03:00.0"
[[ ! -e $T/run/bind/0000:03:00.0.driver ]] || fail "unbind left the record"
expect_out "returned to ixgbe" "unbind message"

# unbind without a record: the driver follows from the id (X710 -> i40e, loaded by modprobe)
new_tree unbind-norecord
fake_pci "$S" 0000:05:00.0 8086 1572 vfio-pci 1 "" 20
run_bind unbind 05:00.0
expect_rc 0 "unbind of an X710 without a record"
assert_file "$S/bus/pci/drivers/i40e/bind" "0000:05:00.0"
grep -qx i40e "$T/modprobe.calls" || fail "i40e was not loaded with modprobe"

# ---- PCI ids ----------------------------------------------------------------------------------
log "PCI ids"
new_tree ids
i=0
for id in 10fb:82599 10fc:82599 1517:82599 151c:82599 154d:82599 1557:82599 10f8:82599 \
    1572:X710 1580:XL710 1581:X710 1583:XL710 1584:XL710 1585:X710 1586:X710 1589:X710 \
    158a:XXV710 158b:XXV710 37d0:X722; do
    i=$((i + 1))
    addr=$(printf '0000:%02x:00.0' "$((0x40 + i))")
    fake_pci "$S" "$addr" 8086 "${id%:*}" "" 0 "" "$((100 + i))"
    run_bind bind "$addr"
    expect_rc 0 "bind of 8086:${id%:*}"
    expect_out "Intel ${id#*:} 8086:${id%:*}" "recognition of 8086:${id%:*}"
    assert_file "$S/bus/pci/devices/$addr/driver_override" "vfio-pci"
    assert_file "$S/bus/pci/drivers/vfio-pci/bind" "$addr"
done
# another NIC: refused without --force, bound with it (and a warning)
fake_pci "$S" 0000:60:00.0 15b3 1017 mlx5_core 0 ens9 60
run_bind bind 0000:60:00.0
expect_rc 1 "bind of a non-Intel NIC"
expect_out "15b3:1017 is not an Intel 82599/X710-family port" "unknown NIC"
expect_out "--force" "unknown NIC"
assert_file "$S/bus/pci/devices/0000:60:00.0/driver_override" ""
run_bind --force bind 0000:60:00.0
expect_rc 0 "bind --force of a non-Intel NIC"
expect_out "warning" "bind --force of a non-Intel NIC"
assert_file "$S/bus/pci/devices/0000:60:00.0/driver_override" "vfio-pci"
assert_file "$S/bus/pci/drivers/mlx5_core/unbind" "0000:60:00.0"

# ---- kernels without driver_override: new_id ----------------------------------------------------
log "new_id fallback"
new_tree newid
fake_pci "$S" 0000:03:00.0 8086 10fb ixgbe 0 "" 12
rm "$S/bus/pci/devices/0000:03:00.0/driver_override"
run_bind bind 0000:03:00.0
expect_rc 0 "bind via new_id"
assert_file "$S/bus/pci/drivers/vfio-pci/new_id" "8086 10fb"
assert_file "$S/bus/pci/drivers/ixgbe/unbind" "0000:03:00.0"
assert_file "$S/bus/pci/drivers/vfio-pci/bind" "0000:03:00.0"

# ---- vfio-pci not loaded yet: modprobe ------------------------------------------------------
log "vfio-pci loaded on demand"
new_tree modprobe
rm -rf "$S/bus/pci/drivers/vfio-pci" "$T/modprobe.calls"
fake_pci "$S" 0000:03:00.0 8086 10fb "" 0 "" 12
run_bind bind 0000:03:00.0
expect_rc 0 "bind with vfio-pci loaded on demand"
grep -qx vfio-pci "$T/modprobe.calls" || fail "vfio-pci was not loaded"
assert_file "$S/bus/pci/drivers/vfio-pci/bind" "0000:03:00.0"
[[ ! -e $T/run/bind/0000:03:00.0.driver ]] || fail "recorded a driver for an unbound device"

# ---- the configured addresses ---------------------------------------------------------------
log "addresses from the configuration"
new_tree config
fake_pci "$S" 0000:03:00.0 8086 10fb ixgbe 0 eth3 12
fake_pci "$S" 0000:03:00.1 8086 10fb ixgbe 0 eth4 13
fake_pci "$S" 0000:81:00.0 8086 1583 i40e 1 eth5 14
cat >"$T/cfg.yaml" <<'EOF'
eal:
  lcores: "0-3"
ports:
  - name: a
    device: "0000:03:00.0"      # the first
  - name: b
    device: 03:00.1
  - {name: c, device: '0000:81:00.0', rx_queues: 2}
  - name: v
    device: "net_pcap0,rx_pcap=/tmp/x.pcap"
# - name: old
#   device: "0000:04:00.0"
output:
  directory: /var/lib/linecap
EOF
run_bind --config "$T/cfg.yaml" bind
expect_rc 0 "bind of the configured addresses"
for a in 0000:03:00.0 0000:03:00.1 0000:81:00.0; do
    assert_file "$S/bus/pci/devices/$a/driver_override" "vfio-pci"
    expect_out "$a" "configured addresses"
done
grep -q "0000:04:00.0" <<<"$OUT" && fail "bound a commented-out address"
run_bind --config "$T/cfg.yaml" status
expect_rc 0 "status"
expect_out "IOMMU: on" "status"
expect_out "Intel XL710 8086:1583" "status"
# a configuration without PCI ports: nothing to do
printf 'ports:\n  - name: v\n    device: net_null0\n' >"$T/vdev.yaml"
run_bind --config "$T/vdev.yaml" bind
expect_rc 0 "bind with only virtual devices"
expect_out "nothing to bind" "only virtual devices"

# ---- usage ----------------------------------------------------------------------------------
run_bind bind not-an-address
expect_rc 2 "a malformed address"
run_bind frobnicate
expect_rc 2 "an unknown command"

log "all linecap-bind checks passed"
