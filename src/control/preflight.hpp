// Preflight: is this machine ready for this configuration? Run by `linecapd --check`
// (and by systemd's ExecStartPre) and at daemon start before anything is touched.
// Every finding is one line that says what is wrong and how to fix it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "dpdk/port.hpp"

namespace linecap {

struct PreflightFinding {
    enum class Level { error, warning } level;
    std::string message;
};

struct PreflightOptions {
    // Where the kernel's trees are. The defaults are the real ones; tests point them at fake
    // trees (see apply_test_overrides()).
    std::string sysfs = "/sys";                  // PCI devices, CPUs, NUMA nodes, hugepage pools
    std::string proc_mounts = "/proc/mounts";    // hugetlbfs mount
    std::string proc_meminfo = "/proc/meminfo";  // HugePages_Total/Free, Hugepagesize
    std::string proc = "/proc";                  // tasks (NAPI threads), interrupts' affinity
    bool probe_disk_speed = false;               // --check only: a short write-speed probe
    uint64_t disk_probe_bytes = 128ull << 20;    // written (and deleted) by that probe
};

std::vector<PreflightFinding> preflight(const Config& config, const PreflightOptions& options);

// TEST ONLY: LINECAP_SYSFS=DIR replaces /sys, LINECAP_PROC=DIR replaces /proc (DIR/mounts,
// DIR/meminfo, DIR/PID/{comm,stat,status}, DIR/irq/N), so that tests can run `linecapd --check` against fake kernel trees. The
// only place the daemon reads these variables; documented in linecapd(8), ENVIRONMENT.
void apply_test_overrides(PreflightOptions& options);

// The ports as the capture plan sees them before EAL probes them (assumed_port_info), with
// each PCI port's NUMA node read from sysfs. For `linecapd --print-plan` and the preflight.
std::vector<PortInfo> assumed_port_infos(const Config& config, const PreflightOptions& options);

}  // namespace linecap
