// Receive-side scaling plan: which hash key, which hash types, derived from what the
// device reports in rte_eth_dev_info. Pure functions, unit-tested with the values real
// 82599 (ixgbe) and X710 (i40e) ports report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace linecap {

// The repeated 0x6d5a key (Woo & Park, "Scalable TCP Session Monitoring with Symmetric
// Receive-side Scaling"): with it, Toeplitz gives the same hash for (src, dst, sport,
// dport) and (dst, src, dport, sport), so both directions of a conversation land on the
// same queue and therefore in the same file.
std::vector<uint8_t> symmetric_rss_key(size_t length);

// What the daemon asks for: IPv4/IPv6 addresses and TCP/UDP ports (RTE_ETH_RSS_IP |
// RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP).
uint64_t wanted_rss_hash_types();

struct RssDeviceCaps {
    uint8_t hash_key_size = 0;             // dev_info.hash_key_size (0 = not reported)
    uint64_t flow_type_rss_offloads = 0;   // dev_info.flow_type_rss_offloads
    uint16_t reta_size = 0;                // dev_info.reta_size
};

struct RssPlan {
    bool enabled = false;                  // mq_mode RSS
    uint64_t hash_types = 0;               // trimmed to the device
    uint64_t trimmed_types = 0;            // wanted but not offered (logged)
    std::vector<uint8_t> key;              // empty = device default key
    std::string note;                      // why RSS is off or what was trimmed
};

// rx_queues == 1 or mode off → no RSS. A device that offers none of the wanted hash
// types cannot spread queues: that is an error for rx_queues > 1 (returned as note with
// enabled=false and hash_types=0; the caller turns it into an error).
RssPlan plan_rss(RssMode mode, unsigned rx_queues, const RssDeviceCaps& caps);

// Toeplitz over an IPv4 4-tuple with DPDK's rte_softrss; used by tests and by the
// startup self-check that the key really is symmetric.
uint32_t softrss_ipv4(const std::vector<uint8_t>& key, uint32_t src, uint32_t dst,
                      uint16_t sport, uint16_t dport);
uint32_t softrss_ipv6(const std::vector<uint8_t>& key, const uint8_t src[16], const uint8_t dst[16],
                      uint16_t sport, uint16_t dport);
// Checks the key on a fixed set of sample flows in both directions.
bool rss_key_is_symmetric(const std::vector<uint8_t>& key);

}  // namespace linecap
