// Test doubles for the collector: counters owned here (as the engine would own them),
// views built by hand over them, and a PortStatsSource whose numbers the test sets.
//
// Layout: port "wan" (id 0, PCI, 2 queues) and port "tap" (id 1, net_pcap vdev, 1 queue);
// worker lcore 1 polls wan q0+q1, worker lcore 2 polls tap q0.
#pragma once

#include <map>
#include <memory>
#include <optional>

#include "metrics/capture_views.hpp"
#include "metrics/collector.hpp"
#include "metrics/port_stats.hpp"

namespace linecap::test {

class FakePortStats final : public PortStatsSource {
public:
    struct Port {
        PortCounters counters;
        PortLink link;
        PortIdentity identity;
        bool read_fails = false;
    };

    std::optional<PortCounters> counters(uint16_t port_id) override {
        const Port& p = ports.at(port_id);
        if (p.read_fails) return std::nullopt;
        return p.counters;
    }
    PortLink link(uint16_t port_id) override { return ports.at(port_id).link; }
    PortIdentity identity(uint16_t port_id) override {
        ++identity_calls;
        return ports.at(port_id).identity;
    }

    std::map<uint16_t, Port> ports;
    int identity_calls = 0;
};

struct FakeCapture {
    static constexpr size_t kStreams = 3;   // wan/0, wan/1, tap/0
    static constexpr size_t kWorkers = 2;   // lcores 1, 2

    QueueCounters queue[kStreams];
    StreamCounters output[kStreams];
    LcoreCounters lcore[kWorkers];
    WorkerControl control[kWorkers];
    WriteLatency latency;
    IndexingCounters indexing;
    bool indexing_on = true;   // output.index
    CompressCounters compressing;
    bool compressing_on = true;  // output.compress
    ScrubCounters scrub;
    bool scrub_on = true;      // output.scrub.enabled
    ArchiveCounters archiving;
    bool archiving_on = true;  // output.archive
    ManifestCounters manifest;
    bool manifest_on = true;   // output.manifest
    ClockQualityBoard clock{"test-file:fake"};
    // output.volumes: two capture volumes (off: the views have none, as in a unit test
    // of a writer-less collector).
    bool volumes_on = false;
    VolumeCounters volume[2];
    RetentionCounters volume_retention[2];
    IndexingCounters volume_indexing;  // volume b's indexer (volume a's is `indexing`)
    std::optional<FeedCounts> feed;  // feed.enabled: what the feed reports
    size_t backlog = 0;

    // Owned by the collector once make_collector() ran; the test keeps a pointer.
    FakePortStats* port_stats = nullptr;
    std::optional<FilesystemUsage> filesystem = FilesystemUsage{.free_bytes = 600, .size_bytes = 1000};
    std::string probed_directory;

    CaptureViews views() {
        CaptureViews v;
        v.streams = {
            StreamView{.port = "wan", .port_id = 0, .queue = 0, .lcore = 1, .capture = &queue[0], .output = &output[0]},
            StreamView{.port = "wan", .port_id = 0, .queue = 1, .lcore = 1, .capture = &queue[1], .output = &output[1]},
            StreamView{.port = "tap", .port_id = 1, .queue = 0, .lcore = 2, .capture = &queue[2], .output = &output[2]},
        };
        v.ports = {
            PortView{.name = "wan", .device = "0000:03:00.0", .port_id = 0, .rx_queues = 2},
            PortView{.name = "tap", .device = "net_pcap0,rx_pcap=a.pcap", .port_id = 1, .rx_queues = 1,
                     .stamps = StampSource::port_utc},
        };
        v.workers = {
            WorkerView{.lcore = 1, .counters = &lcore[0], .control = &control[0]},
            WorkerView{.lcore = 2, .counters = &lcore[1], .control = &control[1]},
        };
        v.write_latency = &latency;
        v.backlog_blocks = [this] { return backlog; };
        v.output_directory = "/captures";
        v.indexing = indexing_on ? &indexing : nullptr;
        v.compressing = compressing_on ? &compressing : nullptr;
        v.scrub = scrub_on ? &scrub : nullptr;
        v.archiving = archiving_on ? &archiving : nullptr;
        v.manifest = manifest_on ? &manifest : nullptr;
        v.clock_quality = &clock;
        if (feed) v.feed = [this] { return *feed; };
        if (volumes_on)
            v.volumes = {VolumeView{"/captures/a", &volume[0], &volume_retention[0], manifest_on ? &manifest : nullptr,
                                    v.indexing, v.compressing, v.scrub, v.archiving},
                         VolumeView{"/captures/b", &volume[1], &volume_retention[1], nullptr, &volume_indexing, nullptr,
                                    nullptr, nullptr}};
        return v;
    }

    std::unique_ptr<FakePortStats> make_port_stats() {
        auto stats = std::make_unique<FakePortStats>();
        stats->ports[0] = {.counters = {}, .link = {.up = true, .speed_bps = 10'000'000'000},
                           .identity = {.driver = "net_ixgbe", .virtual_device = false}};
        stats->ports[1] = {.counters = {}, .link = {.up = false, .speed_bps = 0},
                           .identity = {.driver = "net_pcap", .virtual_device = true}};
        port_stats = stats.get();
        return stats;
    }

    std::unique_ptr<MetricsCollector> make_collector() {
        return std::make_unique<MetricsCollector>(
            views(), make_port_stats(),
            [this](const std::string& directory) {
                probed_directory = directory;
                return filesystem;
            },
            BuildInfo{"9.9.9-test", "22.11.99"});
    }

    void all_polling(bool polling) {
        for (auto& c : control) c.polling.store(polling);
    }

    // Distinct, recognisable numbers in every counter: the tests check each one lands
    // on the right series.
    void fill_distinct_values() {
        for (size_t i = 0; i < kStreams; ++i) {
            const uint64_t base = (i + 1) * 1000;
            queue[i].rx_packets.set(base + 100);
            queue[i].rx_bytes.set(base + 101);
            queue[i].filtered_packets.set(base + 2);
            queue[i].writer_full_packets.set(base + 3);
            output[i].written_packets.store(base + 90);
            output[i].written_bytes.store(base + 91);
            output[i].file_bytes.store(base + 92);
            output[i].write_error_packets.store(base + 4);
            output[i].disk_full_packets.store(base + 1);
            output[i].files_finalised.store(base + 5);
        }
        port_stats->ports[0].counters = {.ipackets = 5000, .ibytes = 5001, .imissed = 7, .ierrors = 8, .rx_nombuf = 9};
        port_stats->ports[1].counters = {.ipackets = 3000, .ibytes = 3001, .imissed = 1, .ierrors = 2, .rx_nombuf = 3};
        lcore[0].loops.set(111);
        lcore[1].loops.set(222);
        backlog = 4;
    }
};

}  // namespace linecap::test
