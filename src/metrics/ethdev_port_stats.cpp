#include "metrics/ethdev_port_stats.hpp"

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_ethdev.h>

#include <cstring>

#include "dpdk/xdp_socket.hpp"

namespace linecap {

EthdevPortStats::EthdevPortStats(const std::vector<PortView>& ports) {
    for (const PortView& p : ports)
        if (!p.xdp_sockets.empty()) xdp_sockets_[p.port_id] = p.xdp_sockets;
}

std::optional<PortCounters> EthdevPortStats::counters(uint16_t port_id) {
    rte_eth_stats stats{};
    if (rte_eth_stats_get(port_id, &stats) != 0) return std::nullopt;
    PortCounters c{
        .ipackets = stats.ipackets,
        .ibytes = stats.ibytes,
        .imissed = stats.imissed,
        .ierrors = stats.ierrors,
        .rx_nombuf = stats.rx_nombuf,
    };
    if (const auto it = xdp_sockets_.find(port_id); it != xdp_sockets_.end()) {
        for (const int fd : it->second) {
            const auto xsk = read_xdp_socket_counts(fd);
            if (!xsk) return std::nullopt;  // a read that failed must not look like a reset
            c.xsk_fill_empty += xsk->fill_ring_empty;
            c.xsk_ring_full += xsk->rx_ring_full;
        }
    }
    return c;
}

PortLink EthdevPortStats::link(uint16_t port_id) {
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(port_id, &link) != 0) return {};
    const bool up = link.link_status == RTE_ETH_LINK_UP;
    const bool speed_known = link.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN;
    return PortLink{
        .up = up,
        .speed_bps = up && speed_known ? uint64_t{link.link_speed} * 1'000'000 : 0,  // Mbit/s
    };
}

PortIdentity EthdevPortStats::identity(uint16_t port_id) {
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(port_id, &info) != 0) return {};
    PortIdentity identity;
    if (info.driver_name != nullptr) identity.driver = info.driver_name;
    if (info.device != nullptr) {
        const rte_bus* bus = rte_dev_bus(info.device);
        identity.virtual_device = bus != nullptr && std::strcmp(rte_bus_name(bus), "vdev") == 0;
    }
    return identity;
}

}  // namespace linecap
