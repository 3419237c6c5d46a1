// PortStatsSource over rte_ethdev: rte_eth_stats_get, rte_eth_link_get_nowait (never
// waits for autonegotiation, so collect() stays fast) and rte_eth_dev_info_get.
#pragma once

#include <map>
#include <vector>

#include "capture/views.hpp"
#include "metrics/port_stats.hpp"

namespace linecap {

class EthdevPortStats final : public PortStatsSource {
public:
    // The ports' AF_XDP sockets (PortView::xdp_sockets) are read after rte_eth_stats_get:
    // what they count then includes what imissed counted (the collector's split relies
    // on it).
    explicit EthdevPortStats(const std::vector<PortView>& ports = {});

    std::optional<PortCounters> counters(uint16_t port_id) override;
    PortLink link(uint16_t port_id) override;
    PortIdentity identity(uint16_t port_id) override;

private:
    std::map<uint16_t, std::vector<int>> xdp_sockets_;
};

}  // namespace linecap
