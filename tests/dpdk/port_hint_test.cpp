// rx_queue_setup_hint: a rejected rx queue setup names its likely cause and the key to change,
// from the facts port.cpp gathers (rte_eth_dev_info limits, the pool, the device string).
#include <gtest/gtest.h>

#include <initializer_list>
#include <string_view>

#include "dpdk/port.hpp"

namespace linecap {
namespace {

RxQueueSetupFacts ixgbe_like() {
    RxQueueSetupFacts f;
    f.driver = "net_ixgbe";
    f.queues = 2;
    f.descriptors = 4096;
    f.desc_min = 32;
    f.desc_max = 4096;
    f.desc_align = 8;
    f.pool_mbufs = 16383;
    f.pool_free = 16383;
    return f;
}

// Every one of `parts` is in the hint for `f`.
void expect_says(const RxQueueSetupFacts& f, std::initializer_list<std::string_view> parts) {
    const std::string hint = rx_queue_setup_hint(f);
    for (const std::string_view part : parts)
        EXPECT_NE(hint.find(part), std::string::npos) << "'" << part << "' missing from: " << hint;
}

TEST(RxQueueSetupHint, DescriptorsAboveTheDeviceLimitNameTheKeyAndTheLimits) {
    RxQueueSetupFacts f = ixgbe_like();
    f.descriptors = 8192;
    expect_says(f, {"ports[].rx_descriptors (now 8192)", "32..4096", "steps of 8"});
}

TEST(RxQueueSetupHint, MisalignedDescriptors) {
    RxQueueSetupFacts f = ixgbe_like();
    f.descriptors = 1020;
    expect_says(f, {"ports[].rx_descriptors (now 1020)"});
}

TEST(RxQueueSetupHint, NetPcapInfiniteRxNamesMbufsAndTheFileCopy) {
    // The case: net_pcap, rx_descriptors 1024, infinite_rx, a pool sized from the
    // descriptors that cannot also hold the file's packets.
    RxQueueSetupFacts f;
    f.driver = "net_pcap";
    f.infinite_rx = true;
    f.queues = 1;
    f.descriptors = 1024;
    f.desc_max = 65535;
    f.pool_mbufs = 4095;
    f.pool_free = 3800;
    expect_says(f, {"infinite_rx", "set capture.mbufs to at least the packets of all the files plus 1536",
                    "4095 mbufs, 3800 free", "capture.mbufs is 0 (sized from the descriptors)"});
}

TEST(RxQueueSetupHint, TooFewMbufsForTheDescriptors) {
    RxQueueSetupFacts f = ixgbe_like();
    f.pool_mbufs = 2047;
    f.pool_free = 1500;
    f.configured_mbufs = 2047;
    expect_says(f, {"1500 free mbufs of 2047 for 4096 descriptors", "capture.mbufs is 2047",
                    "raise capture.mbufs or lower ports[].rx_descriptors"});
}

TEST(RxQueueSetupHint, OtherwiseTheLimitsAndThePool) {
    expect_says(ixgbe_like(), {"32..4096 rx descriptors (asked 4096)", "16383 free mbufs of 16383"});
}

}  // namespace
}  // namespace linecap
