#include "capture/plan.hpp"

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "capture/dedup.hpp"
#include "capture/flow_cap.hpp"
#include "dpdk/mempool.hpp"
#include "util/human_bytes.hpp"

namespace linecap {

namespace {

uint64_t pages_for(uint64_t bytes) { return (bytes + CapturePlan::kHugepageBytes - 1) / CapturePlan::kHugepageBytes; }

uint64_t mib_up(uint64_t bytes) { return (bytes + (1ull << 20) - 1) >> 20; }

// Bytes one mbuf takes in its pool, as rte_pktmbuf_pool_create lays it out: the mempool's
// object header and cache-line padding (rte_mempool_calc_obj_size) around the rte_mbuf and
// its data room.
uint32_t mbuf_footprint(unsigned data_room) {
    rte_mempool_objsz size{};
    return rte_mempool_calc_obj_size(static_cast<uint32_t>(sizeof(rte_mbuf) + data_room), 0, &size);
}

PortSetup plan_port(const PortConfig& config, const PortInfo& info, std::vector<std::string>& adjustments) {
    PortSetup setup;
    setup.rx_queues = config.rx_queues;
    setup.rx_descriptors = effective_rx_descriptors(info, config.rx_descriptors);
    if (setup.rx_descriptors != config.rx_descriptors) {
        adjustments.push_back("port " + config.name + ": rx_descriptors " + std::to_string(config.rx_descriptors) +
                              " → " + std::to_string(setup.rx_descriptors) +
                              (info.driver == "net_af_xdp" && setup.rx_descriptors > config.rx_descriptors
                                   ? " (net_af_xdp: below 4096, a full socket ring drops packets uncounted)"
                                   : " (" + info.driver + " limits: " + std::to_string(info.rx_desc_min) + ".." +
                                         std::to_string(info.rx_desc_max) + ", multiple of " +
                                         std::to_string(info.rx_desc_align) + ")"));
    }
    setup.mtu = config.mtu;
    if (info.max_mtu != 0 && setup.mtu > info.max_mtu) {
        adjustments.push_back("port " + config.name + ": mtu " + std::to_string(config.mtu) + " → " +
                              std::to_string(info.max_mtu) + " (the " + info.driver + " maximum)");
        setup.mtu = info.max_mtu;
    }
    return setup;
}

}  // namespace

uint64_t CapturePlan::socket_hugepages(int socket) const {
    const auto it = sockets.find(socket);
    return hugepages && it != sockets.end() ? pages_for(it->second.bytes()) : 0;
}

uint64_t CapturePlan::total_hugepages() const {
    if (!hugepages) return 0;
    uint64_t pages = 0, socket_bytes = 0;
    for (const auto& [socket, s] : sockets) {
        pages += pages_for(s.bytes());
        socket_bytes += s.bytes();
    }
    return pages + pages_for(hugepage_bytes - socket_bytes);
}

uint64_t CapturePlan::pool_bytes() const {
    uint64_t sum = 0;
    for (const auto& [socket, s] : sockets) sum += s.pool_bytes();
    return sum;
}

uint64_t CapturePlan::block_bytes() const {
    uint64_t sum = 0;
    for (const auto& [socket, s] : sockets) sum += s.block_bytes;
    return sum;
}

uint64_t CapturePlan::table_bytes() const {
    uint64_t sum = 0;
    for (const auto& [socket, s] : sockets) sum += s.table_bytes();
    return sum;
}

uint64_t flow_table_bytes(const FlowCapConfig& config) { return uint64_t(config.flows) * FlowTable::kEntryBytes; }
uint64_t dedup_table_bytes(const DedupConfig& config) { return DedupQueue::memory_bytes(config.entries); }

Result<CapturePlan> plan_capture(const Config& config, const std::vector<PortInfo>& ports) {
    CapturePlan plan;
    plan.hugepages = config.eal.hugepages;
    plan.probed = !ports.empty() && std::all_of(ports.begin(), ports.end(), [](const PortInfo& p) { return p.probed; });

    auto workers = assign_queues(config);
    if (!workers) return workers.error();
    plan.workers = std::move(workers.value());

    const uint64_t block_bytes_per_queue = uint64_t(config.output.blocks_per_queue) * config.output.block_size_kb * 1024;
    for (size_t p = 0; p < config.ports.size(); ++p) {
        const PortConfig& pc = config.ports[p];
        const PortInfo& info = ports.at(p);
        if (info.max_rx_queues != 0 && pc.rx_queues > info.max_rx_queues) {
            return config_error("ports[" + pc.name + "].rx_queues " + std::to_string(pc.rx_queues) + ": " +
                                info.driver + " has at most " + std::to_string(info.max_rx_queues));
        }
        PortSetup setup = plan_port(pc, info, plan.adjustments);

        SocketPlan& s = plan.sockets[info.socket];
        s.ports.push_back(p);
        s.queues += setup.rx_queues;
        s.descriptors += setup.rx_queues * setup.rx_descriptors;
        s.block_bytes += setup.rx_queues * block_bytes_per_queue;
        if (config.capture.flow_cap.applies_to(pc.name)) {
            s.flow_cap_queues += setup.rx_queues;
            s.flow_table_bytes += setup.rx_queues * flow_table_bytes(config.capture.flow_cap);
        }
        if (config.capture.dedup.applies_to(pc.name)) {
            s.dedup_queues += setup.rx_queues;
            s.dedup_table_bytes += setup.rx_queues * dedup_table_bytes(config.capture.dedup);
        }
        // Frames larger than one default mbuf are chained by PMDs that scatter; for those
        // that cannot, the socket's pool gets mbufs large enough for the whole frame.
        unsigned room = RTE_MBUF_DEFAULT_BUF_SIZE;
        if (!info.scatter_capable && max_frame_len(setup.mtu) > RTE_MBUF_DEFAULT_DATAROOM) {
            room = max_frame_len(setup.mtu) + RTE_PKTMBUF_HEADROOM;
        }
        s.mbuf_data_room = std::max(s.mbuf_data_room, room);
        plan.ports.push_back(setup);
    }
    // Scattered rx once the socket's data room is known: only frames that do not fit one
    // mbuf need it.
    for (size_t p = 0; p < config.ports.size(); ++p) {
        const unsigned room = plan.sockets[ports[p].socket].mbuf_data_room - RTE_PKTMBUF_HEADROOM;
        plan.ports[p].scatter = ports[p].scatter_capable && max_frame_len(plan.ports[p].mtu) > room;
    }
    for (const WorkerAssignment& w : plan.workers) {
        std::set<int> polled;
        for (const QueueRef& q : w.queues) polled.insert(ports[q.port_index].socket);
        for (int socket : polled) plan.sockets[socket].workers += 1;
    }

    uint64_t total = CapturePlan::kEalOverheadBytes;
    for (auto& [socket, s] : plan.sockets) {
        s.mbufs = config.capture.mbufs
                      ? config.capture.mbufs
                      : mempool_size(MempoolSizing{s.descriptors, s.workers, config.capture.burst_size,
                                                   config.capture.mbuf_cache, s.mbuf_data_room});
        s.mbuf_footprint = mbuf_footprint(s.mbuf_data_room);
        total += s.bytes();
    }
    plan.hugepage_bytes = std::max<uint64_t>(total, uint64_t(config.eal.memory_mb) << 20);
    return plan;
}

BurstHeadroom burst_headroom(unsigned rx_descriptors, uint64_t queue_block_bytes, unsigned frame_bytes) {
    constexpr double kLineBitsPerSecond = 10e9;
    constexpr unsigned kWireOverhead = 24;  // FCS 4, preamble and start delimiter 8, gap 12
    const double packets_per_second = kLineBitsPerSecond / 8 / (frame_bytes + kWireOverhead);
    const double record_bytes = frame_bytes + 16;  // pcap record header
    return {.ring_seconds = rx_descriptors / packets_per_second,
            .blocks_seconds = double(queue_block_bytes) / (packets_per_second * record_bytes)};
}

namespace {

std::string milliseconds(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, seconds < 0.01 ? "%.2f ms" : "%.0f ms", seconds * 1e3);
    return text;
}

// DPDK 22.11's net_af_xdp keeps this many buffers in flight per queue, whatever the
// descriptor count (its initial fill ring, refilled one for one; doc/tuning.md).
constexpr unsigned kAfXdpBuffersInFlight = 2048;

// One line per port: what one of its queues absorbs (burst_headroom), for full-size and
// minimum-size frames.
std::string describe_headroom(const Config& config, const PortConfig& port_config, const PortSetup& port) {
    const bool af_xdp = port_config.device.starts_with("net_af_xdp");
    const unsigned ring = af_xdp ? std::min(port.rx_descriptors, kAfXdpBuffersInFlight) : port.rx_descriptors;
    const uint64_t blocks = uint64_t(config.output.blocks_per_queue) * config.output.block_size_kb * 1024;
    const BurstHeadroom large = burst_headroom(ring, blocks, 1514);
    const BurstHeadroom small = burst_headroom(ring, blocks, 60);
    return "burst headroom of one " + port_config.name + " queue at 10 Gbit/s, 1514 B (60 B) frames: rx ring " +
           std::to_string(ring) + (af_xdp ? " buffers (net_af_xdp's)" : " packets") + " = " +
           milliseconds(large.ring_seconds) + " (" +
           milliseconds(small.ring_seconds) + ") without a poll; write blocks " + std::to_string(mib_up(blocks)) +
           " MiB = " + milliseconds(large.blocks_seconds) + " (" + milliseconds(small.blocks_seconds) +
           ") without a write\n";
}

}  // namespace

std::string describe_plan(const Config& config, const CapturePlan& plan) {
    std::string out = "# capture plan for " + (config.path.empty() ? std::string("the configuration") : config.path) +
                      (plan.probed ? " (device capabilities from rte_eth_dev_info)"
                                   : " (before EAL probes the devices: assumed capabilities — NUMA node from "
                                     "sysfs, no scattered rx, no descriptor or MTU limits)") +
                      "\n";
    for (size_t p = 0; p < config.ports.size(); ++p) {
        const PortSetup& s = plan.ports[p];
        out += "port " + config.ports[p].name + " (" + config.ports[p].device + "): " + std::to_string(s.rx_queues) +
               " rx queues × " + std::to_string(s.rx_descriptors) + " descriptors, mtu " + std::to_string(s.mtu) +
               (s.scatter ? ", scattered rx" : "") + "\n";
    }
    for (const std::string& line : plan.adjustments) out += "adjusted " + line + "\n";
    for (size_t p = 0; p < config.ports.size(); ++p) out += describe_headroom(config, config.ports[p], plan.ports[p]);
    for (const WorkerAssignment& w : plan.workers) {
        out += "worker lcore " + std::to_string(w.lcore) + ": polls";
        for (const QueueRef& q : w.queues) out += " " + config.ports[q.port_index].name + ":" + std::to_string(q.queue);
        out += "\n";
    }
    for (const auto& [socket, s] : plan.sockets) {
        std::string names;
        for (size_t p : s.ports) names += (names.empty() ? "" : ",") + config.ports[p].name;
        out += "socket " + std::to_string(socket) + ": ports " + names + "; " + std::to_string(s.queues) +
               " queues, " + std::to_string(s.workers) + " workers; pool " + std::to_string(s.mbufs) + " mbufs × " +
               std::to_string(s.mbuf_footprint) + " B (data room " + std::to_string(s.mbuf_data_room) + ") = " +
               std::to_string(mib_up(s.pool_bytes())) + " MiB; write blocks " + std::to_string(s.queues) + " × " +
               std::to_string(config.output.blocks_per_queue) + " × " + std::to_string(config.output.block_size_kb) +
               " KiB = " + std::to_string(mib_up(s.block_bytes)) + " MiB" +
               (s.flow_cap_queues ? "; flow tables " + std::to_string(s.flow_cap_queues) + " × " +
                                        std::to_string(config.capture.flow_cap.flows) + " × " +
                                        std::to_string(FlowTable::kEntryBytes) + " B = " +
                                        std::to_string(mib_up(s.flow_table_bytes)) + " MiB"
                                  : "") +
               (s.dedup_queues ? "; dedup tables " + std::to_string(s.dedup_queues) + " × " +
                                     std::to_string(config.capture.dedup.entries) + " × " +
                                     std::to_string(DedupQueue::kEntryBytes) + " B = " +
                                     std::to_string(mib_up(s.dedup_table_bytes)) + " MiB"
                               : "") +
               "; hugepages_2m=" +
               std::to_string(plan.socket_hugepages(socket)) + "\n";
    }
    if (!plan.hugepages) {
        out += "eal.hugepages: false (EAL runs --no-huge): nothing to reserve\n";
    } else {
        out += "hugepage memory: " + human_bytes(plan.hugepage_bytes) + " (pools " + human_bytes(plan.pool_bytes()) +
               " + write blocks " + human_bytes(plan.block_bytes()) +
               (plan.table_bytes() ? " + flow/dedup tables " + human_bytes(plan.table_bytes()) : "") + " + EAL " +
               human_bytes(CapturePlan::kEalOverheadBytes) +
               (config.eal.memory_mb ? ", at least eal.memory_mb " + std::to_string(config.eal.memory_mb) + " MiB" : "") +
               ")\n";
    }
    out += "hugepages_2m: " + std::to_string(plan.total_hugepages()) + "\n";
    return out;
}

}  // namespace linecap
