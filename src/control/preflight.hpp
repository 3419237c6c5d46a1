// Preflight: is this machine ready for this configuration? Run by `linecapd --check`
// (and by systemd's ExecStartPre) and at daemon start before anything is touched.
// Every finding is one line that says what is wrong and how to fix it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/config.hpp"

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
    bool probe_disk_speed = false;               // --check only: a short write-speed probe
    uint64_t disk_probe_bytes = 128ull << 20;    // written (and deleted) by that probe
};

std::vector<PreflightFinding> preflight(const Config& config, const PreflightOptions& options);

// TEST ONLY: LINECAP_SYSFS=DIR replaces /sys, LINECAP_PROC=DIR replaces /proc (DIR/mounts,
// DIR/meminfo), so that tests can run `linecapd --check` against fake kernel trees. The
// only place the daemon reads these variables; documented in linecapd(8), ENVIRONMENT.
void apply_test_overrides(PreflightOptions& options);

// Hugepage memory the configuration needs, the way linecapd allocates it: per NUMA node of
// the ports, one mbuf pool (capture.mbufs, or sized like mempool_size() does) of
// kMbufBytes each, plus every rx queue's write blocks; plus a fixed EAL/PMD overhead.
// scripts/linecap-hugepages.sh reserves at least this much (same formula, more slack).
struct HugepageNeed {
    static constexpr uint64_t kMbufBytes = 2560;              // 2.5 KiB: 2176 data room + mbuf + pool header
    static constexpr uint64_t kEalOverheadBytes = 64ull << 20;  // rings, memzones, malloc heap, BPF
    struct Node {
        uint64_t mbufs = 0;         // mbuf count of the node's pool
        uint64_t mbuf_bytes = 0;
        uint64_t block_bytes = 0;   // queues × blocks_per_queue × block_size
        std::vector<std::string> ports;
        uint64_t bytes() const { return mbuf_bytes + block_bytes; }
    };
    std::map<int, Node> nodes;      // NUMA node of the ports (-1: unknown / virtual devices)
    uint64_t total_bytes = 0;       // nodes + overhead, at least eal.memory_mb

    uint64_t mbuf_bytes() const;
    uint64_t block_bytes() const;
};

// `port_nodes[i]` is the NUMA node of config.ports[i] (-1 when unknown).
HugepageNeed estimate_hugepage_need(const Config& config, const std::vector<int>& port_nodes);

}  // namespace linecap
