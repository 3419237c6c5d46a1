// plan_rx_timestamps: capture.timestamps and what a device reports (rte_eth_dev_info's
// rx_offload_capa, as port_info_from_dev_info reads it) decide where a port's stamps come
// from; `port` on a device without per-packet stamps is refused, naming port and driver.
#include <gtest/gtest.h>

#include <rte_ethdev.h>

#include "dpdk/port.hpp"
#include "dpdk/rx_timestamp.hpp"

namespace linecap {
namespace {

PortInfo device(const char* driver, uint64_t rx_offload_capa) {
    rte_eth_dev_info dev_info{};
    dev_info.driver_name = driver;
    dev_info.rx_offload_capa = rx_offload_capa;
    return port_info_from_dev_info(0, 0, dev_info);
}

// What ixgbe (82599) and i40e (X710) report in DPDK 22.11: no RTE_ETH_RX_OFFLOAD_TIMESTAMP.
constexpr uint64_t kIxgbeRxOffloads = RTE_ETH_RX_OFFLOAD_VLAN_STRIP | RTE_ETH_RX_OFFLOAD_IPV4_CKSUM |
                                      RTE_ETH_RX_OFFLOAD_UDP_CKSUM | RTE_ETH_RX_OFFLOAD_TCP_CKSUM |
                                      RTE_ETH_RX_OFFLOAD_SCATTER | RTE_ETH_RX_OFFLOAD_RSS_HASH;

TEST(RxTimestampPlan, IxgbeUnderAutoUsesTheTsc) {
    auto plan = plan_rx_timestamps(TimestampMode::auto_, "wan0", device("net_ixgbe", kIxgbeRxOffloads));
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->source, StampSource::tsc);
    EXPECT_FALSE(plan->request_offload);
    EXPECT_NE(plan->note.find("net_ixgbe has no per-packet rx timestamp"), std::string::npos) << plan->note;
}

TEST(RxTimestampPlan, PortModeRefusesI40eNamingPortDriverAndPtp) {
    auto plan = plan_rx_timestamps(TimestampMode::port, "wan1", device("net_i40e", kIxgbeRxOffloads));
    ASSERT_FALSE(plan);
    EXPECT_TRUE(plan.error().config);
    const std::string& m = plan.error().message;
    EXPECT_NE(m.find("capture.timestamps: port: port wan1: net_i40e has no per-packet rx timestamp"), std::string::npos) << m;
    EXPECT_NE(m.find("stamp only PTP packets"), std::string::npos) << m;
}

TEST(RxTimestampPlan, ADeviceOfferingTheOffloadStampsWithItsClock) {
    auto plan = plan_rx_timestamps(TimestampMode::port, "p", device("net_ice", kIxgbeRxOffloads | RTE_ETH_RX_OFFLOAD_TIMESTAMP));
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->source, StampSource::port_clock);
    EXPECT_TRUE(plan->request_offload);
}

TEST(RxTimestampPlan, NetPcapHandsOverTheFilesMicroseconds) {
    auto plan = plan_rx_timestamps(TimestampMode::auto_, "p", device("net_pcap", 0));
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->source, StampSource::port_utc);
    EXPECT_EQ(plan->ns_per_unit, 1000u);
    EXPECT_FALSE(plan->request_offload);
}

TEST(RxTimestampPlan, TscModeNeverReadsThePort) {
    auto plan = plan_rx_timestamps(TimestampMode::tsc, "p", device("net_ice", RTE_ETH_RX_OFFLOAD_TIMESTAMP));
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->source, StampSource::tsc);
    EXPECT_FALSE(plan->request_offload);
}

}  // namespace
}  // namespace linecap
