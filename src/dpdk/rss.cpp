#include "dpdk/rss.hpp"

#include <rte_ethdev.h>
#include <rte_thash.h>

namespace linecap {

std::vector<uint8_t> symmetric_rss_key(size_t length) {
    std::vector<uint8_t> key(length);
    for (size_t i = 0; i < length; ++i) key[i] = (i % 2 == 0) ? 0x6d : 0x5a;
    return key;
}

uint64_t wanted_rss_hash_types() { return RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP; }

RssPlan plan_rss(RssMode mode, unsigned rx_queues, const RssDeviceCaps& caps) {
    RssPlan plan;
    if (rx_queues <= 1) {
        plan.note = "one rx queue: RSS not needed";
        return plan;
    }
    if (mode == RssMode::off) {
        plan.note = "rss: off (all flows hash as the device's default mq mode decides)";
        return plan;
    }
    const uint64_t wanted = wanted_rss_hash_types();
    plan.hash_types = wanted & caps.flow_type_rss_offloads;
    plan.trimmed_types = wanted & ~caps.flow_type_rss_offloads;
    if (plan.hash_types == 0) {
        plan.note = "device offers none of the IP/TCP/UDP RSS hash types";
        return plan;
    }
    plan.enabled = true;
    if (mode == RssMode::symmetric) {
        // ixgbe reports 40 bytes, i40e 52; a PMD that reports 0 takes the common 40.
        plan.key = symmetric_rss_key(caps.hash_key_size ? caps.hash_key_size : 40);
    }
    if (plan.trimmed_types) plan.note = "some RSS hash types are not offered by the device and were dropped";
    return plan;
}

namespace {

uint32_t softrss(const std::vector<uint8_t>& key, uint32_t* tuple, uint32_t words) {
    return rte_softrss(tuple, words, key.data());
}

}  // namespace

uint32_t softrss_ipv4(const std::vector<uint8_t>& key, uint32_t src, uint32_t dst,
                      uint16_t sport, uint16_t dport) {
    rte_ipv4_tuple t{};
    t.src_addr = src;
    t.dst_addr = dst;
    t.sport = sport;
    t.dport = dport;
    return softrss(key, reinterpret_cast<uint32_t*>(&t), RTE_THASH_V4_L4_LEN);
}

uint32_t softrss_ipv6(const std::vector<uint8_t>& key, const uint8_t src[16], const uint8_t dst[16],
                      uint16_t sport, uint16_t dport) {
    // Host-order words, as rte_thash_load_v6_addrs produces them for rte_softrss.
    rte_ipv6_tuple t{};
    for (int i = 0; i < 4; ++i) {
        t.src_addr[i * 4 + 0] = src[i * 4 + 3];
        t.src_addr[i * 4 + 1] = src[i * 4 + 2];
        t.src_addr[i * 4 + 2] = src[i * 4 + 1];
        t.src_addr[i * 4 + 3] = src[i * 4 + 0];
        t.dst_addr[i * 4 + 0] = dst[i * 4 + 3];
        t.dst_addr[i * 4 + 1] = dst[i * 4 + 2];
        t.dst_addr[i * 4 + 2] = dst[i * 4 + 1];
        t.dst_addr[i * 4 + 3] = dst[i * 4 + 0];
    }
    t.sport = sport;
    t.dport = dport;
    return softrss(key, reinterpret_cast<uint32_t*>(&t), RTE_THASH_V6_L4_LEN);
}

bool rss_key_is_symmetric(const std::vector<uint8_t>& key) {
    // A deterministic spread of addresses and ports; enough to catch any asymmetric key.
    uint32_t x = 0x12345678;
    auto next = [&x] {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        return x;
    };
    for (int i = 0; i < 1000; ++i) {
        uint32_t a = next(), b = next();
        uint16_t p = static_cast<uint16_t>(next()), q = static_cast<uint16_t>(next());
        if (softrss_ipv4(key, a, b, p, q) != softrss_ipv4(key, b, a, q, p)) return false;
    }
    return true;
}

}  // namespace linecap
