// MetricsSnapshot → Prometheus metric families. Each metric's name, help text and type is
// declared once, next to the counters it reads (util/metric.hpp lists where); this file
// arranges them into families and series with their labels.
//
// Accounting: a packet that reached a port is exactly one of written, filtered,
// flow-capped (linecap_flow_cap_dropped_packets_total), deduplicated
// (linecap_dedup_packets_total) or dropped(reason), where
//   reached (linecap_port_received_packets_total) = ipackets + imissed + ierrors + rx_nombuf
// from rte_eth_stats, + xsk_ring_full for net_af_xdp: ipackets counts only packets the NIC
// delivered to an rx queue; the others are packets it could not deliver (net_af_xdp's
// imissed is split into xsk_fill_empty and the rest, port_stats.hpp). Exact once the queues are drained (after
// CaptureEngine::stop() and a final collect()); while running, packets still in the NIC
// ring or in a write block are "in flight". Caveat: ixgbe/i40e count rx_nombuf per failed
// descriptor refill, not per lost packet (the packet waits in the ring, and is later
// counted by imissed if the ring overflows), so with a starved mempool "reached" can
// over-count. Mempools are sized so that rx_nombuf stays 0; any non-zero value is a
// problem in itself (alert LinecapPacketsDropped, reason no_mbuf).
//
// rte_eth_xstats are deliberately not exported: every reason above is in rte_eth_stats,
// which all PMDs fill, while xstat names and meanings differ per driver (and i40e has
// hundreds of them).
//
// Label scheme:
//   port    the port's name from the config, on everything per port or per queue
//   queue   the rx queue number, on everything per queue; `linecap_dropped_packets_total`
//           always carries it, and drops the NIC counts for the whole port (nic_missed,
//           nic_error, no_mbuf, xsk_fill_empty, xsk_ring_full) use queue="all", so
//           `sum by (port, reason)` works uniformly
//   reason  on linecap_dropped_packets_total: writer_full, write_error, disk_full (per
//           queue), nic_missed, nic_error, no_mbuf, xsk_fill_empty, xsk_ring_full
//           (queue="all"; the xsk reasons are the AF_XDP sockets' own counters,
//           dpdk/xdp_socket.hpp, and stay 0 on other ports)
//   lcore   the worker's lcore id, on linecap_worker_*
#pragma once

#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "metrics/snapshot.hpp"

namespace linecap {

// Labels version, dpdk_version.
inline constexpr MetricDecl kBuildInfoMetric{"linecap_build_info", "linecapd build; always 1.", MetricType::gauge};

struct BuildInfo {
    std::string version;        // LINECAP_VERSION
    std::string dpdk_version;   // rte_version() without the "DPDK " prefix
};

BuildInfo current_build_info();

std::vector<prometheus::MetricFamily> build_metric_families(const MetricsSnapshot& snapshot,
                                                            const BuildInfo& build);

}  // namespace linecap
