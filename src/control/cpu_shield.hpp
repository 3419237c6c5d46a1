// CPU shielding: which CPUs belong to the workers, and what on this machine can still run
// there. A worker lcore busy-polls its rx queues; whenever the scheduler gives its CPU to
// anything else the rx ring fills and packets are lost (nic_missed). DPDK appliances keep
// those CPUs for the workers alone: the kernel's own work stays off them through the kernel
// command line (isolcpus=, nohz_full=, irqaffinity=), every other systemd slice through
// AllowedCPUs= (cgroup v2 cpuset), which linecap-shield.service applies from
// `linecapd --print-cpus`. doc/tuning.md, "CPU shielding".
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"
#include "control/preflight.hpp"
#include "util/cpu_set.hpp"

namespace linecap {

struct CpuShieldPlan {
    CpuSet worker_cpus;  // the CPUs of the worker lcores (every lcore but the first, main one)
    CpuSet other_cpus;   // every online CPU except those: for the main lcore and everything else
};

CpuShieldPlan cpu_shield_plan(const Config& config, const CpuSet& online_cpus);

// The online CPUs of this machine (options.sysfs/devices/system/cpu/online).
CpuSet online_cpus(const PreflightOptions& options);

// Preflight's warnings about what is not shielded (never errors: an unshielded machine
// captures, it only loses packets sooner under load): worker CPUs missing from isolcpus= or
// nohz_full=, and systemd slices (system, user, machine) whose cpuset still includes a
// worker CPU; and the kernel's receive work of a port's interface (net_af_xdp / net_af_packet
// "iface=") placed where it takes a worker's CPU away: a threaded-NAPI thread allowed on a
// worker CPU at a real-time priority at or above the worker's, or, without threaded NAPI,
// the interface's interrupts steered to a worker CPU (their softirq outranks every thread).
void check_cpu_shield(const Config& config, const PreflightOptions& options,
                      std::vector<PreflightFinding>& findings);

}  // namespace linecap
