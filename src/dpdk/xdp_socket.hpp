// The AF_XDP sockets behind net_af_xdp ports, and what the kernel counts for each.
//
// DPDK 22.11's af_xdp PMD folds a socket's rx_dropped into the port's imissed and reads
// nothing else of XDP_STATISTICS, so a frame the kernel could not deliver because the
// socket's rx ring was full is counted nowhere, and one dropped for an empty fill ring
// (the PMD did not hand the kernel buffers in time) is a bare imissed. Reading the
// statistics here names both (metrics/collector.cpp turns them into drop reasons).
//
// The PMD creates a queue's socket inside rte_eth_rx_queue_setup and gives no way to ask
// for it, so Port::open notes which AF_XDP socket appeared in this process across each
// queue's setup (xdp_socket_fds before and after).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace linecap {

// This process's open AF_XDP sockets (their descriptors, ascending), from /proc/self/fd.
std::vector<int> xdp_socket_fds();

// XDP_STATISTICS of one socket (kernel >= 5.9 for the ring counters).
struct XdpSocketCounts {
    uint64_t rx_dropped = 0;       // in the PMD's imissed; includes fill_ring_empty
    uint64_t rx_ring_full = 0;     // not in imissed: the socket's rx ring had no room
    uint64_t fill_ring_empty = 0;  // rx_fill_ring_empty_descs: no buffer to receive into
};
// nullopt when the descriptor is no AF_XDP socket or the kernel does not say.
std::optional<XdpSocketCounts> read_xdp_socket_counts(int fd);

}  // namespace linecap
