// PortStatsSource over rte_ethdev: rte_eth_stats_get, rte_eth_link_get_nowait (never
// waits for autonegotiation, so collect() stays fast) and rte_eth_dev_info_get.
#pragma once

#include "metrics/port_stats.hpp"

namespace linecap {

class EthdevPortStats final : public PortStatsSource {
public:
    std::optional<PortCounters> counters(uint16_t port_id) override;
    PortLink link(uint16_t port_id) override;
    PortIdentity identity(uint16_t port_id) override;
};

}  // namespace linecap
