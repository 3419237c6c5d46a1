#include "metrics/exposition.hpp"

#include <rte_version.h>

#include <limits>
#include <string_view>

#include "linecap_build.h"

namespace linecap {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

using Labels = std::vector<ClientMetric::Label>;

// Port-level drops carry queue="all" so every drop series has the same label names.
constexpr const char* kAllQueues = "all";

MetricFamily family(std::string name, std::string help, MetricType type) {
    return MetricFamily{std::move(name), std::move(help), type, {}};
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
void push_gauge(std::vector<MetricFamily>& out, const char* name, const char* help, double value) {
    MetricFamily f = family(name, help, MetricType::Gauge);
    add_gauge(f, {}, value);
    out.push_back(std::move(f));
}

void push_counter(std::vector<MetricFamily>& out, const char* name, const char* help, double value) {
    MetricFamily f = family(name, help, MetricType::Counter);
    add_counter(f, {}, value);
    out.push_back(std::move(f));
}

Labels port_labels(const std::string& port) { return {{"port", port}}; }

Labels queue_labels(const StreamSample& s) { return {{"port", s.port}, {"queue", std::to_string(s.queue)}}; }

Labels lcore_labels(const WorkerSample& w) { return {{"lcore", std::to_string(w.lcore)}}; }

// One counter family with one series per (port, queue) stream.
MetricFamily per_stream_counter(const MetricsSnapshot& snapshot, std::string name, std::string help,
                                uint64_t StreamSample::*field) {
    MetricFamily f = family(std::move(name), std::move(help), MetricType::Counter);
    for (const StreamSample& s : snapshot.streams) add_counter(f, queue_labels(s), s.*field);
    return f;
}

MetricFamily dropped_packets(const MetricsSnapshot& snapshot) {
    MetricFamily f = family("linecap_dropped_packets_total",
                            "Packets that reached the port but were not written, by reason. Per queue: "
                            "writer_full (no free write block), write_error (I/O error), disk_full "
                            "(ENOSPC/EDQUOT). Per port, queue=\"all\": nic_missed (rte_eth_stats imissed), "
                            "nic_error (ierrors), no_mbuf (rx_nombuf).",
                            MetricType::Counter);
    const auto with_reason = [](Labels labels, const char* reason) {
        labels.push_back({"reason", reason});
        return labels;
    };
    for (const StreamSample& s : snapshot.streams) {
        add_counter(f, with_reason(queue_labels(s), "writer_full"), s.writer_full_packets);
        add_counter(f, with_reason(queue_labels(s), "write_error"), s.write_error_packets);
        add_counter(f, with_reason(queue_labels(s), "disk_full"), s.disk_full_packets);
    }
    for (const PortSample& p : snapshot.ports) {
        const Labels labels = {{"port", p.name}, {"queue", kAllQueues}};
        add_counter(f, with_reason(labels, "nic_missed"), p.counters.imissed);
        add_counter(f, with_reason(labels, "nic_error"), p.counters.ierrors);
        add_counter(f, with_reason(labels, "no_mbuf"), p.counters.rx_nombuf);
    }
    return f;
}

void add_port_families(std::vector<MetricFamily>& out, const MetricsSnapshot& snapshot) {
    MetricFamily received = family(
        "linecap_port_received_packets_total",
        "Packets that reached the port: ipackets + imissed + ierrors + rx_nombuf. Each is exactly one of "
        "written, filtered or dropped (once the queues are drained).",
        MetricType::Counter);
    MetricFamily link_up = family("linecap_port_link_up", "1 when the port's link is up.", MetricType::Gauge);
    MetricFamily speed = family("linecap_port_link_speed_bps", "Link speed in bits per second; 0 when down or unknown.",
                                MetricType::Gauge);
    MetricFamily info = family("linecap_port_info", "Port identity; always 1.", MetricType::Gauge);
    for (const PortSample& p : snapshot.ports) {
        const PortCounters& c = p.counters;
        add_counter(received, port_labels(p.name), c.ipackets + c.imissed + c.ierrors + c.rx_nombuf);
        add_gauge(link_up, port_labels(p.name), p.link.up ? 1 : 0);
        add_gauge(speed, port_labels(p.name), static_cast<double>(p.link.speed_bps));
        add_gauge(info, {{"port", p.name}, {"device", p.device}, {"driver", p.identity.driver}}, 1);
    }
    out.push_back(std::move(received));
    out.push_back(std::move(link_up));
    out.push_back(std::move(speed));
    out.push_back(std::move(info));
}

void add_worker_families(std::vector<MetricFamily>& out, const MetricsSnapshot& snapshot) {
    MetricFamily busy = family("linecap_worker_busy_ratio",
                               "Share of the worker's TSC cycles spent in iterations that received packets, over "
                               "the last collection interval.",
                               MetricType::Gauge);
    MetricFamily heartbeat = family("linecap_worker_heartbeat_total",
                                    "Poll loop iterations; stops advancing when the worker stalls.",
                                    MetricType::Counter);
    MetricFamily cpp = family("linecap_worker_cycles_per_packet",
                              "Busy TSC cycles per packet handled over the last collection interval; NaN when the "
                              "worker handled no packet.",
                              MetricType::Gauge);
    MetricFamily polling = family("linecap_worker_polling", "1 while the worker's poll loop runs.", MetricType::Gauge);
    for (const WorkerSample& w : snapshot.workers) {
        add_gauge(busy, lcore_labels(w), w.busy_ratio);
        add_counter(heartbeat, lcore_labels(w), w.loops);
        add_gauge(cpp, lcore_labels(w), w.cycles_per_packet);
        add_gauge(polling, lcore_labels(w), w.polling ? 1 : 0);
    }
    out.push_back(std::move(busy));
    out.push_back(std::move(heartbeat));
    out.push_back(std::move(cpp));
    out.push_back(std::move(polling));
}

// A real histogram: cumulative buckets with `le` in seconds, +Inf, _sum and _count.
// _count is the bucket total rather than WriteLatency::count, so +Inf and _count always
// agree even when the writer is between its bucket and count updates.
MetricFamily write_latency(const LatencySample& sample) {
    MetricFamily f = family("linecap_write_latency_seconds", "Duration of the writer's write syscalls.",
                            MetricType::Histogram);
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

// Always exported (zeros without a writer): the horizon is meaningful with or without
// retention limits — it is how far back the kept files reach.
void add_retention_families(std::vector<MetricFamily>& out, const RetentionSample& r) {
    push_gauge(out, "linecap_retention_horizon_seconds",
               "Age of the oldest packet still kept in a finished capture file (how far back a question can be "
               "answered); 0 when no file is kept.",
               r.horizon_seconds);
    push_gauge(out, "linecap_retention_files", "Finished capture files kept in the output directory.",
               static_cast<double>(r.files));
    push_gauge(out, "linecap_retention_bytes",
               "Bytes of the finished capture files kept, manifests and indexes included.",
               static_cast<double>(r.bytes));
    push_gauge(out, "linecap_retention_held_files", "Kept capture files that are on the legal hold list.",
               static_cast<double>(r.held_files));
    push_gauge(out, "linecap_retention_budget_unmet",
               "1 while a retention limit cannot be met (the remaining files are on hold, the hold list is "
               "unreadable, or deleting failed).",
               r.budget_unmet ? 1 : 0);
    push_counter(out, "linecap_retention_deleted_files_total", "Capture files deleted by retention.",
                 static_cast<double>(r.deleted_files));
    push_counter(out, "linecap_retention_deleted_bytes_total",
                 "Bytes deleted by retention (capture files and their sidecars).",
                 static_cast<double>(r.deleted_bytes));
}

// Only with output.index on. The queue is what an operator watches: it grows while the
// writer keeps the control core busy and shrinks when traffic drops.
void add_indexing_families(std::vector<MetricFamily>& out, const IndexingSample& s) {
    MetricFamily files = family("linecap_index_files_total",
                                "Finished capture files the background indexer handled, by result: built, failed "
                                "(logged), skipped (queue full; run linecap index).",
                                MetricType::Counter);
    add_counter(files, {{"result", "built"}}, s.built_files);
    add_counter(files, {{"result", "failed"}}, s.failed_files);
    add_counter(files, {{"result", "skipped"}}, s.skipped_files);
    out.push_back(std::move(files));
    push_gauge(out, "linecap_index_queued_files", "Finished capture files waiting to be indexed.",
               static_cast<double>(s.queued_files));
    push_counter(out, "linecap_index_source_bytes_total", "Bytes of capture files indexed.",
                 static_cast<double>(s.pcap_bytes));
    push_counter(out, "linecap_index_bytes_total", "Bytes of index files written.", static_cast<double>(s.index_bytes));
    push_counter(out, "linecap_index_busy_seconds_total",
                 "Wall time the indexer spent building indexes (at idle priority).", s.busy_seconds);
}

// Only with output.scrub.enabled. damaged_files is what the alert watches: a capture
// file whose bytes no longer match its manifest answers queries with what it holds now,
// not with what was captured.
void add_scrub_families(std::vector<MetricFamily>& out, const ScrubSample& s) {
    MetricFamily files = family("linecap_scrub_files_total",
                                "Finished capture files the background scrub checked against their manifests, by "
                                "result: ok, mismatch (bytes differ: marked damaged), no_manifest and bad_manifest "
                                "(cannot be checked), unreadable (read error, logged).",
                                MetricType::Counter);
    add_counter(files, {{"result", "ok"}}, s.ok_files);
    add_counter(files, {{"result", "mismatch"}}, s.mismatched_files);
    add_counter(files, {{"result", "no_manifest"}}, s.missing_manifests);
    add_counter(files, {{"result", "bad_manifest"}}, s.bad_manifests);
    add_counter(files, {{"result", "unreadable"}}, s.unreadable_files);
    out.push_back(std::move(files));
    push_counter(out, "linecap_scrub_read_bytes_total", "Bytes of capture files the scrub read.",
                 static_cast<double>(s.bytes_read));
    push_gauge(out, "linecap_scrub_damaged_files",
               "Capture files marked damaged (NAME.damaged): their bytes no longer match their manifest.",
               static_cast<double>(s.damaged_files));
    push_counter(out, "linecap_scrub_passes_total", "Scrub passes over the whole store completed by this run.",
                 static_cast<double>(s.passes));
    push_gauge(out, "linecap_scrub_last_pass_completed_timestamp_seconds",
               "When the last scrub pass over the whole store completed (Unix time, kept across restarts); 0: none "
               "yet.",
               s.last_pass_end_seconds);
    push_gauge(out, "linecap_scrub_period_seconds", "output.scrub.period: the store is re-read once per period.",
               s.period_seconds);
}

void add_output_families(std::vector<MetricFamily>& out, const MetricsSnapshot& snapshot) {
    out.push_back(per_stream_counter(snapshot, "linecap_files_finalised_total",
                                     "Capture files completed (synced and renamed to their final name).",
                                     &StreamSample::files_finalised));
    out.push_back(per_stream_counter(snapshot, "linecap_output_file_bytes_total",
                                     "Bytes appended to capture files, file and record headers included.",
                                     &StreamSample::file_bytes));
    if (snapshot.filesystem) {
        MetricFamily free = family("linecap_output_filesystem_free_bytes",
                                   "Bytes available to the daemon on the output directory's filesystem.",
                                   MetricType::Gauge);
        add_gauge(free, {}, static_cast<double>(snapshot.filesystem->free_bytes));
        MetricFamily size = family("linecap_output_filesystem_size_bytes",
                                   "Size of the output directory's filesystem.", MetricType::Gauge);
        add_gauge(size, {}, static_cast<double>(snapshot.filesystem->size_bytes));
        out.push_back(std::move(free));
        out.push_back(std::move(size));
    }
    push_gauge(out, "linecap_writer_backlog_blocks", "Full write blocks waiting for the writer, all streams.",
               static_cast<double>(snapshot.backlog_blocks));
    if (snapshot.write_latency) out.push_back(write_latency(*snapshot.write_latency));
    add_retention_families(out, snapshot.retention);
    if (snapshot.indexing) add_indexing_families(out, *snapshot.indexing);
    if (snapshot.scrub) add_scrub_families(out, *snapshot.scrub);
}

}  // namespace

BuildInfo current_build_info() {
    std::string_view dpdk = rte_version();
    if (dpdk.starts_with("DPDK ")) dpdk.remove_prefix(5);
    return BuildInfo{LINECAP_VERSION, std::string(dpdk)};
}

std::vector<MetricFamily> build_metric_families(const MetricsSnapshot& snapshot, const BuildInfo& build) {
    std::vector<MetricFamily> out;

    MetricFamily info = family("linecap_build_info", "linecapd build; always 1.", MetricType::Gauge);
    add_gauge(info, {{"version", build.version}, {"dpdk_version", build.dpdk_version}}, 1);
    out.push_back(std::move(info));

    out.push_back(per_stream_counter(snapshot, "linecap_rx_packets_total",
                                     "Packets the worker received from the rx queue (rte_eth_rx_burst).",
                                     &StreamSample::rx_packets));
    out.push_back(per_stream_counter(snapshot, "linecap_rx_bytes_total",
                                     "Bytes (wire length) the worker received from the rx queue.",
                                     &StreamSample::rx_bytes));
    out.push_back(per_stream_counter(snapshot, "linecap_written_packets_total",
                                     "Packets that reached a capture file.", &StreamSample::written_packets));
    out.push_back(per_stream_counter(snapshot, "linecap_written_bytes_total",
                                     "Original (wire) length of the packets that reached a capture file.",
                                     &StreamSample::written_bytes));
    out.push_back(per_stream_counter(snapshot, "linecap_filtered_packets_total",
                                     "Packets rejected by the capture filter (by design, not a drop).",
                                     &StreamSample::filtered_packets));
    out.push_back(dropped_packets(snapshot));
    add_port_families(out, snapshot);
    add_output_families(out, snapshot);
    add_worker_families(out, snapshot);
    return out;
}

}  // namespace linecap
