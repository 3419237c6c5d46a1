// One collection's worth of numbers: plain values copied out of the engine's atomics and
// the ethdev stats by MetricsCollector::collect(). The exposition and the readiness
// verdict are computed from a snapshot only, never from live counters, so a scrape costs
// the data path nothing and sees one consistent collection.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capture/counters.hpp"
#include "dpdk/rx_timestamp.hpp"
#include "feed/feed.hpp"
#include "metrics/filesystem_usage.hpp"
#include "metrics/port_stats.hpp"
#include "archive/holds.hpp"
#include "archive/scrub.hpp"
#include "output/writer.hpp"
#include "archive/archive_service.hpp"
#include "archive/compress.hpp"
#include "archive/index_service.hpp"

namespace linecap {

struct StreamSample {
    std::string port;
    uint16_t queue = 0;
    QueueCounts capture;      // the worker's counters (capture/counters.hpp)
    StreamCounts output;      // the writer's counters (output/writer.hpp)
};

struct PortSample {
    std::string name;
    std::string device;
    StampSource stamps = StampSource::tsc;  // capture.timestamps as resolved
    PortIdentity identity;
    PortCounters counters;   // never decreasing (driver-side resets are folded in)
    PortLink link;
};

struct WorkerSample {
    unsigned lcore = 0;
    uint64_t loops = 0;               // heartbeat
    double busy_ratio = 0;            // over the last collection interval
    double cycles_per_packet = 0;     // over the last interval; NaN when no packets
    double max_poll_gap_s = 0;        // longest gap between two polls in the worker's last whole second
    bool polling = false;
};

struct LatencySample {
    std::array<uint64_t, WriteLatency::kBuckets> per_bucket{};  // not cumulative; last = overflow
    uint64_t sum_ns = 0;
};

// The host clock (util/clock_quality.hpp), metrics linecap_clock_*.
struct ClockQualitySample {
    ClockSample sample;
    uint64_t steps = 0;
    std::string status_source;
};

inline constexpr MetricDecl kClockSourceMetric{
    "linecap_clock_source",
    "1 per port: where its packets' timestamps come from (capture.timestamps): source port (port_clock "
    "replayed-file or nic-clock) or tsc.",
    MetricType::gauge};
inline constexpr MetricDecl kClockSyncedMetric{
    "linecap_clock_synced",
    "1 while the host clock is synchronised (adjtimex: STA_UNSYNC clear), 0 when unsynchronised or unknown "
    "(label state); status_source says where the state was read (adjtimex, or a test double).",
    MetricType::gauge};
inline constexpr MetricDecl kClockEstimatedErrorMetric{
    "linecap_clock_estimated_error_seconds", "The host clock's estimated error (adjtimex esterror).",
    MetricType::gauge};
inline constexpr MetricDecl kClockMaxErrorMetric{
    "linecap_clock_max_error_seconds", "The host clock's maximum error (adjtimex maxerror).", MetricType::gauge};
inline constexpr MetricDecl kClockStepsMetric{
    "linecap_clock_steps_total",
    "Steps of the host clock seen since the start (CLOCK_REALTIME moved against CLOCK_MONOTONIC by more than 1 ms "
    "between two samples); the TSC stamps never go back across one, and the files' manifests count them.",
    MetricType::counter};

// One capture volume at the collection (CaptureViews::volumes).
struct VolumeSample {
    std::string directory;
    VolumeCounts counts;
    RetentionCounts retention;
    std::optional<FilesystemUsage> filesystem;
};

inline constexpr MetricDecl kVolumesMetric{"linecap_volumes", "Capture volumes configured.", MetricType::gauge};
inline constexpr MetricDecl kVolumesHealthyMetric{
    "linecap_volumes_healthy", "Capture volumes taking writes now (fewer than linecap_volumes: running degraded).",
    MetricType::gauge};
inline constexpr MetricDecl kVolumeFreeMetric{
    "linecap_volume_free_bytes", "Bytes available to the daemon on the capture volume's filesystem.",
    MetricType::gauge};
inline constexpr MetricDecl kVolumeStoredBytesMetric{
    "linecap_volume_stored_bytes", "Bytes of the finished capture files kept on the volume, sidecars included.",
    MetricType::gauge};

struct MetricsSnapshot {
    bool collected = false;           // false until the first collect()
    std::vector<StreamSample> streams;
    std::vector<PortSample> ports;
    std::vector<WorkerSample> workers;
    bool all_workers_polling = false;
    std::optional<LatencySample> write_latency;
    std::optional<FilesystemUsage> filesystem;
    std::optional<std::pair<size_t, uint64_t>> holds;  // unexpired holds and their bytes (archive/holds.hpp)
    uint64_t backlog_blocks = 0;
    uint64_t collected_ns = 0;        // wall clock of the collection (the retention horizon's "now")
    // The background services' counters (metrics declared next to each group).
    RetentionCounts retention;                 // output/writer.hpp; zeros without a writer
    std::optional<ManifestCounts> manifest;    // output/writer.hpp; absent: output.manifest off
    std::optional<IndexingCounts> indexing;     // store/index_service.hpp; absent: output.index off
    std::optional<CompressCounts> compressing;  // store/compress.hpp; absent: output.compress off
    std::optional<ScrubCounts> scrub;          // output/scrub.hpp; absent: output.scrub.enabled off
    std::optional<ArchiveCounts> archiving;    // archive/archive_service.hpp; absent: output.archive off
    std::optional<ClockQualitySample> clock;
    std::optional<FeedCounts> feed;            // feed/feed.hpp; absent: feed.enabled off
    std::vector<VolumeSample> volumes;         // empty: no volume views (unit tests)
};

// ---- drop accounting, computed here only (exposition, shutdown summary, status line) ----
//
// A packet that reached a port is exactly one of written, kept out by a policy (filtered,
// flow-capped, deduplicated: capture/counters.hpp) or dropped(reason),
// where reached = ipackets + imissed + ierrors + rx_nombuf + the AF_XDP sockets' drops
// (port_stats.hpp; see exposition.hpp). The
// NIC's counters are the collector's reset-proof totals, never raw rte_eth_stats.

inline constexpr MetricDecl kDroppedPacketsMetric{
    "linecap_dropped_packets_total",
    "Packets that reached the port but were not written, by reason. Per queue: writer_full (no free write block), "
    "write_error (I/O error), disk_full (ENOSPC/EDQUOT). Per port, queue=\"all\": nic_missed (rte_eth_stats "
    "imissed not explained otherwise), nic_error (ierrors), no_mbuf (rx_nombuf), and for net_af_xdp the AF_XDP "
    "sockets' xsk_fill_empty (no buffer in the fill ring) and xsk_ring_full (the rx ring full).",
    MetricType::counter};

inline uint64_t received_packets(const PortCounters& c) {
    return c.ipackets + c.imissed + c.ierrors + c.rx_nombuf + c.xsk_fill_empty + c.xsk_ring_full;
}

// f(reason, packets) for each per-queue drop reason of a stream, in exposition order.
template <class F>
void for_each_stream_drop(const StreamSample& s, F&& f) {
    f(kWriterFullDrop.reason, s.capture.*kWriterFullDrop.field);
    f(kWriteErrorDrop.reason, s.output.*kWriteErrorDrop.field);
    f(kDiskFullDrop.reason, s.output.*kDiskFullDrop.field);
}

// f(reason, packets) for each drop the NIC counts for the whole port.
template <class F>
void for_each_port_drop(const PortCounters& c, F&& f) {
    for (const DropReason<PortCounters>& d : {kNicMissedDrop, kNicErrorDrop, kNoMbufDrop, kXskFillEmptyDrop, kXskRingFullDrop})
        f(d.reason, c.*d.field);
}

// Every drop of every port and stream.
inline uint64_t dropped_packets(const MetricsSnapshot& snapshot) {
    uint64_t sum = 0;
    const auto add = [&sum](std::string_view, uint64_t n) { sum += n; };
    for (const StreamSample& s : snapshot.streams) for_each_stream_drop(s, add);
    for (const PortSample& p : snapshot.ports) for_each_port_drop(p.counters, add);
    return sum;
}

// One port's share of the accounting: what its queues' streams counted, and its drops by
// reason in exposition order (the NIC's, then the streams' summed over its queues). Read by
// the shutdown summary and /status, so both say the same.
struct PortTotals {
    uint64_t rx_packets = 0;   // handed to the port's workers (linecap_rx_packets_total)
    uint64_t rx_bytes = 0;
    uint64_t written = 0;
    uint64_t filtered = 0;
    uint64_t flow_capped = 0;
    uint64_t deduplicated = 0;
    std::vector<std::pair<std::string_view, uint64_t>> drops;
    uint64_t dropped = 0;      // the sum of drops
};

inline PortTotals port_totals(const MetricsSnapshot& snapshot, const PortSample& port) {
    PortTotals t;
    for_each_port_drop(port.counters, [&](std::string_view reason, uint64_t n) { t.drops.emplace_back(reason, n); });
    const size_t nic_reasons = t.drops.size();
    for (const StreamSample& s : snapshot.streams) {
        if (s.port != port.name) continue;
        t.rx_packets += s.capture.*kRxPacketsMetric.field;
        t.rx_bytes += s.capture.*kRxBytesMetric.field;
        t.filtered += s.capture.*kFilteredPacketsMetric.field;
        t.flow_capped += s.capture.flow_cap_dropped_packets;
        t.deduplicated += s.capture.dedup_packets;
        t.written += s.output.*kWrittenPacketsMetric.field;
        size_t i = nic_reasons;
        for_each_stream_drop(s, [&](std::string_view reason, uint64_t n) {
            if (i == t.drops.size()) t.drops.emplace_back(reason, 0);
            t.drops[i++].second += n;
        });
    }
    for (const auto& [reason, n] : t.drops) t.dropped += n;
    return t;
}

}  // namespace linecap
