#include "metrics/exposition.hpp"

#include <rte_version.h>

#include <limits>
#include <string_view>

#include "archive/compress.hpp"
#include "archive/index_service.hpp"
#include "archive/scrub.hpp"
#include "linecap_build.h"

namespace linecap {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;

using Labels = std::vector<ClientMetric::Label>;

// Port-level drops carry queue="all" so every drop series has the same label names.
constexpr const char* kAllQueues = "all";

prometheus::MetricType prometheus_type(linecap::MetricType type) {
    switch (type) {
        case linecap::MetricType::counter: return prometheus::MetricType::Counter;
        case linecap::MetricType::gauge: return prometheus::MetricType::Gauge;
        case linecap::MetricType::histogram: return prometheus::MetricType::Histogram;
    }
    return prometheus::MetricType::Untyped;
}

MetricFamily family(const MetricDecl& decl) {
    return MetricFamily{std::string(decl.name), std::string(decl.help), prometheus_type(decl.type), {}};
}

void add_counter(MetricFamily& f, Labels labels, double value) {
    ClientMetric m;
    m.label = std::move(labels);
    m.counter.value = value;
    f.metric.push_back(std::move(m));
}

void add_counter(MetricFamily& f, Labels labels, uint64_t value) {
    add_counter(f, std::move(labels), static_cast<double>(value));
}

void add_gauge(MetricFamily& f, Labels labels, double value) {
    ClientMetric m;
    m.label = std::move(labels);
    m.gauge.value = value;
    f.metric.push_back(std::move(m));
}

// A family of one unlabelled series, appended to `out`.
void push(std::vector<MetricFamily>& out, const MetricDecl& decl, double value) {
    MetricFamily f = family(decl);
    if (decl.type == linecap::MetricType::counter) {
        add_counter(f, {}, value);
    } else {
        add_gauge(f, {}, value);
    }
    out.push_back(std::move(f));
}

Labels port_labels(const std::string& port) { return {{"port", port}}; }

Labels queue_labels(const StreamSample& s) { return {{"port", s.port}, {"queue", std::to_string(s.queue)}}; }

Labels lcore_labels(const WorkerSample& w) { return {{"lcore", std::to_string(w.lcore)}}; }

// The group of counters a stream metric reads: the worker's or the writer's.
const QueueCounts& counts_of(const StreamSample& s, const QueueCounts*) { return s.capture; }
const StreamCounts& counts_of(const StreamSample& s, const StreamCounts*) { return s.output; }

// One counter family with one series per (port, queue) stream.
template <class Counts>
MetricFamily per_stream_counter(const MetricsSnapshot& snapshot, const FieldMetric<Counts>& metric) {
    MetricFamily f = family(metric.decl);
    for (const StreamSample& s : snapshot.streams) {
        add_counter(f, queue_labels(s), counts_of(s, static_cast<const Counts*>(nullptr)).*metric.field);
    }
    return f;
}

MetricFamily dropped_packets_family(const MetricsSnapshot& snapshot) {
    MetricFamily f = family(kDroppedPacketsMetric);
    const auto with_reason = [](Labels labels, std::string_view reason) {
        labels.push_back({"reason", std::string(reason)});
        return labels;
    };
    for (const StreamSample& s : snapshot.streams) {
        for_each_stream_drop(s, [&](std::string_view reason, uint64_t packets) {
            add_counter(f, with_reason(queue_labels(s), reason), packets);
        });
    }
    for (const PortSample& p : snapshot.ports) {
        const Labels labels = {{"port", p.name}, {"queue", kAllQueues}};
        for_each_port_drop(p.counters, [&](std::string_view reason, uint64_t packets) {
            add_counter(f, with_reason(labels, reason), packets);
        });
    }
    return f;
}

void add_port_families(std::vector<MetricFamily>& out, const MetricsSnapshot& snapshot) {
    MetricFamily received = family(kPortReceivedMetric);
    MetricFamily link_up = family(kPortLinkUpMetric);
    MetricFamily speed = family(kPortLinkSpeedMetric);
    MetricFamily info = family(kPortInfoMetric);
    for (const PortSample& p : snapshot.ports) {
        add_counter(received, port_labels(p.name), received_packets(p.counters));
        add_gauge(link_up, port_labels(p.name), p.link.up ? 1 : 0);
        add_gauge(speed, port_labels(p.name), static_cast<double>(p.link.speed_bps));
        add_gauge(info, {{"port", p.name}, {"device", p.device}, {"driver", p.identity.driver}}, 1);
    }
    out.push_back(std::move(received));
    out.push_back(std::move(link_up));
    out.push_back(std::move(speed));
    out.push_back(std::move(info));
}

void add_clock_families(std::vector<MetricFamily>& out, const MetricsSnapshot& snapshot) {
    MetricFamily source = family(kClockSourceMetric);
    for (const PortSample& p : snapshot.ports)
        add_gauge(source, {{"port", p.name}, {"source", source_name(p.stamps)}, {"port_clock", port_detail(p.stamps)}}, 1);
    out.push_back(std::move(source));
    if (!snapshot.clock) return;
    const ClockQualitySample& c = *snapshot.clock;
    MetricFamily synced = family(kClockSyncedMetric);
    add_gauge(synced, {{"state", to_string(c.sample.sync)}, {"status_source", c.status_source}},
              c.sample.sync == ClockSync::synced ? 1 : 0);
    out.push_back(std::move(synced));
    push(out, kClockEstimatedErrorMetric, static_cast<double>(c.sample.est_error_ns) / 1e9);
    push(out, kClockMaxErrorMetric, static_cast<double>(c.sample.max_error_ns) / 1e9);
    push(out, kClockStepsMetric, static_cast<double>(c.steps));
}

void add_worker_families(std::vector<MetricFamily>& out, const MetricsSnapshot& snapshot) {
    MetricFamily busy = family(kWorkerBusyRatioMetric);
    MetricFamily heartbeat = family(kWorkerHeartbeatMetric);
    MetricFamily cpp = family(kWorkerCyclesPerPacketMetric);
    MetricFamily polling = family(kWorkerPollingMetric);
    MetricFamily gap = family(kWorkerMaxPollGapMetric);
    for (const WorkerSample& w : snapshot.workers) {
        add_gauge(busy, lcore_labels(w), w.busy_ratio);
        add_counter(heartbeat, lcore_labels(w), w.loops);
        add_gauge(cpp, lcore_labels(w), w.cycles_per_packet);
        add_gauge(polling, lcore_labels(w), w.polling ? 1 : 0);
        add_gauge(gap, lcore_labels(w), w.max_poll_gap_s);
    }
    out.push_back(std::move(busy));
    out.push_back(std::move(heartbeat));
    out.push_back(std::move(cpp));
    out.push_back(std::move(polling));
    out.push_back(std::move(gap));
}

// A real histogram: cumulative buckets with `le` in seconds, +Inf, _sum and _count.
// _count is the bucket total rather than WriteLatency::count, so +Inf and _count always
// agree even when the writer is between its bucket and count updates.
MetricFamily write_latency(const LatencySample& sample) {
    MetricFamily f = family(kWriteLatencyMetric);
    ClientMetric m;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < WriteLatency::kBuckets; ++i) {
        cumulative += sample.per_bucket[i];
        const bool overflow = i + 1 == WriteLatency::kBuckets;
        const double upper_bound = overflow ? std::numeric_limits<double>::infinity()
                                            : static_cast<double>(WriteLatency::kBoundsUs[i]) / 1e6;
        m.histogram.bucket.push_back({cumulative, upper_bound});
    }
    m.histogram.sample_count = cumulative;
    m.histogram.sample_sum = static_cast<double>(sample.sum_ns) / 1e9;
    f.metric.push_back(std::move(m));
    return f;
}

// A family of one unlabelled series: one field of a counter group.
template <class Counts>
void push(std::vector<MetricFamily>& out, const FieldMetric<Counts>& metric, const Counts& counts) {
    push(out, metric.decl, metric.value(counts));
}

// A family of one counter series per label value, each one field of a counter group.
template <class Counts, size_t N>
void push(std::vector<MetricFamily>& out, const FamilyMetric<Counts, N>& metric, const Counts& counts) {
    MetricFamily f = family(metric.decl);
    for (const LabelledField<Counts>& s : metric.series)
        add_counter(f, {{std::string(metric.label), std::string(s.label_value)}}, counts.*s.field);
    out.push_back(std::move(f));
}

// Always exported (zeros without a writer): the horizon is meaningful with or without
// retention limits — it is how far back the kept files reach.
void add_retention_families(std::vector<MetricFamily>& out, const RetentionCounts& r, uint64_t now_ns) {
    push(out, kRetentionHorizonMetric, retention_horizon_seconds(r, now_ns));
    push(out, kRetentionFilesMetric, r);
    push(out, kRetentionBytesMetric, r);
    push(out, kRetentionHeldFilesMetric, r);
    push(out, kRetentionBudgetUnmetMetric, r);  // written 0 or 1
    push(out, kRetentionDeletedFilesMetric, r);
    push(out, kRetentionDeletedBytesMetric, r);
    push(out, kArchiveDeletedUnarchivedMetric, r);
}

// Only with output.manifest on.
void add_manifest_families(std::vector<MetricFamily>& out, const ManifestCounts& c) {
    push(out, kManifestBacklogBytesMetric, c);
    push(out, kManifestBacklogFilesMetric, c);
    push(out, kManifestHashedBytesMetric, c);
    push(out, kManifestFilesMetric, c);
}

// Only with output.index on.
void add_indexing_families(std::vector<MetricFamily>& out, const IndexingCounts& c) {
    push(out, kIndexFilesMetric, c);
    push(out, kIndexQueuedFilesMetric, c);
    push(out, kIndexSourceBytesMetric, c);
    push(out, kIndexBytesMetric, c);
    push(out, kIndexBusySecondsMetric, c);
}

// Only with output.compress on.
void add_compress_families(std::vector<MetricFamily>& out, const CompressCounts& c) {
    push(out, kCompressFilesMetric, c);
    push(out, kCompressSourceBytesMetric, c);
    push(out, kCompressBytesMetric, c);
    push(out, kCompressCpuSecondsMetric, c);
}

// Only with output.scrub.enabled.
void add_scrub_families(std::vector<MetricFamily>& out, const ScrubCounts& c) {
    push(out, kScrubFilesMetric, c);
    push(out, kScrubReadBytesMetric, c);
    push(out, kScrubDamagedFilesMetric, c);
    push(out, kScrubPassesMetric, c);
    push(out, kScrubLastPassMetric, c);
    push(out, kScrubPeriodMetric, c);
}

// Only with output.archive on.
void add_archive_families(std::vector<MetricFamily>& out, const ArchiveCounts& c, uint64_t now_ns) {
    push(out, kArchiveFilesMetric, c);
    push(out, kArchiveBytesMetric, c);
    push(out, kArchiveBacklogFilesMetric, c);
    push(out, kArchiveBacklogBytesMetric, c);
    push(out, kArchiveBacklogAgeMetric, archive_backlog_age_seconds(c, now_ns));
    push(out, kArchiveUploadErrorsMetric, c);
    push(out, kArchiveRetriesMetric, c);
    push(out, kArchiveExpiredFilesMetric, c);
}

// Only with feed.enabled: the consumers' counters, one series per address.
void add_feed_families(std::vector<MetricFamily>& out, const FeedCounts& feed) {
    push(out, kFeedConsumersMetric, static_cast<double>(feed.consumers));
    push(out, kFeedConnectionsMetric, feed.connections);
    for (const FieldMetric<FeedConsumerCounts>* metric :
         {&kFeedSentPacketsMetric, &kFeedSentBytesMetric, &kFeedDroppedPacketsMetric}) {
        MetricFamily f = family(metric->decl);
        for (const FeedAddressCounts& a : feed.addresses) add_counter(f, {{"address", a.address}}, metric->value(a.counts));
        out.push_back(std::move(f));
    }
}

// A labelled family per capture volume: labels volume and the family's own.
template <size_t N>
void volume_family(std::vector<MetricFamily>& out, const FamilyMetric<VolumeCounts, N>& metric,
                   const std::vector<VolumeSample>& volumes) {
    MetricFamily f = family(metric.decl);
    for (const VolumeSample& v : volumes)
        for (const LabelledField<VolumeCounts>& s : metric.series)
            add_counter(f, {{"volume", v.directory}, {std::string(metric.label), std::string(s.label_value)}},
                        v.counts.*s.field);
    out.push_back(std::move(f));
}

// One series per capture volume (label `volume`, its directory).
void add_volume_families(std::vector<MetricFamily>& out, const std::vector<VolumeSample>& volumes) {
    if (volumes.empty()) return;
    size_t healthy = 0;
    for (const VolumeSample& v : volumes) healthy += v.counts.healthy != 0 ? 1 : 0;
    push(out, kVolumesMetric, static_cast<double>(volumes.size()));
    push(out, kVolumesHealthyMetric, static_cast<double>(healthy));
    for (const FieldMetric<VolumeCounts>* metric :
         {&kVolumeHealthyMetric, &kVolumeStreamsMetric, &kVolumeWrittenBytesMetric, &kVolumeWrittenPacketsMetric,
          &kVolumeFailuresMetric, &kVolumeStallsMetric, &kVolumeFailoversMetric, &kVolumeReadmissionsMetric, &kVolumeProbeFailuresMetric,
          &kVolumeLostAfterWritePacketsMetric, &kVolumeLostAfterWriteBytesMetric, &kVolumeLostAfterWriteFileBytesMetric}) {
        MetricFamily f = family(metric->decl);
        for (const VolumeSample& v : volumes) {
            if (metric->decl.type == linecap::MetricType::counter) {
                add_counter(f, {{"volume", v.directory}}, metric->value(v.counts));
            } else {
                add_gauge(f, {{"volume", v.directory}}, metric->value(v.counts));
            }
        }
        out.push_back(std::move(f));
    }
    volume_family(out, kVolumeDroppedMetric, volumes);
    volume_family(out, kVolumeErrorsMetric, volumes);
    MetricFamily stored = family(kVolumeStoredBytesMetric);
    MetricFamily free = family(kVolumeFreeMetric);
    for (const VolumeSample& v : volumes) {
        add_gauge(stored, {{"volume", v.directory}}, static_cast<double>(v.retention.bytes));
        if (v.filesystem) add_gauge(free, {{"volume", v.directory}}, static_cast<double>(v.filesystem->free_bytes));
    }
    out.push_back(std::move(stored));
    out.push_back(std::move(free));
}

void add_output_families(std::vector<MetricFamily>& out, const MetricsSnapshot& snapshot) {
    out.push_back(per_stream_counter(snapshot, kFilesFinalisedMetric));
    out.push_back(per_stream_counter(snapshot, kOutputFileBytesMetric));
    if (snapshot.filesystem) {
        push(out, kFilesystemFreeMetric, static_cast<double>(snapshot.filesystem->free_bytes));
        push(out, kFilesystemSizeMetric, static_cast<double>(snapshot.filesystem->size_bytes));
    }
    if (snapshot.holds) {
        push(out, kHoldsMetric, static_cast<double>(snapshot.holds->first));
        push(out, kHoldBytesMetric, static_cast<double>(snapshot.holds->second));
    }
    push(out, kWriterBacklogMetric, static_cast<double>(snapshot.backlog_blocks));
    if (snapshot.write_latency) out.push_back(write_latency(*snapshot.write_latency));
    add_retention_families(out, snapshot.retention, snapshot.collected_ns);
    if (snapshot.manifest) add_manifest_families(out, *snapshot.manifest);
    if (snapshot.indexing) add_indexing_families(out, *snapshot.indexing);
    if (snapshot.compressing) add_compress_families(out, *snapshot.compressing);
    if (snapshot.scrub) add_scrub_families(out, *snapshot.scrub);
    if (snapshot.archiving) add_archive_families(out, *snapshot.archiving, snapshot.collected_ns);
    add_volume_families(out, snapshot.volumes);
}

}  // namespace

BuildInfo current_build_info() {
    std::string_view dpdk = rte_version();
    if (dpdk.starts_with("DPDK ")) dpdk.remove_prefix(5);
    return BuildInfo{LINECAP_VERSION, std::string(dpdk)};
}

std::vector<MetricFamily> build_metric_families(const MetricsSnapshot& snapshot, const BuildInfo& build) {
    std::vector<MetricFamily> out;

    MetricFamily info = family(kBuildInfoMetric);
    add_gauge(info, {{"version", build.version}, {"dpdk_version", build.dpdk_version}}, 1);
    out.push_back(std::move(info));

    out.push_back(per_stream_counter(snapshot, kRxPacketsMetric));
    out.push_back(per_stream_counter(snapshot, kRxBytesMetric));
    out.push_back(per_stream_counter(snapshot, kWrittenPacketsMetric));
    out.push_back(per_stream_counter(snapshot, kWrittenBytesMetric));
    out.push_back(per_stream_counter(snapshot, kFilteredPacketsMetric));
    // Always exported (zeros where off), so that the accounting sums work unchanged.
    out.push_back(per_stream_counter(snapshot, kFlowCapCutPacketsMetric));
    out.push_back(per_stream_counter(snapshot, kFlowCapDroppedPacketsMetric));
    out.push_back(per_stream_counter(snapshot, kFlowCapSavedBytesMetric));
    out.push_back(per_stream_counter(snapshot, kFlowCapEvictedFlowsMetric));
    out.push_back(per_stream_counter(snapshot, kDedupPacketsMetric));
    out.push_back(per_stream_counter(snapshot, kDedupSavedBytesMetric));
    out.push_back(per_stream_counter(snapshot, kClockClampedPacketsMetric));
    out.push_back(per_stream_counter(snapshot, kClockUnstampedPacketsMetric));
    out.push_back(dropped_packets_family(snapshot));
    add_port_families(out, snapshot);
    add_clock_families(out, snapshot);
    add_output_families(out, snapshot);
    add_worker_families(out, snapshot);
    if (snapshot.feed) add_feed_families(out, *snapshot.feed);
    return out;
}

}  // namespace linecap
