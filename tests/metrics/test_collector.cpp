// MetricsCollector over fake views and fake port stats: every metric, its labels and its
// value; interval ratios from deltas; the histogram; counters that never go backwards.
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "fake_capture.hpp"
#include "scrape_text.hpp"
#include "util/utc_time.hpp"

namespace linecap::test {
namespace {

Scrape scrape(const MetricsCollector& collector) {
    return parse_scrape(prometheus::TextSerializer().Serialize(collector.Collect()));
}

// With a background service off (its FakeCapture flag false), its families are not exported.
void expect_absent_when_off(bool FakeCapture::*on, const char* name) {
    FakeCapture off;
    off.*on = false;
    auto quiet = off.make_collector();
    quiet->collect();
    EXPECT_TRUE(scrape(*quiet).series(name).empty()) << name;
}

class CollectorTest : public ::testing::Test {
protected:
    CollectorTest() : collector(capture.make_collector()) {}

    FakeCapture capture;
    std::unique_ptr<MetricsCollector> collector;
};

LabelSet q(const std::string& port, const std::string& queue) { return {{"port", port}, {"queue", queue}}; }
LabelSet drop(const std::string& port, const std::string& queue, const std::string& reason) {
    return {{"port", port}, {"queue", queue}, {"reason", reason}};
}

TEST_F(CollectorTest, PerQueueCountersCarryPortAndQueue) {
    capture.fill_distinct_values();
    collector->collect();
    const Scrape s = scrape(*collector);

    const struct {
        std::string port, queue;
        double base;
    } streams[] = {{"wan", "0", 1000}, {"wan", "1", 2000}, {"tap", "0", 3000}};
    for (const auto& st : streams) {
        SCOPED_TRACE(st.port + "/" + st.queue);
        EXPECT_EQ(s.value("linecap_rx_packets_total", q(st.port, st.queue)), st.base + 100);
        EXPECT_EQ(s.value("linecap_rx_bytes_total", q(st.port, st.queue)), st.base + 101);
        EXPECT_EQ(s.value("linecap_filtered_packets_total", q(st.port, st.queue)), st.base + 2);
        EXPECT_EQ(s.value("linecap_written_packets_total", q(st.port, st.queue)), st.base + 90);
        EXPECT_EQ(s.value("linecap_written_bytes_total", q(st.port, st.queue)), st.base + 91);
        EXPECT_EQ(s.value("linecap_output_file_bytes_total", q(st.port, st.queue)), st.base + 92);
        EXPECT_EQ(s.value("linecap_files_finalised_total", q(st.port, st.queue)), st.base + 5);
    }
    for (const char* name : {"linecap_rx_packets_total", "linecap_rx_bytes_total", "linecap_filtered_packets_total",
                             "linecap_written_packets_total", "linecap_written_bytes_total",
                             "linecap_output_file_bytes_total", "linecap_files_finalised_total"}) {
        EXPECT_EQ(s.series(name).size(), 3u) << name;
        EXPECT_EQ(s.types.at(name), "counter") << name;
    }
}

TEST_F(CollectorTest, DropsHaveAReasonAndQueueAllForPortLevelReasons) {
    capture.fill_distinct_values();
    collector->collect();
    const Scrape s = scrape(*collector);

    EXPECT_EQ(s.value("linecap_dropped_packets_total", drop("wan", "1", "writer_full")), 2003);
    EXPECT_EQ(s.value("linecap_dropped_packets_total", drop("wan", "1", "write_error")), 2004);
    EXPECT_EQ(s.value("linecap_dropped_packets_total", drop("wan", "1", "disk_full")), 2001);
    EXPECT_EQ(s.value("linecap_dropped_packets_total", drop("wan", "all", "nic_missed")), 7);
    EXPECT_EQ(s.value("linecap_dropped_packets_total", drop("wan", "all", "nic_error")), 8);
    EXPECT_EQ(s.value("linecap_dropped_packets_total", drop("wan", "all", "no_mbuf")), 9);
    EXPECT_EQ(s.value("linecap_dropped_packets_total", drop("tap", "all", "no_mbuf")), 3);
    // 3 per-queue reasons × 3 streams + 5 port reasons × 2 ports; every series has all three labels.
    const auto drops = s.series("linecap_dropped_packets_total");
    EXPECT_EQ(drops.size(), 19u);
    for (const Sample& d : drops) {
        EXPECT_EQ(d.labels.size(), 3u);
        EXPECT_TRUE(d.labels.count("reason"));
    }
    EXPECT_EQ(s.types.at("linecap_dropped_packets_total"), "counter");
}

TEST_F(CollectorTest, PortReceivedIsEverythingThatReachedThePort) {
    capture.fill_distinct_values();
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_EQ(s.value("linecap_port_received_packets_total", {{"port", "wan"}}), 5000 + 7 + 8 + 9);
    EXPECT_EQ(s.value("linecap_port_received_packets_total", {{"port", "tap"}}), 3000 + 1 + 2 + 3);
}

// The accounting contract: once the queues are drained, what reached the port is exactly
// written + filtered + dropped(all reasons). Feed numbers that obey it and check the
// exposition adds up the same way a PromQL query would.
TEST_F(CollectorTest, ReachedEqualsWrittenPlusFilteredPlusDropped) {
    capture.queue[0].rx_packets.set(100);
    capture.queue[0].filtered_packets.set(10);
    capture.queue[0].writer_full_packets.set(5);
    capture.output[0].written_packets.store(80);
    capture.output[0].disk_full_packets.store(3);
    capture.output[0].write_error_packets.store(2);
    capture.queue[1].rx_packets.set(50);
    capture.output[1].written_packets.store(50);
    capture.port_stats->ports[0].counters = {.ipackets = 150, .ibytes = 0, .imissed = 4, .ierrors = 1, .rx_nombuf = 2};
    collector->collect();
    const Scrape s = scrape(*collector);

    const LabelSet wan = {{"port", "wan"}};
    const double reached = *s.value("linecap_port_received_packets_total", wan);
    const double accounted = s.sum("linecap_written_packets_total", wan) + s.sum("linecap_filtered_packets_total", wan) +
                             s.sum("linecap_dropped_packets_total", wan);
    EXPECT_EQ(reached, 157);
    EXPECT_EQ(accounted, reached);
}

TEST_F(CollectorTest, PortLinkSpeedAndInfo) {
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_EQ(s.value("linecap_port_link_up", {{"port", "wan"}}), 1);
    EXPECT_EQ(s.value("linecap_port_link_up", {{"port", "tap"}}), 0);
    EXPECT_EQ(s.value("linecap_port_link_speed_bps", {{"port", "wan"}}), 10e9);
    EXPECT_EQ(s.value("linecap_port_link_speed_bps", {{"port", "tap"}}), 0);
    EXPECT_EQ(s.value("linecap_port_info", {{"port", "wan"}, {"device", "0000:03:00.0"}, {"driver", "net_ixgbe"}}), 1);
    EXPECT_EQ(s.value("linecap_port_info", {{"port", "tap"}, {"device", "net_pcap0,rx_pcap=a.pcap"}, {"driver", "net_pcap"}}),
              1);
    EXPECT_EQ(s.types.at("linecap_port_link_up"), "gauge");
}

TEST_F(CollectorTest, PortIdentityIsAskedOncePerPort) {
    collector->collect();
    collector->collect();
    collector->collect();
    EXPECT_EQ(capture.port_stats->identity_calls, 2);
}

TEST_F(CollectorTest, PortCountersNeverGoBackwards) {
    auto& wan = capture.port_stats->ports[0];
    wan.counters.imissed = 100;
    collector->collect();

    wan.read_fails = true;  // a failed read keeps the last totals
    collector->collect();
    EXPECT_EQ(scrape(*collector).value("linecap_dropped_packets_total", drop("wan", "all", "nic_missed")), 100);

    wan.read_fails = false;
    wan.counters.imissed = 30;  // the driver cleared its stats (port restart): 30 new drops
    collector->collect();
    EXPECT_EQ(scrape(*collector).value("linecap_dropped_packets_total", drop("wan", "all", "nic_missed")), 130);

    wan.counters.imissed = 35;
    collector->collect();
    EXPECT_EQ(scrape(*collector).value("linecap_dropped_packets_total", drop("wan", "all", "nic_missed")), 135);
}

// net_af_xdp: imissed includes the fill-ring drops its sockets count, read a moment after
// imissed. The split never double-counts, each part only grows, they always sum to
// imissed, and once traffic stops the fill-ring part is the socket's count exactly. The
// rx-ring-full drops are not in imissed: they add to what reached the port.
TEST_F(CollectorTest, AfXdpSocketDropsSplitImissedAndAddTheRingFull) {
    auto& wan = capture.port_stats->ports[0];
    const auto value = [&](const char* reason) {
        return scrape(*collector).value("linecap_dropped_packets_total", drop("wan", "all", reason));
    };
    wan.counters.ipackets = 1000;
    wan.counters.imissed = 100;
    wan.counters.xsk_fill_empty = 130;  // read later than imissed: 30 more arrived meanwhile
    wan.counters.xsk_ring_full = 5;
    collector->collect();
    EXPECT_EQ(value("xsk_fill_empty"), 100);
    EXPECT_EQ(value("nic_missed"), 0);
    EXPECT_EQ(value("xsk_ring_full"), 5);
    EXPECT_EQ(scrape(*collector).value("linecap_port_received_packets_total", {{"port", "wan"}}), 1000 + 100 + 5);

    wan.counters.imissed = 140;  // the 30, and 10 the PMD dropped itself
    collector->collect();
    EXPECT_EQ(value("xsk_fill_empty"), 130);
    EXPECT_EQ(value("nic_missed"), 10);

    collector->collect();  // quiet: unchanged, and exact
    EXPECT_EQ(value("xsk_fill_empty"), 130);
    EXPECT_EQ(value("nic_missed"), 10);
    EXPECT_EQ(scrape(*collector).value("linecap_port_received_packets_total", {{"port", "wan"}}), 1000 + 140 + 5);
}

TEST_F(CollectorTest, WorkerBusyRatioAndCyclesPerPacketComeFromTheLastInterval) {
    LcoreCounters& w = capture.lcore[0];
    // First interval (since start): 1000 cycles, 900 busy, 90 packets.
    w.total_cycles.set(1000);
    w.busy_cycles.set(900);
    w.packets.set(90);
    w.loops.set(10);
    collector->collect();
    Scrape s = scrape(*collector);
    EXPECT_DOUBLE_EQ(*s.value("linecap_worker_busy_ratio", {{"lcore", "1"}}), 0.9);
    EXPECT_DOUBLE_EQ(*s.value("linecap_worker_cycles_per_packet", {{"lcore", "1"}}), 10.0);
    EXPECT_EQ(s.value("linecap_worker_heartbeat_total", {{"lcore", "1"}}), 10);

    // Second interval: +3000 cycles, +300 busy, +100 packets → 0.1 and 3, not the
    // lifetime averages (1200/4000 = 0.3 and 1200/190).
    w.total_cycles.set(4000);
    w.busy_cycles.set(1200);
    w.packets.set(190);
    w.loops.set(25);
    collector->collect();
    s = scrape(*collector);
    EXPECT_DOUBLE_EQ(*s.value("linecap_worker_busy_ratio", {{"lcore", "1"}}), 0.1);
    EXPECT_DOUBLE_EQ(*s.value("linecap_worker_cycles_per_packet", {{"lcore", "1"}}), 3.0);
    EXPECT_EQ(s.value("linecap_worker_heartbeat_total", {{"lcore", "1"}}), 25);
    EXPECT_EQ(s.types.at("linecap_worker_heartbeat_total"), "counter");
    EXPECT_EQ(s.types.at("linecap_worker_busy_ratio"), "gauge");
}

TEST_F(CollectorTest, IdleWorkerHasZeroBusyRatioAndNoCyclesPerPacket) {
    capture.lcore[1].total_cycles.set(5000);
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_EQ(s.value("linecap_worker_busy_ratio", {{"lcore", "2"}}), 0);
    EXPECT_TRUE(std::isnan(*s.value("linecap_worker_cycles_per_packet", {{"lcore", "2"}})));
}

TEST_F(CollectorTest, BusyRatioIsClampedWhenReadsStraddleAPublication) {
    capture.lcore[0].total_cycles.set(1000);
    capture.lcore[0].busy_cycles.set(1010);   // busy already from the next publication
    collector->collect();
    EXPECT_EQ(scrape(*collector).value("linecap_worker_busy_ratio", {{"lcore", "1"}}), 1.0);
}

TEST_F(CollectorTest, WorkerPollingFlag) {
    capture.control[0].polling.store(true);
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_EQ(s.value("linecap_worker_polling", {{"lcore", "1"}}), 1);
    EXPECT_EQ(s.value("linecap_worker_polling", {{"lcore", "2"}}), 0);
}

TEST_F(CollectorTest, WriteLatencyIsARealHistogramWithCumulativeBuckets) {
    // 3 writes ≤ 10 µs, 2 in (50, 100] µs, 1 over 1 s.
    capture.latency.bucket[0].store(3);
    capture.latency.bucket[2].store(2);
    capture.latency.bucket[WriteLatency::kBuckets - 1].store(1);
    capture.latency.sum_ns.store(2'500'000'000);
    capture.latency.count.store(6);
    collector->collect();
    const Scrape s = scrape(*collector);

    EXPECT_EQ(s.types.at("linecap_write_latency_seconds"), "histogram");
    const auto buckets = s.series("linecap_write_latency_seconds_bucket");
    ASSERT_EQ(buckets.size(), WriteLatency::kBuckets);   // 10 bounds + +Inf
    const double expected_cumulative[] = {3, 3, 5, 5, 5, 5, 5, 5, 5, 5, 6};
    double previous_le = 0;
    for (size_t i = 0; i < buckets.size(); ++i) {
        const double le = std::strtod(buckets[i].labels.at("le").c_str(), nullptr);
        if (i + 1 < buckets.size()) {
            EXPECT_DOUBLE_EQ(le, static_cast<double>(WriteLatency::kBoundsUs[i]) / 1e6) << i;
        } else {
            EXPECT_EQ(buckets[i].labels.at("le"), "+Inf");
        }
        EXPECT_GT(le, previous_le);
        previous_le = le;
        EXPECT_EQ(buckets[i].value, expected_cumulative[i]) << "le=" << buckets[i].labels.at("le");
    }
    EXPECT_EQ(s.value("linecap_write_latency_seconds_count"), 6);
    EXPECT_DOUBLE_EQ(*s.value("linecap_write_latency_seconds_sum"), 2.5);
}

TEST_F(CollectorTest, OutputFilesystemAndBacklog) {
    capture.fill_distinct_values();
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_EQ(capture.probed_directory, "/captures");
    EXPECT_EQ(s.value("linecap_output_filesystem_free_bytes"), 600);
    EXPECT_EQ(s.value("linecap_output_filesystem_size_bytes"), 1000);
    EXPECT_EQ(s.value("linecap_writer_backlog_blocks"), 4);
    EXPECT_EQ(s.types.at("linecap_writer_backlog_blocks"), "gauge");
}

TEST(Collector, FilesystemSeriesAreAbsentWhenStatvfsFails) {
    FakeCapture capture;
    capture.filesystem.reset();  // before the collector, which takes the figures from then on
    auto collector = capture.make_collector();
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_TRUE(s.series("linecap_output_filesystem_free_bytes").empty());
    EXPECT_TRUE(s.series("linecap_output_filesystem_size_bytes").empty());
}

TEST_F(CollectorTest, IndexerCountersAndQueue) {
    capture.indexing.built_files.store(11);
    capture.indexing.failed_files.store(2);
    capture.indexing.skipped_files.store(3);
    capture.indexing.queued_files.store(4);
    capture.indexing.pcap_bytes.store(5000);
    capture.indexing.index_bytes.store(30);
    capture.indexing.busy_ns.store(1'500'000'000);
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_EQ(s.value("linecap_index_files_total", {{"result", "built"}}), 11);
    EXPECT_EQ(s.value("linecap_index_files_total", {{"result", "failed"}}), 2);
    EXPECT_EQ(s.value("linecap_index_files_total", {{"result", "skipped"}}), 3);
    EXPECT_EQ(s.value("linecap_index_queued_files"), 4);
    EXPECT_EQ(s.types.at("linecap_index_queued_files"), "gauge");
    EXPECT_EQ(s.value("linecap_index_source_bytes_total"), 5000);
    EXPECT_EQ(s.value("linecap_index_bytes_total"), 30);
    EXPECT_EQ(s.value("linecap_index_busy_seconds_total"), 1.5);
}

TEST_F(CollectorTest, CompressorCounters) {
    capture.compressing.compressed_files.store(7);
    capture.compressing.failed_files.store(1);
    capture.compressing.pcap_bytes.store(9000);
    capture.compressing.compressed_bytes.store(6000);
    capture.compressing.cpu_ns.store(2'500'000'000);
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_EQ(s.value("linecap_compress_files_total", {{"result", "compressed"}}), 7);
    EXPECT_EQ(s.value("linecap_compress_files_total", {{"result", "failed"}}), 1);
    EXPECT_EQ(s.value("linecap_compress_source_bytes_total"), 9000);
    EXPECT_EQ(s.value("linecap_compress_bytes_total"), 6000);
    EXPECT_EQ(s.value("linecap_compress_cpu_seconds_total"), 2.5);

    expect_absent_when_off(&FakeCapture::compressing_on, "linecap_compress_files_total");
}

TEST_F(CollectorTest, ArchiverCounters) {
    capture.archiving.archived_files.store(6);
    capture.archiving.archived_bytes.store(7000);
    capture.archiving.backlog_files.store(3);
    capture.archiving.backlog_bytes.store(3000);
    capture.archiving.backlog_oldest_mtime_ns.store(utc_now_ns() - 90'000'000'000);
    capture.archiving.error_unreachable.store(1);
    capture.archiving.error_denied.store(2);
    capture.archiving.error_no_bucket.store(3);
    capture.archiving.error_server.store(4);
    capture.archiving.error_verify.store(5);
    capture.archiving.error_local.store(6);
    capture.archiving.error_other.store(7);
    capture.archiving.retries.store(8);
    capture.archiving.expired_files.store(9);
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_EQ(s.value("linecap_archive_files_total"), 6);
    EXPECT_EQ(s.value("linecap_archive_bytes_total"), 7000);
    EXPECT_EQ(s.value("linecap_archive_backlog_files"), 3);
    EXPECT_EQ(s.types.at("linecap_archive_backlog_files"), "gauge");
    EXPECT_EQ(s.value("linecap_archive_backlog_bytes"), 3000);
    EXPECT_NEAR(s.value("linecap_archive_backlog_oldest_age_seconds").value_or(0), 90, 5);
    const char* causes[] = {"unreachable", "denied", "no_bucket", "server", "verify", "local", "other"};
    for (size_t i = 0; i < std::size(causes); ++i)
        EXPECT_EQ(s.value("linecap_archive_upload_errors_total", {{"cause", causes[i]}}), double(i + 1)) << causes[i];
    EXPECT_EQ(s.value("linecap_archive_retries_total"), 8);
    EXPECT_EQ(s.value("linecap_archive_expired_files_total"), 9);
    EXPECT_EQ(s.value("linecap_archive_deleted_unarchived_files_total"), 0);

    expect_absent_when_off(&FakeCapture::archiving_on, "linecap_archive_files_total");
}

TEST_F(CollectorTest, ScrubCountersByResult) {
    capture.scrub.ok_files.store(20);
    capture.scrub.mismatched_files.store(1);
    capture.scrub.missing_manifests.store(2);
    capture.scrub.bad_manifests.store(3);
    capture.scrub.unreadable_files.store(4);
    capture.scrub.bytes_read.store(7000);
    capture.scrub.damaged_files.store(1);
    capture.scrub.passes.store(5);
    capture.scrub.last_pass_end_ns.store(1'764'468'600'500'000'000);
    capture.scrub.period_s.store(604800);
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_EQ(s.value("linecap_scrub_files_total", {{"result", "ok"}}), 20);
    EXPECT_EQ(s.value("linecap_scrub_files_total", {{"result", "mismatch"}}), 1);
    EXPECT_EQ(s.value("linecap_scrub_files_total", {{"result", "no_manifest"}}), 2);
    EXPECT_EQ(s.value("linecap_scrub_files_total", {{"result", "bad_manifest"}}), 3);
    EXPECT_EQ(s.value("linecap_scrub_files_total", {{"result", "unreadable"}}), 4);
    EXPECT_EQ(s.value("linecap_scrub_read_bytes_total"), 7000);
    EXPECT_EQ(s.value("linecap_scrub_damaged_files"), 1);
    EXPECT_EQ(s.types.at("linecap_scrub_damaged_files"), "gauge");
    EXPECT_EQ(s.value("linecap_scrub_passes_total"), 5);
    EXPECT_NEAR(s.value("linecap_scrub_last_pass_completed_timestamp_seconds").value_or(0), 1764468600.5, 1e-3);
    EXPECT_EQ(s.value("linecap_scrub_period_seconds"), 604800);
}

TEST_F(CollectorTest, FeedConsumersAndCountsPerAddress) {
    EXPECT_TRUE(scrape(*collector).series("linecap_feed_consumers").empty());  // feed off
    FakeCapture on;
    on.feed = FeedCounts{2, {5, 1}, {{"127.0.0.1", {900, 120000, 0}}, {"10.0.0.7", {300, 40000, 600}}}};
    auto feeding = on.make_collector();
    feeding->collect();
    const Scrape s = scrape(*feeding);
    EXPECT_EQ(s.value("linecap_feed_consumers"), 2);
    EXPECT_EQ(s.types.at("linecap_feed_consumers"), "gauge");
    EXPECT_EQ(s.value("linecap_feed_connections_total", {{"result", "accepted"}}), 5);
    EXPECT_EQ(s.value("linecap_feed_connections_total", {{"result", "refused"}}), 1);
    EXPECT_EQ(s.value("linecap_feed_sent_packets_total", {{"address", "127.0.0.1"}}), 900);
    EXPECT_EQ(s.value("linecap_feed_sent_bytes_total", {{"address", "10.0.0.7"}}), 40000);
    EXPECT_EQ(s.value("linecap_feed_dropped_packets_total", {{"address", "10.0.0.7"}}), 600);
    // The feed's drops are its consumers' own: not in the capture's drop accounting.
    EXPECT_EQ(dropped_packets(feeding->snapshot()), 0u);
}

TEST_F(CollectorTest, ClockSourceSyncErrorsAndSteps) {
    capture.clock.publish(ClockSample{ClockSync::unsynchronised, 16'000'000, 1'500'000'000});
    capture.clock.count_step();
    capture.clock.count_step();
    capture.queue[2].clock_clamped_packets.add(3);
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_EQ(s.value("linecap_clock_source", {{"port", "wan"}, {"source", "tsc"}, {"port_clock", ""}}), 1);
    EXPECT_EQ(s.value("linecap_clock_source", {{"port", "tap"}, {"source", "port"}, {"port_clock", "replayed-file"}}), 1);
    EXPECT_EQ(s.value("linecap_clock_synced", {{"state", "unsynchronised"}, {"status_source", "test-file:fake"}}), 0);
    EXPECT_NEAR(s.value("linecap_clock_estimated_error_seconds").value_or(0), 0.016, 1e-9);
    EXPECT_NEAR(s.value("linecap_clock_max_error_seconds").value_or(0), 1.5, 1e-9);
    EXPECT_EQ(s.value("linecap_clock_steps_total"), 2);
    EXPECT_EQ(s.types.at("linecap_clock_steps_total"), "counter");
    EXPECT_EQ(s.value("linecap_clock_clamped_packets_total", {{"port", "tap"}, {"queue", "0"}}), 3);

    capture.clock.publish(ClockSample{ClockSync::synced, 250'000, 1'000'000});
    collector->collect();
    EXPECT_EQ(scrape(*collector).value("linecap_clock_synced", {{"state", "synced"}, {"status_source", "test-file:fake"}}), 1);
}

TEST_F(CollectorTest, ManifestBacklogAndHashRate) {
    capture.manifest.backlog_bytes.store(123456);
    capture.manifest.backlog_files.store(3);
    capture.manifest.hashed_bytes.store(9'000'000);
    capture.manifest.written_files.store(40);
    capture.manifest.failed_files.store(1);
    capture.manifest.deleted_files.store(2);
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_EQ(s.value("linecap_manifest_backlog_bytes"), 123456);
    EXPECT_EQ(s.types.at("linecap_manifest_backlog_bytes"), "gauge");
    EXPECT_EQ(s.value("linecap_manifest_backlog_files"), 3);
    EXPECT_EQ(s.types.at("linecap_manifest_backlog_files"), "gauge");
    EXPECT_EQ(s.value("linecap_manifest_hashed_bytes_total"), 9'000'000);
    EXPECT_EQ(s.types.at("linecap_manifest_hashed_bytes_total"), "counter");
    EXPECT_EQ(s.value("linecap_manifest_files_total", {{"result", "written"}}), 40);
    EXPECT_EQ(s.value("linecap_manifest_files_total", {{"result", "failed"}}), 1);
    EXPECT_EQ(s.value("linecap_manifest_files_total", {{"result", "deleted"}}), 2);
}

TEST(CollectorVolumes, PerVolumeSeriesAndTheStoreSums) {
    FakeCapture capture;
    capture.volumes_on = true;
    capture.volume[0].healthy.store(1);
    capture.volume[0].streams.store(3);
    capture.volume[0].file_bytes.store(1000);
    capture.volume[1].write_error_packets.store(64);
    capture.volume[1].disk_full_packets.store(8);
    capture.volume[1].errors_eio.store(2);
    capture.volume[1].errors_erofs.store(1);
    capture.volume[1].failures.store(1);
    capture.volume[1].stalls.store(1);
    capture.volume[1].failovers.store(3);
    capture.volume[1].probe_failures.store(2);
    capture.volume_retention[0].bytes.store(100);
    capture.volume_retention[0].files.store(1);
    capture.volume_retention[0].oldest_packet_ns.store(5'000'000'000);
    capture.volume_retention[1].bytes.store(200);
    capture.volume_retention[1].files.store(2);
    capture.volume_retention[1].oldest_packet_ns.store(3'000'000'000);
    capture.volume_retention[1].budget_unmet.store(1);
    capture.manifest.written_files.store(9);
    capture.indexing.built_files.store(4);
    capture.volume_indexing.built_files.store(5);
    auto collector = capture.make_collector();
    collector->collect();
    const Scrape s = scrape(*collector);
    const LabelSet a{{"volume", "/captures/a"}}, b{{"volume", "/captures/b"}};
    EXPECT_EQ(s.value("linecap_volumes"), 2);
    EXPECT_EQ(s.value("linecap_volumes_healthy"), 1);
    EXPECT_EQ(s.value("linecap_volume_healthy", a), 1);
    EXPECT_EQ(s.value("linecap_volume_healthy", b), 0);
    EXPECT_EQ(s.types.at("linecap_volume_healthy"), "gauge");
    EXPECT_EQ(s.value("linecap_volume_streams", a), 3);
    EXPECT_EQ(s.value("linecap_volume_written_bytes_total", a), 1000);
    EXPECT_EQ(s.value("linecap_volume_dropped_packets_total", {{"volume", "/captures/b"}, {"reason", "write_error"}}),
              64);
    EXPECT_EQ(s.value("linecap_volume_dropped_packets_total", {{"volume", "/captures/b"}, {"reason", "disk_full"}}), 8);
    EXPECT_EQ(s.value("linecap_volume_write_errors_total", {{"volume", "/captures/b"}, {"errno", "EIO"}}), 2);
    EXPECT_EQ(s.value("linecap_volume_write_errors_total", {{"volume", "/captures/b"}, {"errno", "EROFS"}}), 1);
    EXPECT_EQ(s.value("linecap_volume_failures_total", b), 1);
    EXPECT_EQ(s.value("linecap_volume_stalls_total", b), 1);
    EXPECT_EQ(s.value("linecap_volume_failovers_total", b), 3);
    EXPECT_EQ(s.value("linecap_volume_probe_failures_total", b), 2);
    EXPECT_EQ(s.value("linecap_volume_stored_bytes", b), 200);
    EXPECT_EQ(s.value("linecap_volume_free_bytes", a), 600);
    // One store: retention sums over the volumes, the oldest file of all, unmet anywhere.
    EXPECT_EQ(s.value("linecap_retention_bytes"), 300);
    EXPECT_EQ(s.value("linecap_retention_files"), 3);
    EXPECT_EQ(s.value("linecap_retention_budget_unmet"), 1);
    EXPECT_EQ(s.value("linecap_manifest_files_total", {{"result", "written"}}), 9);
    EXPECT_EQ(s.value("linecap_index_files_total", {{"result", "built"}}), 9) << "each volume's indexer";
}

TEST(CollectorManifestOff, NoManifestSeries) {
    FakeCapture capture;
    capture.manifest_on = false;
    auto collector = capture.make_collector();
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_TRUE(s.series("linecap_manifest_backlog_bytes").empty());
    EXPECT_TRUE(s.series("linecap_manifest_files_total").empty());
}

TEST(CollectorScrubOff, NoScrubSeries) {
    FakeCapture capture;
    capture.scrub_on = false;
    auto collector = capture.make_collector();
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_TRUE(s.series("linecap_scrub_files_total").empty());
    EXPECT_TRUE(s.series("linecap_scrub_damaged_files").empty());
}

TEST(CollectorIndexingOff, NoIndexerSeries) {
    FakeCapture capture;
    capture.indexing_on = false;
    auto collector = capture.make_collector();
    collector->collect();
    const Scrape s = scrape(*collector);
    EXPECT_TRUE(s.series("linecap_index_files_total").empty());
    EXPECT_TRUE(s.series("linecap_index_queued_files").empty());
    EXPECT_FALSE(s.series("linecap_writer_backlog_blocks").empty());
}

TEST_F(CollectorTest, BuildInfo) {
    const Scrape s = scrape(*collector);
    EXPECT_EQ(s.value("linecap_build_info", {{"version", "9.9.9-test"}, {"dpdk_version", "22.11.99"}}), 1);
}

TEST(BuildInfoTest, ComesFromTheBuildAndTheLinkedDpdk) {
    const BuildInfo build = current_build_info();
    EXPECT_FALSE(build.version.empty());
    EXPECT_EQ(build.dpdk_version.rfind("22.", 0), 0u) << build.dpdk_version;   // "DPDK " stripped
}

TEST_F(CollectorTest, ScrapesSeeOnlyTheLastCollection) {
    capture.queue[0].rx_packets.set(10);
    collector->collect();
    capture.queue[0].rx_packets.set(20);   // not collected yet
    EXPECT_EQ(scrape(*collector).value("linecap_rx_packets_total", q("wan", "0")), 10);
    collector->collect();
    EXPECT_EQ(scrape(*collector).value("linecap_rx_packets_total", q("wan", "0")), 20);
}

TEST_F(CollectorTest, EngineVerdictOnPollingWinsWhenGiven) {
    capture.all_polling(true);
    CaptureViews views = capture.views();
    bool engine_says = false;
    views.all_workers_polling = [&] { return engine_says; };
    MetricsCollector c(views, capture.make_port_stats(), {}, BuildInfo{"v", "d"});
    c.collect();
    EXPECT_FALSE(c.snapshot().all_workers_polling);
    engine_says = true;
    c.collect();
    EXPECT_TRUE(c.snapshot().all_workers_polling);
}


// A file system that does not answer (a stalled device) holds up only the figures' thread:
// get() answers at once with the last figures; once the file system answers, the figures
// are fresh again.
TEST(StoreFiguresSampler, AStalledFileSystemDoesNotHoldTheCaller) {
    std::mutex mu;
    std::condition_variable cv;
    bool stalled = false;
    int takes = 0;
    StoreFiguresSampler sampler(
        [&] {
            std::unique_lock lock(mu);
            const int n = ++takes;
            cv.notify_all();
            cv.wait(lock, [&] { return !stalled; });
            StoreFigures f;
            f.holds = std::pair<size_t, uint64_t>{static_cast<size_t>(n), 0};
            return f;
        },
        std::chrono::milliseconds(10));
    ASSERT_TRUE(sampler.get().holds);  // the first take, waited for
    {
        std::unique_lock lock(mu);
        stalled = true;
        const int now = takes;
        cv.wait_for(lock, std::chrono::seconds(10), [&] { return takes > now; });  // one is stuck now
    }
    const size_t stuck_before = sampler.get().holds->first;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 100; ++i) EXPECT_EQ(sampler.get().holds->first, stuck_before);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
    {
        const std::lock_guard lock(mu);
        stalled = false;
    }
    cv.notify_all();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (sampler.get().holds->first == stuck_before && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    EXPECT_GT(sampler.get().holds->first, stuck_before);
}

}  // namespace
}  // namespace linecap::test
