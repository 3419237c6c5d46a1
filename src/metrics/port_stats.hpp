// Where per-port NIC numbers come from. Production reads rte_ethdev (EthdevPortStats);
// unit tests substitute a fake, so the collector is testable without a port.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace linecap {

// The subset of rte_eth_stats the drop accounting needs.
struct PortCounters {
    uint64_t ipackets = 0;    // received and handed to rx queues
    uint64_t ibytes = 0;
    uint64_t imissed = 0;     // dropped by the NIC: rx ring full (we polled too slowly)
    uint64_t ierrors = 0;     // dropped by the NIC: erroneous frames (CRC, length, …)
    uint64_t rx_nombuf = 0;   // mbuf allocation failures (mempool empty)
};

struct PortLink {
    bool up = false;
    uint64_t speed_bps = 0;   // 0 when down or unknown
};

struct PortIdentity {
    std::string driver;            // e.g. net_ixgbe, net_i40e, net_af_xdp
    bool virtual_device = false;   // on the vdev bus (net_pcap, net_af_xdp, …)
};

class PortStatsSource {
public:
    virtual ~PortStatsSource() = default;
    // nullopt when the read failed (port closed, driver error): the caller keeps the
    // previous values so counters never go backwards.
    virtual std::optional<PortCounters> counters(uint16_t port_id) = 0;
    virtual PortLink link(uint16_t port_id) = 0;
    // Does not change while the port exists; the collector asks once per port.
    virtual PortIdentity identity(uint16_t port_id) = 0;
};

}  // namespace linecap
