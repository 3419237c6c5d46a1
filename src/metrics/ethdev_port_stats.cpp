#include "metrics/ethdev_port_stats.hpp"

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_ethdev.h>

#include <cstring>

namespace linecap {

std::optional<PortCounters> EthdevPortStats::counters(uint16_t port_id) {
    rte_eth_stats stats{};
    if (rte_eth_stats_get(port_id, &stats) != 0) return std::nullopt;
    return PortCounters{
        .ipackets = stats.ipackets,
        .ibytes = stats.ibytes,
        .imissed = stats.imissed,
        .ierrors = stats.ierrors,
        .rx_nombuf = stats.rx_nombuf,
    };
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
