// The capture plan with the device capabilities 82599 and X710 ports report (fake
// rte_eth_dev_info, as tests/dpdk/rss_test.cpp does for RSS), and with the assumptions made
// before EAL probes the devices.
#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "capture/plan.hpp"

namespace linecap {
namespace {

// What the drivers put in rte_eth_dev_info (DPDK 22.11): ixgbe_dev_info_get for an 82599
// PF (IXGBE_MIN/MAX_RING_DESC 32/4096, IXGBE_RXD_ALIGN 8, 128 queues, max_rx_pktlen 15872
// less IXGBE_ETH_OVERHEAD 26) and i40e_dev_info_get for an X710 PF (I40E_MIN/MAX_RING_DESC
// 64/4096, I40E_ALIGN_RING_DESC 32, the default 64 LAN queue pairs, I40E_FRAME_SIZE_MAX 9728
// less I40E_ETH_OVERHEAD 26). Both offer scattered rx.
rte_eth_dev_info fake_dev_info(const char* driver, uint16_t queues, uint16_t desc_min, uint16_t desc_max,
                               uint16_t desc_align, uint16_t max_mtu) {
    rte_eth_dev_info info{};
    info.driver_name = driver;
    info.max_rx_queues = queues;
    info.rx_desc_lim.nb_min = desc_min;
    info.rx_desc_lim.nb_max = desc_max;
    info.rx_desc_lim.nb_align = desc_align;
    info.max_mtu = max_mtu;
    info.rx_offload_capa = RTE_ETH_RX_OFFLOAD_SCATTER | RTE_ETH_RX_OFFLOAD_CHECKSUM;
    return info;
}

PortInfo ixgbe_82599(int socket) {
    return port_info_from_dev_info(0, socket, fake_dev_info("net_ixgbe", 128, 32, 4096, 8, 15846));
}
PortInfo i40e_x710(int socket) {
    return port_info_from_dev_info(0, socket, fake_dev_info("net_i40e", 64, 64, 4096, 32, 9702));
}

Config config_from(const std::string& yaml) {
    auto config = parse_config(yaml, "plan_test.yaml");
    EXPECT_TRUE(config) << (config ? "" : config.error().message);
    return config.value();
}

// Two ports on socket 0, four workers.
const char* kTwoPorts = R"(
eal: {lcores: "0-4"}
ports:
  - {name: a, device: "0000:03:00.0", rx_queues: 4, rx_descriptors: 4096}
  - {name: b, device: "0000:03:00.1", rx_queues: 4, rx_descriptors: 4096}
output: {directory: /tmp, block_size_kb: 1024, blocks_per_queue: 32}
)";

TEST(CapturePlan, Ixgbe82599KeepsTheRequestAndSizesOnePoolPerSocket) {
    const Config config = config_from(kTwoPorts);
    auto plan = plan_capture(config, {ixgbe_82599(0), ixgbe_82599(0)});
    ASSERT_TRUE(plan) << plan.error().message;
    EXPECT_TRUE(plan->probed);
    EXPECT_TRUE(plan->adjustments.empty());
    ASSERT_EQ(plan->sockets.size(), 1u);
    const SocketPlan& s = plan->sockets.at(0);
    EXPECT_EQ(s.queues, 8u);
    EXPECT_EQ(s.descriptors, 8u * 4096);
    EXPECT_EQ(s.workers, 4u);
    // (32768 + 4 × (64 + 256) + 256) × 1.25 = 42880 → 2^16 − 1
    EXPECT_EQ(s.mbufs, 65535u);
    EXPECT_EQ(s.mbuf_data_room, unsigned(RTE_MBUF_DEFAULT_BUF_SIZE));
    EXPECT_GE(s.mbuf_footprint, sizeof(rte_mbuf) + RTE_MBUF_DEFAULT_BUF_SIZE);
    EXPECT_EQ(s.block_bytes, 8ull * 32 * 1024 * 1024);
    EXPECT_EQ(plan->hugepage_bytes, s.bytes() + CapturePlan::kEalOverheadBytes);
    EXPECT_EQ(plan->total_hugepages(), plan->socket_hugepages(0) + CapturePlan::kEalOverheadBytes / (2 << 20));
    for (const PortSetup& p : plan->ports) {
        EXPECT_EQ(p.rx_descriptors, 4096u);
        EXPECT_EQ(p.mtu, 1500u);
        EXPECT_FALSE(p.scatter);
    }
    ASSERT_EQ(plan->workers.size(), 4u);
    EXPECT_EQ(plan->workers[0].lcore, 1u);
    EXPECT_EQ(plan->workers[0].queues.size(), 2u);
}

TEST(CapturePlan, X710AlignsDescriptorsAndReportsIt) {
    Config config = config_from(kTwoPorts);
    config.ports[0].rx_descriptors = 1000;  // not a multiple of 32
    config.ports[1].rx_descriptors = 32;    // below the i40e minimum
    auto plan = plan_capture(config, {i40e_x710(0), i40e_x710(0)});
    ASSERT_TRUE(plan) << plan.error().message;
    EXPECT_EQ(plan->ports[0].rx_descriptors, 1024u);
    EXPECT_EQ(plan->ports[1].rx_descriptors, 64u);
    ASSERT_EQ(plan->adjustments.size(), 2u);
    EXPECT_NE(plan->adjustments[0].find("port a: rx_descriptors 1000 → 1024 (net_i40e limits: 64..4096, multiple of 32)"),
              std::string::npos)
        << plan->adjustments[0];
    EXPECT_EQ(plan->sockets.at(0).descriptors, 4u * 1024 + 4u * 64);

    // The 82599 takes 1000 as it is (multiple of 8), and 32 (its minimum).
    auto ixgbe = plan_capture(config, {ixgbe_82599(0), ixgbe_82599(0)});
    ASSERT_TRUE(ixgbe);
    EXPECT_EQ(ixgbe->ports[0].rx_descriptors, 1000u);
    EXPECT_EQ(ixgbe->ports[1].rx_descriptors, 32u);
    EXPECT_TRUE(ixgbe->adjustments.empty());
}

TEST(CapturePlan, JumboFramesScatterOnProbedPortsAndNeedLargeMbufsBefore) {
    Config config = config_from(kTwoPorts);
    for (PortConfig& p : config.ports) p.mtu = 9000;
    auto probed = plan_capture(config, {i40e_x710(0), i40e_x710(0)});
    ASSERT_TRUE(probed);
    EXPECT_EQ(probed->sockets.at(0).mbuf_data_room, unsigned(RTE_MBUF_DEFAULT_BUF_SIZE));
    EXPECT_TRUE(probed->ports[0].scatter);

    // Before the probe scattered rx is not assumed: each mbuf holds a whole frame.
    auto assumed = plan_capture(config, {assumed_port_info(config.ports[0], 0), assumed_port_info(config.ports[1], 0)});
    ASSERT_TRUE(assumed);
    EXPECT_FALSE(assumed->probed);
    EXPECT_EQ(assumed->sockets.at(0).mbuf_data_room, max_frame_len(9000) + RTE_PKTMBUF_HEADROOM);
    EXPECT_FALSE(assumed->ports[0].scatter);
}

// The point of the assumptions: what preflight and linecap-hugepages reserve before the
// probe is never less than what the engine allocates after it.
TEST(CapturePlan, AssumedCapabilitiesNeverPlanLessThanProbedOnes) {
    for (unsigned mtu : {1500u, 9000u}) {
        for (unsigned descriptors : {64u, 1024u, 4096u, 8192u}) {
            Config config = config_from(kTwoPorts);
            for (PortConfig& p : config.ports) {
                p.mtu = mtu;
                p.rx_descriptors = descriptors;
            }
            auto assumed =
                plan_capture(config, {assumed_port_info(config.ports[0], 0), assumed_port_info(config.ports[1], 0)});
            ASSERT_TRUE(assumed);
            for (const PortInfo& nic : {ixgbe_82599(0), i40e_x710(0)}) {
                auto probed = plan_capture(config, {nic, nic});
                ASSERT_TRUE(probed);
                EXPECT_GE(assumed->hugepage_bytes, probed->hugepage_bytes)
                    << nic.driver << " mtu " << mtu << " descriptors " << descriptors;
            }
        }
    }
}

TEST(CapturePlan, MtuAboveTheDeviceMaximumIsTrimmed) {
    Config config = config_from(kTwoPorts);
    config.ports[0].mtu = 9000;
    PortInfo small = i40e_x710(0);
    small.max_mtu = 1500;
    auto plan = plan_capture(config, {small, i40e_x710(0)});
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->ports[0].mtu, 1500u);
    ASSERT_EQ(plan->adjustments.size(), 1u);
    EXPECT_NE(plan->adjustments[0].find("mtu 9000 → 1500"), std::string::npos);
}

TEST(CapturePlan, MoreQueuesThanTheDeviceHasIsAnError) {
    Config config = config_from(kTwoPorts);
    config.ports[1].rx_queues = 65;
    config.eal.lcores = "0-1";
    config.eal.lcore_ids = {0, 1};
    auto plan = plan_capture(config, {i40e_x710(0), i40e_x710(0)});
    ASSERT_FALSE(plan);
    EXPECT_NE(plan.error().message.find("ports[b].rx_queues 65: net_i40e has at most 64"), std::string::npos)
        << plan.error().message;
}

TEST(CapturePlan, PoolsAndWorkersPerSocket) {
    const Config config = config_from(R"(
eal: {lcores: "0-2"}
ports:
  - {name: near, device: "0000:03:00.0", rx_queues: 2, rx_descriptors: 1024}
  - {name: far, device: "0000:81:00.0", rx_queues: 1, rx_descriptors: 1024}
capture:
  workers:
    - {lcore: 1, queues: ["near:0"]}
    - {lcore: 2, queues: ["near:1", "far:0"]}
output: {directory: /tmp}
)");
    auto plan = plan_capture(config, {ixgbe_82599(0), ixgbe_82599(1)});
    ASSERT_TRUE(plan) << plan.error().message;
    ASSERT_EQ(plan->sockets.size(), 2u);
    EXPECT_EQ(plan->sockets.at(0).workers, 2u);  // lcores 1 and 2 poll near
    EXPECT_EQ(plan->sockets.at(1).workers, 1u);  // lcore 2 polls far
    EXPECT_EQ(plan->sockets.at(0).ports, std::vector<size_t>{0});
    EXPECT_EQ(plan->sockets.at(1).ports, std::vector<size_t>{1});
    // (1024 + 1 × 320 + 256) × 1.25 = 2000 → 2047
    EXPECT_EQ(plan->sockets.at(1).mbufs, 2047u);
}

TEST(CapturePlan, MemoryMbAndFixedMbufCount) {
    Config config = config_from(kTwoPorts);
    config.capture.mbufs = 8191;
    config.eal.memory_mb = 4096;
    auto plan = plan_capture(config, {ixgbe_82599(0), ixgbe_82599(0)});
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->sockets.at(0).mbufs, 8191u);
    EXPECT_EQ(plan->hugepage_bytes, 4096ull << 20);
    // The socket's part and the rest of the 4096 MiB are each rounded up to whole pages.
    EXPECT_EQ(plan->total_hugepages(), 2049u);

    config.eal.hugepages = false;
    auto nohuge = plan_capture(config, {ixgbe_82599(0), ixgbe_82599(0)});
    ASSERT_TRUE(nohuge);
    EXPECT_EQ(nohuge->total_hugepages(), 0u);
    EXPECT_NE(describe_plan(config, nohuge.value()).find("hugepages_2m: 0\n"), std::string::npos);
}

TEST(CapturePlan, AfXdpIsAssumedFromTheVdevName) {
    Config config = config_from(R"(
eal: {lcores: "0-1", hugepages: false}
ports:
  - {name: v, device: "net_af_xdp0,iface=veth0", rx_queues: 1, rx_descriptors: 1024}
output: {directory: /tmp}
)");
    const PortInfo info = assumed_port_info(config.ports[0], -1);
    EXPECT_EQ(info.driver, "net_af_xdp");
    auto plan = plan_capture(config, {info});
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->ports[0].rx_descriptors, 4096u);
    EXPECT_EQ(plan->sockets.count(-1), 1u);
}

TEST(CapturePlan, DescribeHasTheLinesTheHugepageScriptReads) {
    const Config config = config_from(kTwoPorts);
    auto plan = plan_capture(config, {assumed_port_info(config.ports[0], 1), assumed_port_info(config.ports[1], 1)});
    ASSERT_TRUE(plan);
    const std::string text = describe_plan(config, plan.value());
    EXPECT_NE(text.find("socket 1: ports a,b; 8 queues, 4 workers; pool 65535 mbufs"), std::string::npos) << text;
    EXPECT_NE(text.find("; hugepages_2m=" + std::to_string(plan->socket_hugepages(1)) + "\n"), std::string::npos);
    EXPECT_NE(text.find("\nhugepages_2m: " + std::to_string(plan->total_hugepages()) + "\n"), std::string::npos);
    EXPECT_NE(text.find("worker lcore 1: polls a:0 b:0\n"), std::string::npos) << text;
}

// capture.flow_cap and capture.dedup: their per-queue tables are hugepage memory of the
// socket of the ports they apply to, and --print-plan shows them.
TEST(CapturePlan, FlowCapAndDedupTablesAreCountedAndShown) {
    const Config config = config_from(std::string(kTwoPorts) + R"(
capture:
  flow_cap: {enabled: true, ports: [a], flows: 65536}
  dedup: {enabled: true, entries: 16384}
)");
    const Config without = config_from(kTwoPorts);
    auto plan = plan_capture(config, {ixgbe_82599(0), ixgbe_82599(0)});
    auto base = plan_capture(without, {ixgbe_82599(0), ixgbe_82599(0)});
    ASSERT_TRUE(plan && base);
    const SocketPlan& s = plan->sockets.at(0);
    EXPECT_EQ(s.flow_cap_queues, 4u);
    EXPECT_EQ(s.dedup_queues, 8u);
    EXPECT_EQ(s.flow_table_bytes, 4ull * 65536 * 16);
    EXPECT_EQ(s.dedup_table_bytes, 8ull * 16384 * 32);  // a 16-byte table entry and a 16-byte record
    EXPECT_EQ(plan->hugepage_bytes, base->hugepage_bytes + s.table_bytes());
    const std::string text = describe_plan(config, plan.value());
    EXPECT_NE(text.find("; flow tables 4 × 65536 × 16 B = 4 MiB; dedup tables 8 × 16384 × 32 B = 4 MiB; hugepages_2m="),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(" + flow/dedup tables 8.0 MiB"), std::string::npos) << text;
}

// What one queue absorbs at 10 Gbit/s: 812,744 frames/s of 1514 B (1538 B on the wire),
// 14.88 M of 60 B (84 B on the wire); records carry a 16-byte header.
TEST(CapturePlan, BurstHeadroomIsTheLineRatesTimeToFillRingAndBlocks) {
    const BurstHeadroom large = burst_headroom(4096, 32ull << 20, 1514);
    EXPECT_NEAR(large.ring_seconds, 4096 / (1.25e9 / 1538), 1e-9);
    EXPECT_NEAR(large.blocks_seconds, double(32ull << 20) / (1.25e9 / 1538 * 1530), 1e-9);
    EXPECT_NEAR(large.ring_seconds, 5.04e-3, 0.01e-3);
    EXPECT_NEAR(large.blocks_seconds, 27.0e-3, 0.1e-3);
    const BurstHeadroom small = burst_headroom(4096, 32ull << 20, 60);
    EXPECT_NEAR(small.ring_seconds, 0.275e-3, 0.001e-3);
    EXPECT_NEAR(small.blocks_seconds, 29.7e-3, 0.1e-3);
    // Twice the memory, twice the time.
    EXPECT_NEAR(burst_headroom(8192, 64ull << 20, 1514).blocks_seconds, 2 * large.blocks_seconds, 1e-12);

    const Config config = config_from(kTwoPorts);
    auto plan = plan_capture(config, {ixgbe_82599(0), ixgbe_82599(0)});
    ASSERT_TRUE(plan);
    const std::string text = describe_plan(config, plan.value());
    EXPECT_NE(text.find("burst headroom of one a queue at 10 Gbit/s, 1514 B (60 B) frames: rx ring "), std::string::npos)
        << text;
}

}  // namespace
}  // namespace linecap
