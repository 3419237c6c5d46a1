// The HTTP side: MetricsExporter on 127.0.0.1 with an ephemeral port (listen port 0),
// real requests over TCP.
#include <gtest/gtest.h>
#include <prometheus/counter.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "fake_capture.hpp"
#include "http_client.hpp"
#include "metrics/exporter.hpp"
#include "scrape_text.hpp"

namespace linecap::test {
namespace {

MetricsConfig local_ephemeral() { return MetricsConfig{.enabled = true, .listen = "127.0.0.1:0"}; }

class EndpointTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto started = MetricsExporter::start(local_ephemeral(), capture.make_collector());
        ASSERT_TRUE(started.ok()) << started.error().message;
        exporter = std::move(started.value());
        ASSERT_NE(exporter->port(), 0);
    }

    FakeCapture capture;
    std::unique_ptr<MetricsExporter> exporter;
};

TEST_F(EndpointTest, HealthzIsOkWhileTheProcessRuns) {
    const HttpReply r = http_get(exporter->port(), "/healthz");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "ok\n");
}

TEST_F(EndpointTest, ReadyGoesFrom503To200WhenWorkersPollAndLinksAreUp) {
    // Workers not polling yet, physical port wan has its link down.
    capture.port_stats->ports[0].link.up = false;
    exporter->collect();
    HttpReply r = http_get(exporter->port(), "/ready");
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(r.body, "port wan: link down\n");

    capture.port_stats->ports[0].link.up = true;
    exporter->collect();
    r = http_get(exporter->port(), "/ready");
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(r.body, "worker on lcore 1 is not polling\n");

    capture.all_polling(true);   // the vdev "tap" still reports its link down: ignored
    exporter->collect();
    r = http_get(exporter->port(), "/ready");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "ready\n");

    capture.control[1].polling.store(false);   // a worker exits: not ready again
    exporter->collect();
    EXPECT_EQ(http_get(exporter->port(), "/ready").status, 503);
}

TEST_F(EndpointTest, MetricsServesTheTextFormat) {
    capture.fill_distinct_values();
    exporter->collect();
    const HttpReply r = http_get(exporter->port(), "/metrics");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    EXPECT_EQ(r.body, exporter->scrape());
    const Scrape s = parse_scrape(r.body);
    EXPECT_EQ(s.value("linecap_rx_packets_total", {{"port", "tap"}, {"queue", "0"}}), 3100);
    EXPECT_EQ(s.value("linecap_build_info", {{"version", "9.9.9-test"}, {"dpdk_version", "22.11.99"}}), 1);
}

// /status is the same snapshot as /metrics: per port, the sums over its queues and the
// drops by reason, for the retrieval API's status.
TEST_F(EndpointTest, StatusIsTheSnapshotAsJson) {
    capture.fill_distinct_values();
    exporter->collect();
    const HttpReply r = http_get(exporter->port(), "/status");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.header("content-type"), "application/json");
    const auto status = nlohmann::json::parse(r.body);
    const Scrape s = parse_scrape(exporter->scrape());
    ASSERT_EQ(status["ports"].size(), 2u) << r.body;
    for (const auto& p : status["ports"]) {
        const std::string port = p["port"];
        EXPECT_EQ(p["received_packets"].get<double>(), s.sum("linecap_rx_packets_total", {{"port", port}})) << port;
        EXPECT_EQ(p["received_bytes"].get<double>(), s.sum("linecap_rx_bytes_total", {{"port", port}})) << port;
        EXPECT_EQ(p["written_packets"].get<double>(), s.sum("linecap_written_packets_total", {{"port", port}}))
            << port;
        EXPECT_EQ(p["filtered_packets"].get<double>(), s.sum("linecap_filtered_packets_total", {{"port", port}}))
            << port;
        EXPECT_EQ(p["dropped_packets"].get<double>(), s.sum("linecap_dropped_packets_total", {{"port", port}}))
            << port;
        EXPECT_GT(p["dropped_packets"].get<double>(), 0) << port;
        for (const auto& [reason, n] : p["dropped"].items())
            EXPECT_EQ(n.get<double>(),
                      s.sum("linecap_dropped_packets_total", {{"port", port}, {"reason", reason}}))
                << port << " " << reason;
        EXPECT_EQ(p["link_up"].get<bool>(), s.value("linecap_port_link_up", {{"port", port}}) == 1) << port;
    }
    EXPECT_EQ(status["retention"]["bytes"].get<double>(), s.value("linecap_retention_bytes"));
}

// output.volumes: /status lists each volume's state and what it wrote and lost.
TEST(EndpointVolumes, StatusListsTheVolumes) {
    FakeCapture capture;
    capture.volumes_on = true;
    capture.volume[0].healthy.store(1);
    capture.volume[0].streams.store(3);
    capture.volume[0].written_packets.store(500);
    capture.volume[1].write_error_packets.store(64);
    capture.volume[1].stalls.store(1);
    auto started = MetricsExporter::start(local_ephemeral(), capture.make_collector());
    ASSERT_TRUE(started.ok()) << started.error().message;
    started.value()->collect();
    const HttpReply r = http_get(started.value()->port(), "/status");
    ASSERT_EQ(r.status, 200);
    const auto status = nlohmann::json::parse(r.body);
    ASSERT_EQ(status["volumes"].size(), 2u) << r.body;
    EXPECT_EQ(status["volumes"][0]["directory"], "/captures/a");
    EXPECT_EQ(status["volumes"][0]["state"], "healthy");
    EXPECT_EQ(status["volumes"][0]["streams"], 3);
    EXPECT_EQ(status["volumes"][0]["written_packets"], 500);
    EXPECT_EQ(status["volumes"][1]["state"], "failed");
    EXPECT_EQ(status["volumes"][1]["dropped"]["write_error"], 64);
    EXPECT_EQ(status["volumes"][1]["stalls"], 1);
}

TEST_F(EndpointTest, TheFirstScrapeAlreadyHasData) {
    // start() collected once: streams are there (at zero) before the control loop runs.
    const Scrape s = parse_scrape(http_get(exporter->port(), "/metrics").body);
    EXPECT_EQ(s.value("linecap_rx_packets_total", {{"port", "wan"}, {"queue", "1"}}), 0);
}

TEST_F(EndpointTest, RegistryFamiliesAreScrapedToo) {
    auto& horizon = prometheus::BuildCounter()
                        .Name("linecap_test_extra_total")
                        .Help("registered by another part of the daemon")
                        .Register(exporter->registry());
    horizon.Add({}).Increment(3);
    const Scrape s = parse_scrape(http_get(exporter->port(), "/metrics").body);
    EXPECT_EQ(s.value("linecap_test_extra_total"), 3);
}

TEST_F(EndpointTest, HeadHasNoBody) {
    const HttpReply r = http_request(exporter->port(), "HEAD", "/healthz");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "");
}

TEST_F(EndpointTest, OnlyItsPathsExist) {
    EXPECT_EQ(http_get(exporter->port(), "/").status, 404);
    EXPECT_EQ(http_get(exporter->port(), "/metrics/extra").status, 404);
    EXPECT_EQ(http_get(exporter->port(), "/etc/passwd").status, 404);
    EXPECT_EQ(http_request(exporter->port(), "POST", "/ready").status, 405);
}

TEST_F(EndpointTest, ScrapesWhileTheControlThreadCollects) {
    std::atomic<bool> done{false};
    std::thread control([&] {
        for (uint64_t i = 1; !done.load(); ++i) {
            capture.queue[0].rx_packets.set(i);
            exporter->collect();
        }
    });
    double last = 0;
    for (int i = 0; i < 50; ++i) {
        const Scrape s = parse_scrape(http_get(exporter->port(), "/metrics").body);
        const double rx = s.value("linecap_rx_packets_total", {{"port", "wan"}, {"queue", "0"}}).value_or(-1);
        EXPECT_GE(rx, last);   // counters never go backwards between scrapes
        last = rx;
    }
    done.store(true);
    control.join();
}

// civetweb's accept loop only looks at its stop flag every 2 s; the server wakes it so
// that daemon shutdown does not wait for that.
TEST(EndpointShutdown, StopsWellWithinCivetwebsPollTimeout) {
    FakeCapture capture;
    auto started = MetricsExporter::start(local_ephemeral(), capture.make_collector());
    ASSERT_TRUE(started.ok()) << started.error().message;
    const auto begin = std::chrono::steady_clock::now();
    started.value().reset();
    EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::milliseconds(1000));
}

// The local address of our listening socket, as /proc/net/tcp shows it ("0100007F" is
// 127.0.0.1, "00000000" the wildcard).
std::string listening_address_hex(uint16_t port) {
    std::ifstream tcp("/proc/net/tcp");
    std::string line;
    std::getline(tcp, line);  // header
    while (std::getline(tcp, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state;
        fields >> slot >> local >> remote >> state;
        const size_t colon = local.find(':');
        if (state == "0A" && std::stoul(local.substr(colon + 1), nullptr, 16) == port) return local.substr(0, colon);
    }
    return "not listening";
}

TEST_F(EndpointTest, ListensOnLoopbackOnlyWhenConfiguredSo) {
    EXPECT_EQ(listening_address_hex(exporter->port()), "0100007F");
}

TEST(EndpointBind, AllInterfacesOnlyWhenConfigured) {
    FakeCapture capture;
    auto started = MetricsExporter::start(MetricsConfig{.enabled = true, .listen = "0.0.0.0:0"}, capture.make_collector());
    ASSERT_TRUE(started.ok()) << started.error().message;
    EXPECT_EQ(listening_address_hex(started.value()->port()), "00000000");
    EXPECT_EQ(http_get(started.value()->port(), "/healthz").status, 200);
}

TEST(EndpointBind, PortInUseIsAClearErrorNamingTheAddress) {
    // Hold a listening socket on an ephemeral port, then ask the exporter for it.
    const int holder = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(holder, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(listen(holder, 1), 0);
    socklen_t length = sizeof address;
    getsockname(holder, reinterpret_cast<sockaddr*>(&address), &length);
    const std::string listen_at = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));

    FakeCapture capture;
    auto started = MetricsExporter::start(MetricsConfig{.enabled = true, .listen = listen_at}, capture.make_collector());
    close(holder);
    ASSERT_FALSE(started.ok());
    EXPECT_EQ(started.error().message, "metrics endpoint: cannot listen on " + listen_at + ": Address already in use");
}

TEST(EndpointBind, UnavailableAddressIsAClearError) {
    FakeCapture capture;
    // TEST-NET-1: not assigned to any local interface.
    auto started = MetricsExporter::start(MetricsConfig{.enabled = true, .listen = "192.0.2.1:0"}, capture.make_collector());
    ASSERT_FALSE(started.ok());
    EXPECT_EQ(started.error().message,
              "metrics endpoint: cannot listen on 192.0.2.1:0: Cannot assign requested address");
}

TEST(EndpointBind, LocalhostMeansIpv4Loopback) {
    FakeCapture capture;
    auto started = MetricsExporter::start(MetricsConfig{.enabled = true, .listen = "localhost:0"}, capture.make_collector());
    ASSERT_TRUE(started.ok()) << started.error().message;
    EXPECT_EQ(http_get(started.value()->port(), "/healthz").status, 200);
}

TEST(EndpointBind, Ipv6WorksOrSaysWhyNot) {
    FakeCapture capture;
    auto started = MetricsExporter::start(MetricsConfig{.enabled = true, .listen = "[::1]:0"}, capture.make_collector());
    if (started.ok()) {
        EXPECT_NE(started.value()->port(), 0);
    } else {
        // Debian's civetweb is built without IPv6.
        EXPECT_EQ(started.error().message,
                  "metrics endpoint: cannot listen on [::1]:0: the installed civetweb library has no IPv6 support; "
                  "listen on an IPv4 address");
    }
}

TEST(EndpointBind, AddressWithoutPortIsAnError) {
    FakeCapture capture;
    auto started = MetricsExporter::start(MetricsConfig{.enabled = true, .listen = "9475"}, capture.make_collector());
    ASSERT_FALSE(started.ok());
    EXPECT_EQ(started.error().message, "metrics endpoint: expected host:port, got '9475'");
}

TEST(EndpointDisabled, CollectsButDoesNotListen) {
    FakeCapture capture;
    auto started = MetricsExporter::start(MetricsConfig{.enabled = false, .listen = "127.0.0.1:0"}, capture.make_collector());
    ASSERT_TRUE(started.ok());
    EXPECT_EQ(started.value()->port(), 0);
    EXPECT_NE(started.value()->scrape().find("linecap_build_info"), std::string::npos);
}

}  // namespace
}  // namespace linecap::test
