// RSS plan and key symmetry, with the device-info values real ports report.
#include <gtest/gtest.h>
#include <rte_ethdev.h>

#include "dpdk/rss.hpp"

namespace linecap {
namespace {

// What the drivers put in rte_eth_dev_info (ixgbe_ethdev.h / i40e_ethdev.h, DPDK 22.11).
constexpr uint64_t kIxgbeRssOffloadAll = RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP | RTE_ETH_RSS_NONFRAG_IPV4_UDP |
                                         RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_NONFRAG_IPV6_TCP | RTE_ETH_RSS_NONFRAG_IPV6_UDP |
                                         RTE_ETH_RSS_IPV6_EX | RTE_ETH_RSS_IPV6_TCP_EX | RTE_ETH_RSS_IPV6_UDP_EX;
constexpr uint64_t kI40eRssOffloadAll = RTE_ETH_RSS_FRAG_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP |
                                        RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_NONFRAG_IPV4_SCTP |
                                        RTE_ETH_RSS_NONFRAG_IPV4_OTHER | RTE_ETH_RSS_FRAG_IPV6 |
                                        RTE_ETH_RSS_NONFRAG_IPV6_TCP | RTE_ETH_RSS_NONFRAG_IPV6_UDP |
                                        RTE_ETH_RSS_NONFRAG_IPV6_SCTP | RTE_ETH_RSS_NONFRAG_IPV6_OTHER |
                                        RTE_ETH_RSS_L2_PAYLOAD;
const RssDeviceCaps k82599{40, kIxgbeRssOffloadAll, 128};
const RssDeviceCaps kX710{52, kI40eRssOffloadAll, 512};

TEST(RssPlan, Ixgbe82599GetsA40ByteSymmetricKey) {
    RssPlan plan = plan_rss(RssMode::symmetric, 4, k82599);
    ASSERT_TRUE(plan.enabled);
    EXPECT_EQ(plan.key.size(), 40u);
    EXPECT_TRUE(rss_key_is_symmetric(plan.key));
    EXPECT_EQ(plan.hash_types, wanted_rss_hash_types() & kIxgbeRssOffloadAll);
    EXPECT_NE(plan.hash_types & RTE_ETH_RSS_NONFRAG_IPV4_TCP, 0u);
}

TEST(RssPlan, X710GetsA52ByteKeyAndTrimsWhatI40eLacks) {
    RssPlan plan = plan_rss(RssMode::symmetric, 8, kX710);
    ASSERT_TRUE(plan.enabled);
    EXPECT_EQ(plan.key.size(), 52u);
    EXPECT_TRUE(rss_key_is_symmetric(plan.key));
    // i40e has no plain IPV4/IPV6/IPV6_EX bits: they are trimmed and reported.
    EXPECT_EQ(plan.hash_types & (RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_IPV6), 0u);
    EXPECT_NE(plan.trimmed_types & RTE_ETH_RSS_IPV4, 0u);
    EXPECT_NE(plan.hash_types & RTE_ETH_RSS_NONFRAG_IPV6_UDP, 0u);
    EXPECT_FALSE(plan.note.empty());
}

TEST(RssPlan, DeviceDefaultKeepsTheDeviceKey) {
    RssPlan plan = plan_rss(RssMode::device_default, 2, k82599);
    EXPECT_TRUE(plan.enabled);
    EXPECT_TRUE(plan.key.empty());
}

TEST(RssPlan, OneQueueOrOffMeansNoRss) {
    EXPECT_FALSE(plan_rss(RssMode::symmetric, 1, k82599).enabled);
    EXPECT_FALSE(plan_rss(RssMode::off, 4, k82599).enabled);
}

TEST(RssPlan, DeviceWithoutRssIsReported) {
    RssPlan plan = plan_rss(RssMode::symmetric, 2, RssDeviceCaps{0, 0, 0});
    EXPECT_FALSE(plan.enabled);
    EXPECT_NE(plan.note.find("none"), std::string::npos);
}

TEST(RssKey, SymmetricForManyIpv4Flows) {
    for (size_t len : {40u, 52u}) {
        auto key = symmetric_rss_key(len);
        uint32_t x = 1;
        for (int i = 0; i < 20000; ++i) {
            x = x * 1103515245u + 12345u;
            uint32_t a = x, b = x * 2654435761u;
            uint16_t p = uint16_t(x >> 7), q = uint16_t(x >> 19);
            ASSERT_EQ(softrss_ipv4(key, a, b, p, q), softrss_ipv4(key, b, a, q, p)) << "flow " << i;
        }
    }
}

TEST(RssKey, SymmetricForIpv6Flows) {
    auto key = symmetric_rss_key(52);
    uint8_t a[16], b[16];
    for (int i = 0; i < 2000; ++i) {
        for (int j = 0; j < 16; ++j) {
            a[j] = uint8_t(i * 7 + j * 13);
            b[j] = uint8_t(i * 11 + j * 5 + 1);
        }
        uint16_t p = uint16_t(i * 31), q = uint16_t(443 + i);
        ASSERT_EQ(softrss_ipv6(key, a, b, p, q), softrss_ipv6(key, b, a, q, p)) << "flow " << i;
    }
}

TEST(RssKey, TheDefaultMicrosoftKeyIsNotSymmetric) {
    // The key most NICs ship with: proves the check can fail.
    const std::vector<uint8_t> ms_key = {
        0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
        0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
        0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};
    EXPECT_FALSE(rss_key_is_symmetric(ms_key));
}

TEST(RssKey, SpreadsFlowsOverQueues) {
    // Symmetric must not mean degenerate: the low bits (RETA index) still vary. (The
    // 0x6d5a key hashes the XOR of the tuple's 16-bit words, so the flows must vary
    // independently: client addresses and ephemeral ports drawn at random.)
    auto key = symmetric_rss_key(40);
    int buckets[4] = {};
    uint32_t x = 99;
    for (uint32_t i = 0; i < 4000; ++i) {
        x = x * 1103515245u + 12345u;
        buckets[softrss_ipv4(key, 0x0a000000 + (x >> 12), 0x0a800001, uint16_t(1024 + (x >> 3) % 60000), 443) & 3]++;
    }
    for (int b : buckets) EXPECT_GT(b, 600);
}

}  // namespace
}  // namespace linecap
