// Where per-port NIC numbers come from. Production reads rte_ethdev (EthdevPortStats);
// unit tests substitute a fake, so the collector is testable without a port.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "util/metric.hpp"

namespace linecap {

// The subset of rte_eth_stats the drop accounting needs, and for net_af_xdp ports what
// the kernel counts on the port's AF_XDP sockets (dpdk/xdp_socket.hpp).
//
// As a source reports them, imissed is rte_eth_stats' (for net_af_xdp it includes the
// packets dropped for an empty fill ring) and the xsk fields are the sockets' own
// counters. In a MetricsSample's counters (metrics/collector.cpp) they are a partition:
// imissed is only what no other reason explains.
struct PortCounters {
    uint64_t ipackets = 0;    // received and handed to rx queues
    uint64_t ibytes = 0;
    uint64_t imissed = 0;     // dropped by the NIC: rx ring full (we polled too slowly)
    uint64_t ierrors = 0;     // dropped by the NIC: erroneous frames (CRC, length, …)
    uint64_t rx_nombuf = 0;   // mbuf allocation failures (mempool empty)
    uint64_t xsk_fill_empty = 0;  // AF_XDP: no buffer in the fill ring to receive into
    uint64_t xsk_ring_full = 0;   // AF_XDP: the socket's rx ring had no room (not in imissed)
};

// The metrics read from PortCounters (util/metric.hpp); label port. The NIC's drops are
// series of linecap_dropped_packets_total (metrics/snapshot.hpp) with queue="all".
inline constexpr MetricDecl kPortReceivedMetric{
    "linecap_port_received_packets_total",
    "Packets that reached the port: ipackets + imissed + ierrors + rx_nombuf (+ for net_af_xdp the socket's rx "
    "ring full). Each is exactly one of written, filtered or dropped (once the queues are drained).",
    MetricType::counter};
inline constexpr DropReason<PortCounters> kNicMissedDrop{"nic_missed", &PortCounters::imissed};
inline constexpr DropReason<PortCounters> kNicErrorDrop{"nic_error", &PortCounters::ierrors};
inline constexpr DropReason<PortCounters> kNoMbufDrop{"no_mbuf", &PortCounters::rx_nombuf};
inline constexpr DropReason<PortCounters> kXskFillEmptyDrop{"xsk_fill_empty", &PortCounters::xsk_fill_empty};
inline constexpr DropReason<PortCounters> kXskRingFullDrop{"xsk_ring_full", &PortCounters::xsk_ring_full};

struct PortLink {
    bool up = false;
    uint64_t speed_bps = 0;   // 0 when down or unknown
};

inline constexpr MetricDecl kPortLinkUpMetric{"linecap_port_link_up", "1 when the port's link is up.",
                                              MetricType::gauge};
inline constexpr MetricDecl kPortLinkSpeedMetric{
    "linecap_port_link_speed_bps", "Link speed in bits per second; 0 when down or unknown.", MetricType::gauge};

struct PortIdentity {
    std::string driver;            // e.g. net_ixgbe, net_i40e, net_af_xdp
    bool virtual_device = false;   // on the vdev bus (net_pcap, net_af_xdp, …)
};

// Labels port, device, driver.
inline constexpr MetricDecl kPortInfoMetric{"linecap_port_info", "Port identity; always 1.", MetricType::gauge};

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
