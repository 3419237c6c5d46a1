// Prints the /metrics text of a collector over fake views with every counter non-zero:
// the names and label sets the exporter produces, for the checks that run outside C++
// (promtool check metrics, and the dashboard/rules name check).
#include <spdlog/spdlog.h>

#include <iostream>

#include "fake_capture.hpp"
#include "metrics/exporter.hpp"

int main() {
    using namespace linecap;
    spdlog::set_level(spdlog::level::warn);   // stdout carries the exposition only
    test::FakeCapture capture;
    capture.volumes_on = true;
    capture.volume[0].healthy.store(1);
    capture.volume[0].streams.store(2);
    capture.volume[1].failures.store(1);
    capture.volume[1].stalls.store(1);
    capture.volume[1].failovers.store(1);
    capture.volume[1].write_error_packets.store(64);
    capture.volume[1].errors_eio.store(1);
    capture.feed = FeedCounts{2, {3, 1}, {{"127.0.0.1", {100, 64000, 5}}}};
    auto exporter = MetricsExporter::start(MetricsConfig{.enabled = false, .listen = ""}, capture.make_collector());
    if (!exporter) {
        std::cerr << exporter.error().message << "\n";
        return 1;
    }
    capture.fill_distinct_values();
    capture.all_polling(true);
    for (size_t i = 0; i < WriteLatency::kBuckets; ++i) capture.latency.bucket[i].store(i + 1);
    capture.latency.sum_ns.store(123'456'789);
    capture.indexing.built_files.store(7);
    capture.indexing.failed_files.store(1);
    capture.indexing.skipped_files.store(2);
    capture.indexing.queued_files.store(3);
    capture.indexing.pcap_bytes.store(7ull << 30);
    capture.indexing.index_bytes.store(42ull << 20);
    capture.indexing.busy_ns.store(5'000'000'000);
    capture.scrub.ok_files.store(40);
    capture.scrub.mismatched_files.store(1);
    capture.scrub.missing_manifests.store(2);
    capture.scrub.bad_manifests.store(3);
    capture.scrub.unreadable_files.store(4);
    capture.scrub.bytes_read.store(40ull << 30);
    capture.scrub.damaged_files.store(1);
    capture.scrub.passes.store(2);
    capture.scrub.last_pass_end_ns.store(1'764'468'600'000'000'000);
    capture.scrub.period_s.store(7 * 86400);
    capture.archiving.archived_files.store(5);
    capture.archiving.backlog_files.store(2);
    capture.archiving.backlog_oldest_mtime_ns.store(1'764'468'600'000'000'000);
    capture.archiving.error_unreachable.store(1);
    capture.clock.publish(ClockSample{ClockSync::synced, 250'000, 1'500'000});
    capture.clock.count_step();
    capture.queue[0].clock_clamped_packets.add(1);
    capture.lcore[0].total_cycles.set(1000);
    capture.lcore[0].busy_cycles.set(500);
    capture.lcore[0].packets.set(50);
    exporter.value()->collect();
    std::cout << exporter.value()->scrape();
    return 0;
}
