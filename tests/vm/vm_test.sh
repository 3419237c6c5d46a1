#!/usr/bin/env bash
# The appliance as an operator runs it: the Debian package installed into a Debian 12
# guest, booted in QEMU with systemd as PID 1, capturing from an emulated PCI NIC behind an
# emulated IOMMU through vfio-pci. Checks, in order:
#
#   package    `apt-get install ./linecap_*.deb` in the guest (offline: the image holds what
#              the package declared, tests/vm/image.sh), then `systemctl enable --now linecapd`
#   units      linecap-hugepages reserved pages; linecap-bind bound the capture NIC (by PCI
#              address from /etc/linecap/linecap.yaml) to vfio-pci and left the management
#              NIC, which carries this test's ssh, up with its address; linecapd.service is
#              Type=notify and reported ready
#   shield     linecap-shield confined system.slice and user.slice to CPU 0, linecapd's
#              slice kept CPU 1 (its worker CPU) and its workers stay pinned to it across a
#              stop/start of the shield; busy loops started in system.slice and
#              user.slice never run on CPU 1 and cannot be moved there; `linecapd --check`
#              reports the kernel command line (no isolcpus=/nohz_full=) and nothing about
#              the slices
#   capture    frames written by tcpreplay into a multi-queue tap reach the virtio NIC's two
#              rx queues and two worker lcores: exactly the frames sent, in valid files,
#              every flow (both directions) in one queue's files; metrics scraped from the
#              host through a forwarded port
#   stop       `systemctl stop` finalises the files (`linecapd verify`: OK); the summary in
#              the journal counts every frame sent as written, none dropped
#   kill -9    of the main process, with frames written into open files: systemd restarts
#              linecapd, recovery finalises exactly the interrupted files, the new process
#              captures and counts again; the files hold every frame sent so far
#   bad config one error line naming the file, line and key; exit 78; the unit fails
#              without a restart
#   reboot     the units bind, shield and capture again by themselves: the files hold every
#              frame sent, the new ones spread over both queues by flow
#   volume EIO two capture volumes (output.volumes): /var/lib/linecap and ext4 on a second
#              virtio disk behind QEMU's blkdebug driver, whose every write fails with EIO
#              while the test says so (the host's QEMU monitor toggles a blkdebug state):
#              linecapd.service stays active with no restart, capture goes on on the other
#              volume (every frame sent accounted, none lost without a count), the volume
#              failed condition the alerts use holds (linecap_volume_healthy 0); then the
#              disk works again and the volume is re-admitted with new files on it
# After every phase with traffic the guest's capture files (all of /var/lib/linecap, hidden
# files in progress left out) are copied to the host and checked there with
# tests/tools/pcap_compare.py, and `linecapd verify` checks them in the guest: its only
# findings may be what the phases cause (GAP: the daemon not capturing between runs;
# RECOVERED: the files kill -9 interrupted).
#
# Needs root, qemu-system-x86 and qemu-utils, mmdebstrap, dpkg-dev + debhelper (the package
# build), tcpreplay, ssh. Environment: LINECAP_VM_CACHE (image and package cache, default
# /var/cache/linecap-vm), LINECAP_DEB (use this package), LINECAP_VM_EVIDENCE=DIR (copy the
# guest's logs there), LINECAP_VM_NICE (QEMU's niceness, default 10).
TEST_NAME=vm  # for common.sh's log lines and temp dir names
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_root
need_cmd qemu-system-x86_64 qemu-img mmdebstrap mkfs.ext4 debugfs ssh scp tcpreplay dpkg-buildpackage ip flock mergecap
[[ -c /dev/net/tun ]] || skip "no /dev/net/tun for the tap backend"
make_tmpdir
T=$TEST_TMPDIR
VM_DIR=$(dirname "${BASH_SOURCE[0]}")
EVIDENCE=${LINECAP_VM_EVIDENCE:-}
[[ -z $EVIDENCE ]] || mkdir -p "$EVIDENCE"
PHASE_START=$SECONDS
# phase NAME: a log line with the time since the start; the list goes to the evidence.
phase() {
    log "== $* (t=$((SECONDS - PHASE_START))s)"
    printf '%5ds %s\n' $((SECONDS - PHASE_START)) "$*" >>"$T/phases"
}
[[ -z $EVIDENCE ]] || on_exit "cp '$T/phases' '$EVIDENCE/vm-phases.txt' 2>/dev/null"

# ---- the package and the image ------------------------------------------------------------
phase "package"
DEB=$(bash "$VM_DIR/deb.sh") || fail "the package did not build"
phase "image"
IMAGE=$(bash "$VM_DIR/image.sh" "$DEB") || fail "the image did not build"
log "package $DEB, image $IMAGE (built in $(cat "$IMAGE/build-seconds")s)"

# ---- the VM -------------------------------------------------------------------------------
# The capture NIC: virtio-net, 2 queue pairs, QEMU's own RSS (rss=on: the device honours the
# key the driver programs), backed by a multi-queue tap this test creates. The tap has no
# address and IPv6 off, so the only frames on it are the ones tcpreplay writes.
# iommu_platform=on (modern virtio only: disable-legacy=on): the device's DMA goes through
# the emulated IOMMU, as a real NIC's does. Without it QEMU's virtio device takes the
# addresses the driver gives it as guest-physical, but DPDK through vfio-pci gives IOVAs
# (= its virtual addresses): the device reads its rings from the wrong memory, QEMU marks
# it broken ("virtio: ..." in its log) and the PMD waits for ever for the answer to its
# first control-queue command (the multi-queue setup) - the "hang" of the port start.
TAP=lcvm$$
ip tuntap add dev "$TAP" mode tap multi_queue
on_exit "ip link del '$TAP' 2>/dev/null"
_lc_reaper_add "ip link del '$TAP'"
sysctl -qw "net.ipv6.conf.$TAP.disable_ipv6=1"
ip link set "$TAP" up

SSH_PORT=$(free_tcp_port)
METRICS_PORT=$(free_tcp_port)
qemu-img create -q -f qcow2 -F raw -b "$IMAGE/disk.img" "$T/disk.qcow2"
CONSOLE=$T/console.log
show_on_failure "$CONSOLE"
# -machine/-cpu/-device intel-iommu: vfio-pci needs an IOMMU, and intremap needs the split
# irqchip; caching-mode lets the guest's IOMMU driver tell QEMU about every mapping.
# no_timer_check: under TCG on a loaded host the kernel's boot-time check of the IO-APIC
# timer (through interrupt remapping) sees too few ticks and panics ("timer doesn't work
# through Interrupt-remapped IO-APIC"); the check is for broken hardware, not emulation.
# PCI slots are fixed so that the guest's addresses are known: management NIC 00:02.0,
# capture NIC 00:03.0, disk 00:04.0, the second capture volume's disk 00:05.0 (/dev/vdb).
# That disk is a raw file behind QEMU's blkdebug driver (its rules in $T/blkdebug.conf): in
# blkdebug state 1 it passes everything; a write-zeroes request (event pwritev_zero) flips
# it to state 2, where every data write (event pwritev) fails with EIO, and the next one
# flips it back. The test sends those write-zeroes itself, through the QEMU monitor
# ($T/hmp.sock: `qemu-io vol1dbg "write -z ..."`), into the disk's last MiB, which the
# guest's file system leaves unused: the guest sees only the errors. The guest must never
# send a write-zeroes itself (mkfs zeroes its inode tables with one when the disk offers
# it), or the state would flip behind the test's back: the device offers neither
# write-zeroes nor discard. The monitor writes through the blkdebug node itself (qemu-io -d
# finds no block backend on a virtio-blk-pci proxy device), beside the guest's writer:
# share-rw=on allows that second writer.
# blkdebug keeps the inject-error rules that the last event activated until an event
# activates others: without the errno-0 rule of state 1 every write after the flip back
# would still fail. With it, each write in state 1 activates that rule, which passes.
VOL_DISK_MIB=512
qemu-img create -q -f raw "$T/vol1.raw" "${VOL_DISK_MIB}M"
cat >"$T/blkdebug.conf" <<'EOF'
[set-state]
state = "1"
event = "pwritev_zero"
new_state = "2"

[set-state]
state = "2"
event = "pwritev_zero"
new_state = "1"

[inject-error]
state = "2"
event = "pwritev"
iotype = "write"
errno = "5"
once = "off"
immediately = "off"

[inject-error]
state = "1"
event = "pwritev"
iotype = "write"
errno = "0"
EOF
QEMU_ARGS=(
    -name linecap-vm-test -nodefaults -display none -vga none
    -machine q35,kernel-irqchip=split -accel tcg -cpu max -smp 2 -m 2048
    -device intel-iommu,intremap=on,caching-mode=on
    -kernel "$IMAGE/vmlinuz" -initrd "$IMAGE/initrd.img"
    -append "console=ttyS0 root=/dev/vda rw intel_iommu=on iommu=pt net.ifnames=1 systemd.journald.forward_to_console=0 no_timer_check"
    -serial "file:$CONSOLE"
    -drive "file=$T/disk.qcow2,format=qcow2,if=none,id=disk0,cache=unsafe"
    -device virtio-blk-pci,drive=disk0,addr=0x4
    -blockdev "driver=file,filename=$T/vol1.raw,node-name=vol1file,cache.direct=off"
    -blockdev "driver=blkdebug,config=$T/blkdebug.conf,image=vol1file,node-name=vol1dbg"
    -device virtio-blk-pci,drive=vol1dbg,id=vol1,addr=0x5,serial=lcvol1,write-zeroes=off,discard=off,share-rw=on
    -monitor "unix:$T/hmp.sock,server=on,wait=off"
    -netdev "user,id=mgmt,hostfwd=tcp:127.0.0.1:$SSH_PORT-:22,hostfwd=tcp:127.0.0.1:$METRICS_PORT-:9475"
    -device virtio-net-pci,netdev=mgmt,mac=52:54:00:00:00:01,addr=0x2
    -netdev "tap,id=cap0,ifname=$TAP,script=no,downscript=no,queues=2,vhost=off"
    -device virtio-net-pci,netdev=cap0,mac=52:54:00:00:00:02,addr=0x3,mq=on,rss=on,vectors=6,disable-legacy=on,iommu_platform=on
    -pidfile "$T/qemu.pid"
)
QEMU_PID=
# (Also called in the main flow after the guest powered off: QEMU may be gone already, and
# `wait` gives its exit status; neither may end the test under set -e.)
stop_qemu() {
    [[ -n $QEMU_PID ]] || return 0
    kill "$QEMU_PID" 2>/dev/null || true
    wait_for "! kill -0 $QEMU_PID" 20 || kill -9 "$QEMU_PID" 2>/dev/null || true
    wait "$QEMU_PID" 2>/dev/null || true
    QEMU_PID=
}
on_exit stop_qemu
nice -n "${LINECAP_VM_NICE:-10}" qemu-system-x86_64 "${QEMU_ARGS[@]}" </dev/null >"$T/qemu.log" 2>&1 &
QEMU_PID=$!
_lc_reaper_add "kill -9 $QEMU_PID"
show_on_failure "$T/qemu.log"

SSH_OPTS=(-i "$IMAGE/id_ed25519" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
    -o LogLevel=ERROR -o ConnectTimeout=20 -o ServerAliveInterval=10 -o ServerAliveCountMax=6 -o BatchMode=yes
    -o ControlPath="$T/ssh-mux")
# g CMD...: run CMD (a shell command line) as root in the guest.
g() { ssh "${SSH_OPTS[@]}" -p "$SSH_PORT" root@127.0.0.1 "$@"; }
# put FILE... DEST: copy files into the guest.
put() { scp -q "${SSH_OPTS[@]}" -P "$SSH_PORT" "${@:1:$#-1}" "root@127.0.0.1:${!#}"; }
qemu_alive() { [[ -n $QEMU_PID ]] && kill -0 "$QEMU_PID" 2>/dev/null; }
# LINECAP_VM_HOLD=1 (debugging, run by hand): when the test fails, the guest stays up until
# the file named in the log is created; log in with the ssh command printed.
hold_on_failure() {
    [[ ${LINECAP_VM_HOLD:-0} == 1 && $rc != 0 && $rc != 77 ]] && qemu_alive || return 0
    log "holding the guest: ssh ${SSH_OPTS[*]} -p $SSH_PORT root@127.0.0.1; touch $T/release to end"
    while [[ ! -e $T/release ]] && qemu_alive; do sleep 5; done
}
on_exit hold_on_failure
# The evidence directory gets QEMU's log whatever the outcome.
[[ -z $EVIDENCE ]] || on_exit "cp '$T/qemu.log' '$EVIDENCE/qemu.log' 2>/dev/null"

# One ssh connection for all the commands (ControlPath above): a key exchange and a login
# session per command cost the emulated guest seconds each. Started once the guest answers
# (again after the reboot); while it is missing, ssh connects directly.
ssh_master() {
    ssh "${SSH_OPTS[@]}" -o ControlMaster=yes -o ControlPersist=yes -fN -p "$SSH_PORT" root@127.0.0.1 \
        </dev/null >/dev/null 2>&1 || log "no ssh control master (each command connects by itself)"
}
on_exit "ssh -o ControlPath='$T/ssh-mux' -O exit root@127.0.0.1 >/dev/null 2>&1 || true"
# wait_guest TIMEOUT: until ssh answers (fails at once if QEMU exited or the kernel panicked).
wait_guest() {
    wait_for 'qemu_alive || exit 0; grep -q "Kernel panic" "$CONSOLE" && exit 0; g true' "$1" \
        || fail "the guest did not answer ssh within $1s"
    qemu_alive || fail "QEMU exited (see its log)"
    ! grep -q "Kernel panic" "$CONSOLE" || fail "the guest kernel panicked: $(grep -m1 "Kernel panic" "$CONSOLE")"
    ssh_master
}
# guest_save NAME CMD...: the output of CMD in the guest, into $T/NAME (and the evidence dir).
guest_save() {
    local name=$1
    shift
    g "$@" >"$T/$name" 2>&1 || true
    [[ -z $EVIDENCE ]] || cp "$T/$name" "$EVIDENCE/$name"
}

phase "boot"
wait_guest 600
phase "booted"
g 'systemctl is-system-running --wait' >"$T/running" 2>&1 || true
log "system state after boot: $(cat "$T/running")"
MGMT_IF=$(g "basename \$(ls -d /sys/bus/pci/devices/0000:00:02.0/virtio*/net/*)")
CAP_PCI=0000:00:03.0
g "ls /sys/bus/pci/devices/$CAP_PCI/virtio*/net/" >/dev/null || fail "no kernel interface on the capture NIC $CAP_PCI before the bind"

# ---- install ------------------------------------------------------------------------------
phase "install"
put "$DEB" /root/ || fail "cannot copy the package into the guest"
# The package's dependencies the image lacks (image.sh: extra-debs, often none) go in beside
# it: apt installs them with the package, offline.
EXTRA_DEBS=()
for f in "$IMAGE"/extra-debs/*.deb; do [[ -e $f ]] && EXTRA_DEBS+=("$f"); done
g 'rm -rf /root/extra-debs && mkdir /root/extra-debs'
if ((${#EXTRA_DEBS[@]} > 0)); then
    log "with ${#EXTRA_DEBS[@]} dependencies the image lacks: ${EXTRA_DEBS[*]##*/}"
    put "${EXTRA_DEBS[@]}" /root/extra-debs/ || fail "cannot copy the extra dependencies into the guest"
fi
# man-db's trigger (re-indexing every manual page) takes minutes under TCG; its own switch.
g 'rm -f /var/lib/man-db/auto-update'
# (Not --no-download: apt 2.6 then fails on a local .deb, "Pathname to install is not
# absolute". The guest needs no download: the image holds the dependencies.)
g "DEBIAN_FRONTEND=noninteractive apt-get install -y -q /root/$(basename "$DEB") \$(ls /root/extra-debs/*.deb 2>/dev/null)" >"$T/apt.log" 2>&1 \
    || { cat "$T/apt.log" >&2; fail "apt-get install of the package failed in the guest"; }
g 'for f in /usr/sbin/linecapd /usr/bin/linecap; do ldd $f | grep "not found" && exit 1; done; exit 0' \
    || fail "a library linecapd or linecap needs is missing in the guest"
g 'test -f /etc/linecap/linecap.yaml && test -f /usr/share/man/man8/linecapd.8.gz && ls /usr/share/linecap/prometheus/*.yml /usr/share/linecap/grafana/*.json' >/dev/null \
    || fail "the package lacks the example config, the man page or the monitoring files"
g 'linecapd --version' >"$T/version" || fail "linecapd --version failed in the guest"

# The configuration: the capture NIC by PCI address, two rx queues with symmetric RSS on two
# worker lcores. The guest has 2 CPUs: the main lcore on CPU 0 and both workers on CPU 1
# (EAL --lcores placement), so CPU 1 is the worker CPU the shield keeps for linecapd.
cat >"$T/linecap.yaml" <<EOF
# written by tests/vm/vm_test.sh
eal:
  lcores: "0@0,1@1,2@1"
ports:
  - name: cap0
    device: "$CAP_PCI"
    rx_queues: 2
    rx_descriptors: 512
    rss: symmetric
output:
  directory: /var/lib/linecap
  rotate: {size_mb: 64, interval_s: 0}
  block_size_kb: 64
  blocks_per_queue: 8
metrics:
  enabled: true
  listen: "0.0.0.0:9475"
log:
  level: info
EOF
put "$T/linecap.yaml" /etc/linecap/linecap.yaml
# virtio-net is not an 82599/X710-family NIC: linecap-bind binds it only when told to.
g 'echo LINECAP_BIND_OPTS=--force > /etc/default/linecap'
# The one concession to emulation: TCG runs the guest 15-50 times slower than hardware (EAL
# init and the port start take minutes here), so the start timeout of the shipped unit
# (120 s) is raised in a drop-in, as an operator would for a slow machine. Everything else
# (Type=notify, the watchdog, the hardening) is the shipped unit.
g 'mkdir -p /etc/systemd/system/linecapd.service.d &&
   printf "[Service]\nTimeoutStartSec=15min\n" > /etc/systemd/system/linecapd.service.d/tcg.conf &&
   systemctl daemon-reload'

phase "start"
g 'systemctl enable linecapd && timeout 1000 systemctl start linecapd' >"$T/start.log" 2>&1 || {
    g 'systemctl status --no-pager -l linecapd linecap-bind linecap-hugepages; journalctl -b --no-pager -n 80' >&2 || true
    fail "systemctl start linecapd failed"
}
phase "started"
guest_save bind.log 'journalctl -b --no-pager -o short-precise -u linecap-bind -u linecap-hugepages -u linecap-shield'
guest_save systemctl-status.txt 'systemctl status --no-pager -l linecapd'
g "[ \"\$(basename \$(readlink /sys/bus/pci/devices/$CAP_PCI/driver))\" = vfio-pci ]" \
    || fail "the capture NIC $CAP_PCI is not bound to vfio-pci"
g 'systemctl is-active linecap-hugepages linecap-bind linecap-shield' >/dev/null || fail "a linecap unit is not active"
g 'awk "/HugePages_Total/ { exit !(\$2 > 0) }" /proc/meminfo' || fail "no hugepages reserved"
g "ip -o link show dev $MGMT_IF | grep -q 'state UP' && ip -o -4 addr show dev $MGMT_IF | grep -q inet" \
    || fail "the management interface $MGMT_IF is not up with its address"
grep -q "linecap-bind.*$CAP_PCI.*bound to vfio-pci" "$T/bind.log" || fail "the bind log does not show $CAP_PCI bound"
g 'systemctl show -p Type -p WatchdogUSec -p NotifyAccess -p Slice linecapd' >"$T/show"
for want in Type=notify WatchdogUSec=10s NotifyAccess=main Slice=linecap.slice; do
    grep -qx "$want" "$T/show" || fail "linecapd.service: expected $want, got: $(tr '\n' ' ' <"$T/show")"
done

[[ -z $EVIDENCE ]] || cp "$T/show" "$EVIDENCE/systemctl-show.txt"

# ---- CPU shielding ------------------------------------------------------------------------
# The shipped linecap-shield keeps every other slice off the worker CPU: what the
# cgroups allow, what the kernel refuses, where busy work really runs, and the same checks
# failing once the shield is stopped. Everything seen goes to $T/shield.txt (evidence).
phase "shield"
SHIELD=$T/shield.txt
cpus() { g "cat /sys/fs/cgroup/$1/cpuset.cpus.effective"; }
[[ $(cpus system.slice) == 0 ]] || fail "system.slice may use CPUs $(cpus system.slice), expected 0"
[[ $(cpus user.slice) == 0 ]] || fail "user.slice may use CPUs $(cpus user.slice), expected 0"
[[ $(cpus linecap.slice) == 0-1 ]] || fail "linecap.slice may use CPUs $(cpus linecap.slice), expected 0-1"
g 'echo "# linecapd --print-cpus"; linecapd --config /etc/linecap/linecap.yaml --print-cpus;
    echo "# cpuset.cpus.effective of the slices (linecap-shield running)";
    for f in /sys/fs/cgroup/*.slice/cpuset.cpus.effective; do echo "$f: $(cat $f)"; done;
    systemctl show -p Id -p AllowedCPUs -p EffectiveCPUs system.slice user.slice linecap.slice' >"$SHIELD" 2>&1
# busy_loops: starts a busy loop as a service in system.slice and one in user.slice (niced,
# so that the guest's CPU 0 still answers ssh; niceness does not bind them to a CPU) and
# prints their PIDs.
busy_loops() {
    g 'systemd-run --quiet -p Nice=19 --unit=lc-busy-system sh -c "while :; do :; done" &&
       systemd-run --quiet -p Nice=19 --slice=user.slice --unit=lc-busy-user sh -c "while :; do :; done"' \
        || fail "cannot start the busy loops"
    wait_for "g 'systemctl is-active lc-busy-system lc-busy-user'" 60 || fail "the busy loops did not start"
    g 'echo $(systemctl show -p MainPID --value lc-busy-system) $(systemctl show -p MainPID --value lc-busy-user)'
}
allowed() { g "awk '/Cpus_allowed_list/ { print \$2 }' /proc/$1/status"; }
# Each loop may only run on CPU 0, and asking the kernel to move it to CPU 1 is refused.
BUSY=$(busy_loops)
for pid in $BUSY; do
    [[ $(allowed "$pid") == 0 ]] || fail "busy loop $pid may run on CPUs $(allowed "$pid"), expected 0"
    echo "busy loop $pid ($(g "cat /proc/$pid/cgroup")): Cpus_allowed_list $(allowed "$pid")" >>"$SHIELD"
    g "taskset -pc 1 $pid" >>"$SHIELD" 2>&1 && fail "busy loop $pid could be moved to worker CPU 1"
done
# Where they ran: 20 samples of each loop's last CPU (field 39 of /proc/PID/stat).
g "for i in \$(seq 20); do for p in $BUSY; do awk '{ print \$39 }' /proc/\$p/stat; done; sleep 0.2; done" >"$T/psr"
{ echo "# CPU of the busy loops, 40 samples (count cpu)"; sort "$T/psr" | uniq -c; } >>"$SHIELD"
[[ $(sort -u "$T/psr") == 0 ]] || fail "a busy loop ran on worker CPU 1: $(sort "$T/psr" | uniq -c | tr '\n' ' ')"
# linecapd's worker threads run on CPU 1, and the busy loops do not take it from them.
g "ps -L -o psr=,comm= -p \$(systemctl show -p MainPID --value linecapd)" >"$T/threads"
{ echo "# linecapd's threads (psr comm)"; cat "$T/threads"; } >>"$SHIELD"
grep -qE '^ *1 (rte|lcore)-worker' "$T/threads" || fail "no linecapd worker thread on CPU 1: $(tr '\n' ';' <"$T/threads")"
# worker_affinity: each worker thread's allowed CPUs (EAL names them rte-worker-N).
worker_affinity() {
    g 'M=$(systemctl show -p MainPID --value linecapd); for t in /proc/$M/task/*; do
         case $(cat $t/comm) in rte-worker*|lcore-worker*) awk "/Cpus_allowed_list/ { print \$2 }" $t/status ;; esac; done' | sort -u
}
[[ $(worker_affinity) == 1 ]] || fail "the worker threads are not pinned to CPU 1: $(worker_affinity | tr '\n' ' ')"
# (Its verdict is not the point: beside the running daemon it finds the hugepages taken.)
g 'linecapd --config /etc/linecap/linecap.yaml --check' >"$T/check.log" 2>&1 || true
grep -q "isolcpus= lacks worker CPU 1" "$T/check.log" || fail "--check does not report the missing isolcpus="
grep -q "slice may run on worker" "$T/check.log" && fail "--check says a slice is not shielded"
g 'linecap-shield status' >"$T/shield-status" 2>&1
{ echo "# linecapd --check (shielded): its lines on CPUs and slices"; grep -Ei "cpu|slice|isolcpus|nohz" "$T/check.log";
  echo "# linecap-shield status"; cat "$T/shield-status"; } >>"$SHIELD"
g 'systemctl stop lc-busy-system lc-busy-user'
# Without the shield the same checks see the worker CPU reachable: the slice's cpuset, a new
# busy loop's allowed CPUs, and --check.
g 'systemctl stop linecap-shield' || fail "cannot stop linecap-shield"
[[ $(cpus system.slice) == 0-1 ]] || fail "after linecap-shield stop, system.slice has CPUs $(cpus system.slice)"
echo "# linecap-shield stopped: system.slice cpuset.cpus.effective $(cpus system.slice)" >>"$SHIELD"
BUSY=$(busy_loops)
for pid in $BUSY; do
    [[ $(allowed "$pid") == 0-1 ]] || fail "unshielded, busy loop $pid may run on CPUs $(allowed "$pid"), expected 0-1"
    echo "busy loop $pid: Cpus_allowed_list $(allowed "$pid")" >>"$SHIELD"
done
g 'systemctl stop lc-busy-system lc-busy-user'
g 'linecapd --config /etc/linecap/linecap.yaml --check' >"$T/check-unshielded.log" 2>&1 || true
grep -q "system.slice may run on worker CPU 1" "$T/check-unshielded.log" || fail "--check does not report the unshielded system.slice"
{ echo "# linecapd --check (unshielded)"; grep -E "slice may run on worker" "$T/check-unshielded.log"; } >>"$SHIELD"
g 'systemctl start linecap-shield'
[[ $(cpus system.slice) == 0 ]] || fail "linecap-shield start did not confine system.slice again"
# Stopping and starting the shield under a running linecapd leaves the workers pinned (the
# cpuset controller stays on for linecap.slice: turning it off or on resets their affinity).
[[ $(worker_affinity) == 1 ]] || fail "after linecap-shield stop/start the workers may run on CPUs $(worker_affinity | tr '\n' ' ')"
echo "# linecap-shield started again: system.slice $(cpus system.slice); worker threads allowed on CPU $(worker_affinity)" >>"$SHIELD"
[[ -z $EVIDENCE ]] || { cp "$SHIELD" "$EVIDENCE/shield.txt"; cp "$T/check.log" "$EVIDENCE/check-in-guest.log"; }

# ---- capture ------------------------------------------------------------------------------
METRICS_URL=http://127.0.0.1:$METRICS_PORT/metrics
wait_for "http_get $METRICS_URL 5" 120 || fail "metrics not reachable from the host through the forwarded port"
# inject N PPS SEED: tcpreplay N frames (64 flows, both directions of each) into the tap;
# waits until linecapd wrote them all (written: in the file, not only received), or fails.
# The frames sent so far accumulate in $T/sent-all.pcap.
inject() {
    local n=$1 pps=$2 seed=$3 before
    gen_pcap --count "$n" --flows 64 --both-directions --seed "$seed" --dst-mac 52:54:00:00:00:02 --out "$T/sent-$seed.pcap"
    if [[ -e $T/sent-all.pcap ]]; then
        mergecap -a -F pcap -w "$T/sent-all.new" "$T/sent-all.pcap" "$T/sent-$seed.pcap" && mv "$T/sent-all.new" "$T/sent-all.pcap"
    else
        cp "$T/sent-$seed.pcap" "$T/sent-all.pcap"
    fi
    before=$(metric_sum "$METRICS_URL" linecap_written_packets_total)
    tcpreplay -q -i "$TAP" --pps="$pps" "$T/sent-$seed.pcap" >"$T/tcpreplay.log" 2>&1 || fail "tcpreplay failed: $(cat "$T/tcpreplay.log")"
    wait_for "(( \$(metric_sum $METRICS_URL linecap_written_packets_total) >= $before + $n ))" 120 \
        || fail "linecapd wrote $(( $(metric_sum "$METRICS_URL" linecap_written_packets_total) - before )) of the $n frames sent (received: $(metric_sum "$METRICS_URL" linecap_rx_packets_total))"
}
# collect NAME: the guest's capture directory, every file below it except hidden ones (files
# in progress, temporaries), into $T/NAME; the capture files' paths in $T/NAME.list.
collect() {
    mkdir "$T/$1"
    g 'cd /var/lib/linecap && find . -type f ! -name ".*" -print0 | tar --null -T - -cf -' | tar -C "$T/$1" -xf - \
        || fail "cannot copy the capture files from the guest"
    find "$T/$1" -type f \( -name '*.pcap' -o -name '*.pcapng' \) | sort >"$T/$1.list"
    [[ -s $T/$1.list ]] || fail "no capture file in the guest's /var/lib/linecap: $(g 'ls -laR /var/lib/linecap' | tr '\n' ' ')"
    log "$1: $(wc -l <"$T/$1.list") capture files"
}
# check_files NAME: the files of `collect NAME` are valid and hold exactly the frames sent
# so far; verify in the guest finds nothing but GAP (between runs) and RECOVERED lines.
check_files() {
    local -a files
    mapfile -t files <"$T/$1.list"
    pcap_compare validate "${files[@]}" >"$T/$1.validate" || { cat "$T/$1.validate" >&2; fail "$1: the captured files are not valid"; }
    pcap_compare multiset "$T/sent-all.pcap" "${files[@]}" >"$T/$1.multiset" \
        || { cat "$T/$1.multiset" >&2; fail "$1: the files do not hold exactly the frames sent"; }
    cat "$T/$1.multiset" >&2
    local rc=0
    g 'linecapd verify /var/lib/linecap' >"$T/$1.verify" 2>&1 || rc=$?
    local others
    others=$(grep -Ev '^(verify |PENDING |note: |ok |RECOVERED |GAP [^ ]+: the daemon was not capturing between )' "$T/$1.verify" || true)
    { ((rc == 0 || rc == 1)) && [[ -z $others ]]; } || { cat "$T/$1.verify" >&2; fail "$1: linecapd verify exited $rc: $others"; }
    grep -q "^verify /var/lib/linecap: ${#files[@]} capture files" "$T/$1.verify" \
        || fail "$1: verify did not check the ${#files[@]} files copied: $(tail -1 "$T/$1.verify")"
}
# summary_of JOURNAL N: the last capture summary in JOURNAL says N reached, N written, no drop.
summary_of() {
    local line
    line=$(grep -E "port cap0: [0-9]+ packets reached the port" "$1" | tail -1)
    [[ -n $line ]] || fail "no capture summary in the journal"
    log "summary: ${line#*info }"
    [[ $line =~ port\ cap0:\ $2\ packets\ reached\ the\ port,\ $2\ written, ]] || fail "expected $2 frames reached and written: $line"
    [[ ! ${line#*dropped:} =~ =[1-9] ]] || fail "the summary counts drops: $line"
}
phase "capture"
inject 2000 400 1
http_get "$METRICS_URL" >"$T/metrics.txt"
[[ -z $EVIDENCE ]] || cp "$T/metrics.txt" "$EVIDENCE/metrics-scrape.txt"
# The port is the PCI device, driven by the virtio PMD through vfio-pci.
grep -qE "^linecap_port_info\{[^}]*device=\"$CAP_PCI\"[^}]*driver=\"net_virtio\"" "$T/metrics.txt" \
    || fail "linecap_port_info does not show $CAP_PCI driven by net_virtio: $(grep port_info "$T/metrics.txt")"
for q in 0 1; do
    n=$(metric_sum "$METRICS_URL" linecap_rx_packets_total queue=$q)
    log "queue $q: $n packets"
    ((n > 0)) || fail "rx queue $q received nothing: RSS did not spread the flows"
done
[[ $(metric_sum "$METRICS_URL" linecap_dropped_packets_total) == 0 ]] || fail "linecapd dropped packets: $(grep dropped "$T/metrics.txt")"
[[ -z $EVIDENCE ]] || grep -E '^linecap_(port_info|rx_packets_total|written_packets_total|dropped_packets_total)' \
    "$T/metrics.txt" >"$EVIDENCE/rss-queues.txt"

phase "stop"
g 'systemctl stop linecapd' || fail "systemctl stop linecapd failed"
g 'journalctl -b --no-pager -o cat -u linecapd' >"$T/journal-stop"
summary_of "$T/journal-stop" 2000
[[ -z $EVIDENCE ]] || { g 'journalctl -b --no-pager -o short-precise -u linecapd' | tail -25 >"$EVIDENCE/journal-shutdown.txt"; }
collect files1
check_files files1
grep -q ": OK$" "$T/files1.verify" || { cat "$T/files1.verify" >&2; fail "verify after the first stop has findings"; }
# Symmetric RSS: each flow, both directions, in one queue's files; both queues hold flows.
mapfile -t FILES1 <"$T/files1.list"
pcap_compare flows "${FILES1[@]}" --min-groups 2 >"$T/flows" || { cat "$T/flows" >&2; fail "a flow was split over queues, or only one queue captured"; }
cat "$T/flows" >&2
[[ -z $EVIDENCE ]] || { echo "pcap_compare flows (queue files per flow):"; cat "$T/flows"; grep -E "RSS|rss|symmetric|queue" "$T/journal-stop" || true;
    echo "files:"; cat "$T/files1.validate"; cat "$T/files1.multiset"; echo "in the guest:"; cat "$T/files1.verify"; } >>"$EVIDENCE/rss-queues.txt"

# ---- kill -9 ------------------------------------------------------------------------------
phase "kill -9"
g 'systemctl start linecapd' || fail "restart after stop failed"
wait_for "http_get $METRICS_URL 5" 120 || fail "metrics not back after the restart"
# Frames written into the open files (in progress: hidden .part names), then SIGKILL.
inject 500 400 2
g 'ls -a /var/lib/linecap | grep "^\..*\.part$"' >"$T/in-progress" || true
[[ -s $T/in-progress ]] || fail "no file in progress before the kill: $(g 'ls -a /var/lib/linecap' | tr '\n' ' ')"
RESTARTS=$(g 'systemctl show -p NRestarts --value linecapd')
OLD_PID=$(g 'systemctl show -p MainPID --value linecapd')
g 'systemctl kill --kill-whom=main --signal=SIGKILL linecapd'
wait_for "[[ \$(g 'systemctl show -p NRestarts --value linecapd') -gt $RESTARTS ]] && g 'systemctl is-active linecapd'" 900 \
    || fail "systemd did not restart linecapd after kill -9"
NEW_PID=$(g 'systemctl show -p MainPID --value linecapd')
[[ $NEW_PID != "$OLD_PID" ]] || fail "same main PID after the restart"
g "journalctl -b --no-pager -o cat _PID=$NEW_PID" >"$T/journal-recovery"
# Exactly the interrupted files recovered (one per queue that had traffic).
grep -oE " recovered /var/lib/linecap/[^:]+" "$T/journal-recovery" | sed 's|.*/||' | sort >"$T/recovered"
sed 's/^\.//; s/\.part$//' "$T/in-progress" | sort >"$T/interrupted"
[[ -s $T/recovered ]] || fail "the restarted linecapd did not recover the interrupted files"
cmp -s "$T/recovered" "$T/interrupted" \
    || fail "recovered $(tr '\n' ' ' <"$T/recovered"), but the interrupted files were $(tr '\n' ' ' <"$T/interrupted")"
# The new process captures and counts from zero again.
wait_for "http_get $METRICS_URL 5" 120 || fail "metrics not back after the kill -9 restart"
inject 300 300 4
http_get "$METRICS_URL" >"$T/metrics-restarted.txt"
[[ $(metric_sum "$METRICS_URL" linecap_written_packets_total) == 300 ]] \
    || fail "the restarted linecapd counts $(metric_sum "$METRICS_URL" linecap_written_packets_total) written frames, expected the 300 sent since"
[[ $(metric_sum "$METRICS_URL" linecap_dropped_packets_total) == 0 ]] || fail "the restarted linecapd counts drops"
g 'systemctl stop linecapd' || fail "systemctl stop linecapd failed after the restart"
g "journalctl -b --no-pager -o cat _PID=$NEW_PID" >"$T/journal-recovery"
summary_of "$T/journal-recovery" 300
collect files2
check_files files2
grep -q "^RECOVERED " "$T/files2.verify" || fail "verify does not list the recovered files"
[[ -z $EVIDENCE ]] || { echo "kill -9 of main PID $OLD_PID with $(wc -l <"$T/in-progress") files in progress: $(tr '\n' ' ' <"$T/in-progress")";
    echo "NRestarts $RESTARTS -> $(g 'systemctl show -p NRestarts --value linecapd'), new main PID $NEW_PID";
    g "journalctl -b --no-pager -o short-precise -u linecapd | grep -E 'SIGKILL|Main process exited|Failed with|Scheduled restart|Started|Starting' | tail -6";
    echo "--- the new process's journal:"; grep -E "recover|starting|ready|reached the port" "$T/journal-recovery";
    echo "--- metrics of the new process after 300 more frames:";
    grep -E '^linecap_(rx_packets_total|written_packets_total|dropped_packets_total)' "$T/metrics-restarted.txt";
    echo "--- every file on the host:"; cat "$T/files2.multiset"; grep -c OK "$T/files2.validate" | sed 's/$/ files valid/';
    echo "--- linecapd verify in the guest:"; cat "$T/files2.verify"; } >"$EVIDENCE/kill9.txt" 2>&1

# ---- bad configuration --------------------------------------------------------------------
phase "bad config"
CURSOR=$(g 'journalctl -n 1 --show-cursor -o cat' | sed -n 's/^-- cursor: //p')
[[ -n $CURSOR ]] || fail 'no journal cursor'
g 'cp /etc/linecap/linecap.yaml /root/good.yaml && sed -i "s/^  rotate:/  rotat:/" /etc/linecap/linecap.yaml'
g 'systemctl start linecapd' 2>/dev/null && fail "linecapd started with a bad configuration"
g 'systemctl show -p ExecMainStatus -p ActiveState -p SubState -p Result -p NRestarts linecapd' >"$T/bad"
grep -qx ExecMainStatus=78 "$T/bad" || fail "bad configuration: expected exit status 78: $(tr '\n' ' ' <"$T/bad")"
# Restart=on-failure would show SubState=auto-restart now; RestartPreventExitStatus=78 fails it.
grep -qx SubState=failed "$T/bad" || fail "bad configuration: the unit is not failed for good: $(tr '\n' ' ' <"$T/bad")"
g "journalctl --no-pager -o cat -u linecapd --after-cursor='$CURSOR'" >"$T/bad-journal"
grep -q "Scheduled restart job" "$T/bad-journal" && fail "bad configuration: systemd restarts linecapd: $(grep "Scheduled restart" "$T/bad-journal")"
grep -qE "/etc/linecap/linecap.yaml:[0-9]+: output: unknown key 'rotat' \(did you mean 'rotate'\?\)" "$T/bad-journal" \
    || { cat "$T/bad-journal" >&2; fail "the journal does not name the file, line and bad key"; }
[[ -z $EVIDENCE ]] || { cat "$T/bad"; echo "--- journal of the start:"; grep -vE '^\s*$' "$T/bad-journal"; } >"$EVIDENCE/bad-config.txt"
g 'cp /root/good.yaml /etc/linecap/linecap.yaml && systemctl reset-failed linecapd'

# ---- reboot -------------------------------------------------------------------------------
phase "reboot"
BOOT_ID=$(g 'cat /proc/sys/kernel/random/boot_id')
g 'systemd-run --quiet --on-active=1 systemctl reboot' || fail "cannot schedule the reboot"
wait_for "qemu_alive || exit 0; id=\$(g 'cat /proc/sys/kernel/random/boot_id') && [[ \$id != $BOOT_ID ]]" 600 \
    || fail "the guest did not come back from the reboot"
qemu_alive || fail "QEMU exited during the reboot"
ssh_master
phase "rebooted"
wait_for "g 'systemctl is-active linecapd'" 900 || fail "linecapd is not active after the reboot"
phase "capturing after the reboot"
g "[ \"\$(basename \$(readlink /sys/bus/pci/devices/$CAP_PCI/driver))\" = vfio-pci ]" \
    || fail "after the reboot the capture NIC $CAP_PCI is not bound to vfio-pci"
[[ $(cpus system.slice) == 0 ]] || fail "after the reboot system.slice is not shielded"
# The package's /usr/lib/sysctl.d/60-linecap.conf, applied at boot: no autogroups, so the
# hasher's and indexer's idle priority holds machine-wide.
[[ $(g 'cat /proc/sys/kernel/sched_autogroup_enabled') == 0 ]] \
    || fail "after the reboot kernel.sched_autogroup_enabled is not 0 (60-linecap.conf not applied)"
wait_for "http_get $METRICS_URL 5" 120 || fail "metrics not back after the reboot"
inject 300 300 3
for q in 0 1; do
    (($(metric_sum "$METRICS_URL" linecap_rx_packets_total queue=$q) > 0)) || fail "after the reboot rx queue $q received nothing"
done
http_get "$METRICS_URL" >"$T/metrics-rebooted.txt"
g 'systemctl stop linecapd' || fail "systemctl stop linecapd failed after the reboot"
g 'journalctl -b --no-pager -o cat -u linecapd' >"$T/journal-rebooted"
summary_of "$T/journal-rebooted" 300
collect files3
check_files files3
# The new files (this boot's) hold each flow in one queue's files too.
mapfile -t NEW_FILES < <(comm -13 <(sed 's|.*/||' "$T/files2.list" | sort) <(sed 's|.*/||' "$T/files3.list" | sort) | sed "s|^|$T/files3/|")
pcap_compare flows "${NEW_FILES[@]}" --min-groups 2 >"$T/flows3" || { cat "$T/flows3" >&2; fail "after the reboot a flow was split over queues"; }
phase "reboot ok"
[[ -z $EVIDENCE ]] || { echo "boot id before: $BOOT_ID, after: $(g 'cat /proc/sys/kernel/random/boot_id')";
    g 'systemctl status --no-pager -l linecapd | head -12; echo "system.slice cpus: $(cat /sys/fs/cgroup/system.slice/cpuset.cpus.effective)";
       echo "capture NIC driver: $(basename $(readlink /sys/bus/pci/devices/'"$CAP_PCI"'/driver))"';
    echo "after the reboot, 300 more frames injected; by queue:";
    grep -E '^linecap_(rx_packets_total|written_packets_total|dropped_packets_total)' "$T/metrics-rebooted.txt";
    echo "--- its summary at the stop:"; grep -E "port cap0: [0-9]+ packets reached" "$T/journal-rebooted";
    echo "--- this boot's files, flows per queue:"; cat "$T/flows3";
    echo "--- every file of the run on the host:"; cat "$T/files3.multiset";
    echo "--- linecapd verify in the guest:"; cat "$T/files3.verify"; } >"$EVIDENCE/reboot.txt" 2>&1

# ---- a capture volume failing under systemd (QEMU blkdebug) --------------------------------
phase "volume EIO"
# hmp CMD: one command to the QEMU monitor; its answer on stdout.
hmp() {
    python3 - "$T/hmp.sock" "$1" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(30)
def until_prompt():
    data = b""
    while not data.endswith(b"(qemu) "):
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace")
until_prompt()
s.sendall(sys.argv[2].encode() + b"\n")
print(until_prompt().replace("(qemu) ", "").strip())
PY
}
# disk_eio on|off: flip blkdebug's state with a 4 KiB write-zeroes into the disk's last MiB.
DISK_EIO=off
disk_eio() {
    [[ $1 != "$DISK_EIO" ]] || return 0
    # qemu-io prints its result on QEMU's stdout (qemu.log), errors on the monitor.
    local done_before
    done_before=$(grep -c "wrote 4096/4096 bytes" "$T/qemu.log" || true)
    hmp "qemu-io vol1dbg \"write -z $(((VOL_DISK_MIB - 1) << 20)) 4096\"" >"$T/hmp.out" 2>&1 \
        || fail "QEMU monitor: $(cat "$T/hmp.out")"
    ! grep -qiE "error|not found|conflicts" "$T/hmp.out" || fail "qemu-io write -z on vol1dbg: $(grep -iE "error|not found|conflicts" "$T/hmp.out")"
    wait_for "(( \$(grep -c 'wrote 4096/4096 bytes' '$T/qemu.log') > $done_before ))" 30 \
        || fail "qemu-io write -z on vol1dbg: no 'wrote 4096/4096 bytes' in QEMU's log"
    DISK_EIO=$1
    log "vol1: blkdebug EIO $1"
}
VOL1=/srv/vol1
# ext2 with errors=continue and O_DIRECT writes: each failed write is an EIO to the writer
# at once (not a page-cache write that fails later), and the file system takes writes again
# as soon as the disk does, with no journal aborted (ext4 would go read-only: that case is
# storage-volume-remount-ro on the host). The service may write there (a drop-in, as
# linecapd.service says for any output directory outside /var/lib/linecap).
g "mkfs.ext2 -q -F /dev/vdb $(((VOL_DISK_MIB - 8) << 10)) && mkdir -p $VOL1 &&
   mount -t ext2 -o errors=continue /dev/vdb $VOL1 && mkdir $VOL1/capture &&
   printf '[Service]\nReadWritePaths=$VOL1\n' > /etc/systemd/system/linecapd.service.d/volumes.conf &&
   systemctl daemon-reload" || fail "cannot make the volume on /dev/vdb"
# The write path passes in state 1: a direct write and sync on the volume.
g "dd if=/dev/zero of=$VOL1/probe bs=64k count=4 oflag=direct conv=fsync 2>&1 && rm $VOL1/probe" >/dev/null \
    || fail "the volume on /dev/vdb does not take writes before the fault"
# The configuration of the first phases, with the two volumes instead of output.directory.
python3 - "$T/linecap.yaml" "$T/volumes.yaml" "$VOL1/capture" <<'PY' || fail "cannot write the two-volume configuration"
import sys
text = open(sys.argv[1]).read()
one = "  directory: /var/lib/linecap\n"
assert one in text
text = text.replace(one, "  volumes:\n    - { directory: /var/lib/linecap }\n    - { directory: %s }\n"
                    "  volume_stall_timeout_ms: 10000\n  volume_probe_interval_s: 2\n  o_direct: true\n" % sys.argv[3])
open(sys.argv[2], "w").write(text)
PY
put "$T/volumes.yaml" /etc/linecap/linecap.yaml
g 'systemctl start linecapd' || fail "linecapd did not start with two volumes"
wait_for "http_get $METRICS_URL 5" 300 || fail "metrics not back with two volumes"
http_get "$METRICS_URL" >"$T/metrics-volumes.txt"
grep -q "^linecap_volume_healthy{.*volume=\"$VOL1/capture\"" "$T/metrics-volumes.txt" \
    || fail "linecapd does not report the volume $VOL1/capture (linecap_volume_healthy)"
RESTARTS=$(g 'systemctl show -p NRestarts --value linecapd')
MAIN_PID=$(g 'systemctl show -p MainPID --value linecapd')
vol_metric() { metric_sum "$METRICS_URL" "$1" volume="$2"; }
inject 1000 300 5
(($(vol_metric linecap_volume_written_packets_total "$VOL1/capture") > 0)) \
    || fail "nothing was written on $VOL1 before the fault (one of two streams should be there)"
# The file system's metadata so far on the disk first: the writeback of a dirty inode or
# bitmap failing later would lose it (ext2 drops a buffer whose write failed), and the
# files finished before the fault would no longer be whole after it.
g sync || fail "sync in the guest failed before the fault"
disk_eio on
# inject waits until written grows by what was sent: capture goes on on /var/lib/linecap
# (what the failing volume lost on the way is counted, reason write_error).
before_written=$(metric_sum "$METRICS_URL" linecap_written_packets_total)
before_dropped=$(metric_sum "$METRICS_URL" linecap_dropped_packets_total)
gen_pcap --count 2000 --flows 64 --both-directions --seed 6 --dst-mac 52:54:00:00:00:02 --out "$T/sent-6.pcap"
tcpreplay -q -i "$TAP" --pps=300 "$T/sent-6.pcap" >"$T/tcpreplay.log" 2>&1 || fail "tcpreplay failed: $(cat "$T/tcpreplay.log")"
wait_for "(( \$(vol_metric linecap_volume_healthy '$VOL1/capture') == 0 ))" 300 \
    || fail "the volume on the failing disk was not marked failed"
wait_for "(( \$(metric_sum $METRICS_URL linecap_written_packets_total) + \$(metric_sum $METRICS_URL linecap_dropped_packets_total) >= $before_written + $before_dropped + 2000 ))" 300 \
    || fail "the frames sent while the disk failed are not all accounted for"
lost=$(($(metric_sum "$METRICS_URL" linecap_dropped_packets_total) - before_dropped))
written=$(($(metric_sum "$METRICS_URL" linecap_written_packets_total) - before_written))
((written >= 1000)) || fail "capture did not go on on the other volume: $written of 2000 written"
(($(metric_sum "$METRICS_URL" linecap_dropped_packets_total reason=write_error) == lost)) \
    || fail "drops during the fault other than write_error: $(grep dropped_packets "$T/metrics-volumes.txt")"
g 'systemctl is-active linecapd' >/dev/null || fail "linecapd.service is not active with a failed volume"
[[ $(g 'systemctl show -p NRestarts --value linecapd') == "$RESTARTS" && $(g 'systemctl show -p MainPID --value linecapd') == "$MAIN_PID" ]] \
    || fail "linecapd was restarted because of the failed volume"
http_get "$METRICS_URL" >"$T/metrics-degraded.txt"
# The condition of the volume-failed / degraded alerts (config/prometheus/linecap-rules.yml).
grep -qE "^linecap_volume_healthy\{[^}]*volume=\"$VOL1/capture\"[^}]*\} 0$" "$T/metrics-degraded.txt" \
    || fail "linecap_volume_healthy of $VOL1/capture is not 0 while its disk fails"
[[ $(metric_sum "$METRICS_URL" linecap_volumes_healthy) == 1 && $(metric_sum "$METRICS_URL" linecap_volumes) == 2 ]] \
    || fail "not degraded while the disk fails (LinecapVolumesDegraded): $(grep -E '^linecap_volumes' "$T/metrics-degraded.txt" | tr '\n' ' ')"
log "disk failing: $written frames written on the other volume, $lost lost as write_error, unit active, no restart"
# The disk works again: the daemon's probe finds it so and re-admits the volume.
disk_eio off
wait_for "(( \$(vol_metric linecap_volume_healthy '$VOL1/capture') == 1 ))" 300 || fail "the repaired volume was not re-admitted"
wait_for "(( \$(vol_metric linecap_volume_streams '$VOL1/capture') >= 1 ))" 60 \
    || fail "no stream placed on the re-admitted volume $VOL1/capture"
files_before=$(g "ls $VOL1/capture | grep -c '\\.pcap\$'" || true)
# A stream goes back at its next file (rotate.interval_s is 0 here and its file far from
# size_mb): the reload finishes the current files now, as an operator would.
g 'systemctl reload linecapd' || fail "systemctl reload linecapd failed"
vol1_written=$(vol_metric linecap_volume_written_packets_total "$VOL1/capture")
inject 1000 300 7
(($(vol_metric linecap_volume_written_packets_total "$VOL1/capture") > vol1_written)) \
    || fail "nothing written on the re-admitted volume $VOL1/capture after the reload"
g 'systemctl stop linecapd' || fail "systemctl stop linecapd failed with two volumes"
# The summary at the stop: the 4000 frames of this run reached the port, and each is written
# or counted as a write_error drop, no other reason.
g "journalctl -b --no-pager -o cat _PID=$MAIN_PID" >"$T/journal-volumes"
VOL_SUMMARY=$(grep -E "port cap0: [0-9]+ packets reached the port" "$T/journal-volumes" | tail -1)
log "summary: ${VOL_SUMMARY#*info }"
[[ $VOL_SUMMARY =~ port\ cap0:\ 4000\ packets\ reached\ the\ port,\ ([0-9]+)\ written,\ 0\ filtered,\ dropped:(.*)$ ]] \
    || fail "expected 4000 frames reached in the summary: $VOL_SUMMARY"
vol_written=${BASH_REMATCH[1]}
vol_drops=${BASH_REMATCH[2]}
vol_eio=$(grep -oE 'write_error=[0-9]+' <<<"$vol_drops" | cut -d= -f2 || true)
((vol_written + ${vol_eio:-0} == 4000)) || fail "the summary does not account for 4000 frames: $VOL_SUMMARY"
[[ ! $(sed 's/ write_error=[0-9]*//' <<<"$vol_drops") =~ =[1-9] ]] || fail "the summary counts drops other than write_error: $VOL_SUMMARY"
files_after=$(g "ls $VOL1/capture | grep -c '\\.pcap\$'" || true)
((files_after > files_before)) || fail "no new file on $VOL1 after its re-admission ($files_before before, $files_after after)"
# Both volumes together: a stream's file sequence goes on across them (it moved to
# /var/lib/linecap during the fault and back after), so either alone shows gaps.
g "ls -a $VOL1/capture" >"$T/vol1.ls" 2>&1 || true
g "linecapd verify /var/lib/linecap $VOL1/capture" >"$T/vol1.verify" 2>&1 || true
! grep -Ev '^(verify |PENDING |note: |ok |RECOVERED |LOSS |GAP [^ ]+: the daemon was not capturing between )' "$T/vol1.verify" | grep -q . \
    || { cat "$T/vol1.verify" "$T/vol1.ls" >&2; fail "verify of both volumes has findings"; }
[[ $(g 'systemctl show -p NRestarts --value linecapd') == "$RESTARTS" ]] || fail "linecapd restarted during the volume phase"
[[ -z $EVIDENCE ]] || { grep -E '^linecap_(volume|dropped_packets_total|written_packets_total)' "$T/metrics-degraded.txt";
    echo "--- the summary at the stop:"; echo "$VOL_SUMMARY";
    echo "--- verify /var/lib/linecap $VOL1/capture:"; cat "$T/vol1.verify"; echo "--- ls -a $VOL1/capture:"; cat "$T/vol1.ls";
    g 'journalctl -b --no-pager -o short-precise -u linecapd | grep -iE "volume|write_error|EIO|re-admit" | tail -20'; } >"$EVIDENCE/volume-eio.txt" 2>&1
g "cp /root/good.yaml /etc/linecap/linecap.yaml && rm /etc/systemd/system/linecapd.service.d/volumes.conf && systemctl daemon-reload"
phase "volume EIO ok"

g 'systemd-run --quiet --on-active=1 systemctl poweroff' || true
wait_for '! qemu_alive' 180 || log "the guest did not power off in time; QEMU is killed"
stop_qemu
phase "done"
log "PASS"
