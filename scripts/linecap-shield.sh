#!/bin/bash
# linecap-shield: keep every other systemd slice off linecapd's worker CPUs.
#
# Usage: linecap-shield [--config FILE] apply|reset|status
#
#   apply   confine system.slice, user.slice and machine.slice (every service, login
#           session, VM and container) to the CPUs the worker lcores do not use, with
#           `systemctl set-property --runtime SLICE AllowedCPUs=...` (cgroup v2 cpuset; the
#           drop-ins live in /run/systemd/system.control, so a reboot or `reset` undoes them).
#           linecapd.service runs in linecap.slice, which keeps every CPU (set explicitly,
#           so that its cpuset controller never turns off or on under linecapd: that would
#           reset the workers' pinning): the workers pin themselves to theirs. The CPU sets
#           come from `linecapd --print-cpus`.
#   reset   remove that confinement (AllowedCPUs= every online CPU again).
#   status  the worker CPUs, and each slice's cpuset.cpus.effective.
#
#   --config FILE  linecapd's configuration (default /etc/linecap/linecap.yaml, or $LINECAP_CONFIG)
#
# The kernel's own work (timer ticks, RCU callbacks, interrupts, unbound kworkers) is not in
# any slice: keeping it off the worker CPUs needs the kernel command line (isolcpus=,
# nohz_full=, rcu_nocbs=, irqaffinity=; doc/tuning.md, "CPU shielding"). `linecapd --check` warns
# about what is still not shielded. Run at boot by linecap-shield.service (pulled in by
# linecapd.service); installed to sbindir.
#
# Environment: LINECAPD (the linecapd program, default: linecapd from PATH), LINECAP_CONFIG,
# SYSTEMCTL (the systemctl command), LINECAP_CGROUP (cgroup v2 root, default /sys/fs/cgroup).
# Exit status: 0 ok, 1 failed, 2 usage.
set -euo pipefail

CONFIG=${LINECAP_CONFIG:-/etc/linecap/linecap.yaml}
LINECAPD=${LINECAPD:-linecapd}
SYSTEMCTL=${SYSTEMCTL:-systemctl}
CGROUP=${LINECAP_CGROUP:-/sys/fs/cgroup}
ONLINE=${LINECAP_SYSFS:-/sys}/devices/system/cpu/online
SLICES=(system.slice user.slice machine.slice)

say() { printf 'linecap-shield: %s\n' "$*"; }
die() {
    printf 'linecap-shield: error: %s\n' "$*" >&2
    exit 1
}
usage() {
    sed -n '4p' "$0" | sed 's/^# \{0,1\}//' >&2
    echo "(--help: more)" >&2
    exit 2
}

# Sets WORKERS and OTHERS from linecapd --print-cpus (the daemon reads the configuration;
# this script never parses YAML).
read_cpus() {
    local out key value
    out=$("$LINECAPD" --config "$CONFIG" --print-cpus) || die "$LINECAPD --config $CONFIG --print-cpus failed"
    WORKERS='' OTHERS=''
    while IFS='=' read -r key value; do
        case $key in
            worker_cpus) WORKERS=$value ;;
            other_cpus) OTHERS=$value ;;
        esac
    done <<<"$out"
}

cmd=
while (($#)); do
    case $1 in
        --config) CONFIG=${2:?--config needs a FILE}; shift 2 ;;
        --config=*) CONFIG=${1#*=}; shift ;;
        -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        apply | reset | status) cmd=$1; shift ;;
        *) echo "linecap-shield: unknown argument '$1'" >&2; usage ;;
    esac
done
[[ -n $cmd ]] || usage

case $cmd in
    apply)
        read_cpus
        [[ -n $WORKERS ]] || { say "no worker CPUs in $CONFIG: nothing to shield"; exit 0; }
        # linecapd --check reports this too; applying an empty set would be refused anyway.
        [[ -n $OTHERS ]] || die "the worker lcores take every online CPU ($WORKERS): none left for the other slices"
        [[ -e $CGROUP/cgroup.controllers ]] \
            || die "no cgroup v2 hierarchy at $CGROUP: AllowedCPUs= needs it (systemd.unified_cgroup_hierarchy=1)"
        # linecap.slice first, with every CPU: the cpuset controller is then on for it before
        # linecapd starts, and stays on after `reset`. Turning the controller on or off for
        # a cgroup moves its threads, and the move resets their CPU affinity to the cpuset's
        # (seen on Debian 12's kernel 6.1): linecapd's workers would lose their pinning.
        all=$(cat "$ONLINE") || die "cannot read the online CPUs from $ONLINE"
        "$SYSTEMCTL" set-property --runtime linecap.slice "AllowedCPUs=$all" \
            || die "systemctl set-property linecap.slice AllowedCPUs=$all failed"
        # set-property takes one unit (then its assignments): one call per slice.
        for s in "${SLICES[@]}"; do
            "$SYSTEMCTL" set-property --runtime "$s" "AllowedCPUs=$OTHERS" \
                || die "systemctl set-property $s AllowedCPUs=$OTHERS failed"
        done
        say "worker CPUs $WORKERS shielded: ${SLICES[*]} confined to CPUs $OTHERS"
        ;;
    reset)
        # Every online CPU, written out: with the controller kept on for linecap.slice (see
        # apply), an empty AllowedCPUs= makes systemd stop writing the slice's cpuset and
        # the old confinement stays. linecap.slice keeps its setting.
        all=$(cat "$ONLINE") || die "cannot read the online CPUs from $ONLINE"
        for s in "${SLICES[@]}"; do
            "$SYSTEMCTL" set-property --runtime "$s" "AllowedCPUs=$all" \
                || die "systemctl set-property $s AllowedCPUs=$all failed"
        done
        say "${SLICES[*]} may use every CPU again"
        ;;
    status)
        read_cpus
        say "worker CPUs: ${WORKERS:-none}; other CPUs: ${OTHERS:-none}"
        for s in "${SLICES[@]}" linecap.slice; do
            f=$CGROUP/$s/cpuset.cpus.effective
            if [[ -r $f ]]; then
                say "$s: cpuset.cpus.effective $(cat "$f")"
            else
                say "$s: no cpuset (not active, or not confined)"
            fi
        done
        ;;
esac
