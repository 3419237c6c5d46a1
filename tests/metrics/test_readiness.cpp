// The /ready verdict from a snapshot: ports up (vdevs count as up once started) and
// every worker polling.
#include <gtest/gtest.h>

#include "metrics/readiness.hpp"

namespace linecap::test {
namespace {

MetricsSnapshot healthy() {
    MetricsSnapshot s;
    s.collected = true;
    s.ports = {
        PortSample{.name = "wan", .device = "0000:03:00.0", .identity = {"net_ixgbe", false}, .counters = {},
                   .link = {true, 10'000'000'000}},
        PortSample{.name = "tap", .device = "net_pcap0", .identity = {"net_pcap", true}, .counters = {},
                   .link = {false, 0}},
    };
    s.workers = {WorkerSample{.lcore = 1, .polling = true}, WorkerSample{.lcore = 2, .polling = true}};
    s.all_workers_polling = true;
    return s;
}

TEST(Readiness, ReadyWhenPortsUpAndWorkersPolling) {
    const Readiness r = evaluate_readiness(healthy());
    EXPECT_TRUE(r.ready);
    EXPECT_EQ(r.reason, "ready");
}

TEST(Readiness, NotReadyBeforeTheFirstCollection) {
    const Readiness r = evaluate_readiness(MetricsSnapshot{});
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.reason, "metrics not collected yet");
}

TEST(Readiness, PhysicalPortWithLinkDownIsNotReady) {
    MetricsSnapshot s = healthy();
    s.ports[0].link.up = false;
    const Readiness r = evaluate_readiness(s);
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.reason, "port wan: link down");
}

TEST(Readiness, VirtualDeviceCountsAsUpWhateverItsLinkSays) {
    MetricsSnapshot s = healthy();
    s.ports[1].link.up = false;
    EXPECT_TRUE(evaluate_readiness(s).ready);
    s.ports[1].link.up = true;
    EXPECT_TRUE(evaluate_readiness(s).ready);
}

TEST(Readiness, WorkerNotPollingIsNamed) {
    MetricsSnapshot s = healthy();
    s.workers[1].polling = false;
    s.all_workers_polling = false;
    const Readiness r = evaluate_readiness(s);
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.reason, "worker on lcore 2 is not polling");
}

TEST(Readiness, EngineVerdictOnWorkersIsFinal) {
    MetricsSnapshot s = healthy();
    s.all_workers_polling = false;   // e.g. stopped, though each flag was last seen set
    const Readiness r = evaluate_readiness(s);
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.reason, "workers are not polling");
}

TEST(Readiness, ReasonIsOneLine) {
    MetricsSnapshot s = healthy();
    s.ports[0].link.up = false;
    EXPECT_EQ(evaluate_readiness(s).reason.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace linecap::test
