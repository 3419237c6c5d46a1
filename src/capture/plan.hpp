// The capture plan: everything the daemon sizes, derived in one place from the
// configuration and what the devices can do — per port the rx queues, descriptors, MTU
// and scattered rx; the lcore map (which worker polls which queue); per NUMA socket one
// mbuf pool (count, data room, bytes) and the write blocks of its queues; and the
// per-queue tables of the flow caps and duplicate suppression; and the hugepages all of
// that needs.
//
// A pure function: the engine plans twice (before EAL probes the devices, with the
// assumed capabilities of assumed_port_info(), and after, with rte_eth_dev_info), the
// preflight (`linecapd --check`) and `linecapd --print-plan` plan once with the assumed
// capabilities, and scripts/linecap-hugepages.sh reserves what --print-plan prints. So the
// pools the engine allocates, the pages the preflight wants free and the pages the script
// reserves cannot disagree.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "capture/assignment.hpp"
#include "config/config.hpp"
#include "dpdk/port.hpp"
#include "util/result.hpp"

namespace linecap {

// What lives on one NUMA socket: the mbuf pool of its ports and their queues' write blocks.
struct SocketPlan {
    std::vector<size_t> ports;       // indexes into Config::ports
    unsigned queues = 0;             // rx queues of those ports
    unsigned descriptors = 0;        // Σ rx_queues × rx_descriptors
    unsigned workers = 0;            // worker lcores that poll at least one of those queues
    unsigned mbufs = 0;              // capture.mbufs, or mempool_size()
    unsigned mbuf_data_room = 0;     // headroom included (rte_pktmbuf_pool_create's data_room)
    uint32_t mbuf_footprint = 0;     // bytes one mbuf takes in the pool: header, rte_mbuf, data room
    uint64_t block_bytes = 0;        // queues × blocks_per_queue × block_size
    // The per-queue tables of capture.flow_cap and capture.dedup, for the queues of the
    // ports they apply to.
    unsigned flow_cap_queues = 0;
    unsigned dedup_queues = 0;
    uint64_t flow_table_bytes = 0;   // flow_cap_queues × flow_cap.flows × flow entry
    uint64_t dedup_table_bytes = 0;  // dedup_queues × dedup.entries × dedup entry

    uint64_t pool_bytes() const { return uint64_t(mbufs) * mbuf_footprint; }
    uint64_t table_bytes() const { return flow_table_bytes + dedup_table_bytes; }
    uint64_t bytes() const { return pool_bytes() + block_bytes + table_bytes(); }
};

struct CapturePlan {
    // Rings, memzones, the malloc heap and PMD state besides pools and blocks; not tied to
    // a socket (the control lcore's heap takes most of it).
    static constexpr uint64_t kEalOverheadBytes = 64ull << 20;
    static constexpr uint64_t kHugepageBytes = 2ull << 20;  // the 2 MiB pages linecap-hugepages reserves

    bool probed = false;             // true: planned with the devices' rte_eth_dev_info
    bool hugepages = true;           // eal.hugepages (false: --no-huge, nothing is reserved)
    std::vector<PortSetup> ports;    // same order as Config::ports
    std::vector<WorkerAssignment> workers;
    std::map<int, SocketPlan> sockets;
    uint64_t hugepage_bytes = 0;     // sockets + kEalOverheadBytes, at least eal.memory_mb
    // What the device capabilities changed in the request (descriptors, MTU), one line
    // each, for the log.
    std::vector<std::string> adjustments;

    // Pages of 2 MiB: per socket (rounded up each, as each socket's pool is reserved
    // separately) and in total (the sockets plus the rest, which has no socket).
    uint64_t socket_hugepages(int socket) const;
    uint64_t total_hugepages() const;
    uint64_t pool_bytes() const;
    uint64_t block_bytes() const;
    uint64_t table_bytes() const;
};

// Bytes of one rx queue's table (capture/flow_cap.hpp, capture/dedup.hpp).
uint64_t flow_table_bytes(const FlowCapConfig& config);
uint64_t dedup_table_bytes(const DedupConfig& config);

// `ports[i]` describes Config::ports[i]: from find_port() after EAL probed the devices, or
// assumed_port_info() before. Errors: the lcore map (capture.workers / eal.lcores) or more
// rx queues than a probed device has.
Result<CapturePlan> plan_capture(const Config& config, const std::vector<PortInfo>& ports);

// The plan as `linecapd --print-plan` prints it: one line per port, worker and socket, then
// the machine-readable totals that scripts/linecap-hugepages.sh reads:
//   socket N: … hugepages_2m=P        (N = -1: devices without a NUMA socket)
//   hugepages_2m: TOTAL
std::string describe_plan(const Config& config, const CapturePlan& plan);

// How long one rx queue absorbs a burst when a whole 10 Gbit/s line's traffic lands in it
// (one flow does: RSS cannot spread it): its descriptor ring while the worker does not poll,
// its write blocks while the writer or the disk does not keep up. Frames of `frame_bytes`
// (Ethernet, without FCS), whole packets kept; on the wire each also takes 24 bytes of FCS,
// preamble and inter-frame gap. In seconds.
struct BurstHeadroom {
    double ring_seconds = 0;
    double blocks_seconds = 0;
};
BurstHeadroom burst_headroom(unsigned rx_descriptors, uint64_t queue_block_bytes, unsigned frame_bytes);

}  // namespace linecap
