#include "metrics/collector.hpp"
#include "util/utc_time.hpp"

#include <algorithm>
#include <ctime>
#include <limits>

namespace linecap {
namespace {

uint64_t load(const std::atomic<uint64_t>& value) { return value.load(std::memory_order_relaxed); }

RetentionSample sample_retention(const RetentionCounters* r) {
    RetentionSample s;
    if (r == nullptr) return s;
    const uint64_t oldest = load(r->oldest_packet_ns);
    const uint64_t now = utc_now_ns();
    if (oldest != 0 && now > oldest) s.horizon_seconds = static_cast<double>(now - oldest) / 1e9;
    s.files = load(r->files);
    s.bytes = load(r->bytes);
    s.held_files = load(r->held_files);
    s.deleted_files = load(r->deleted_files);
    s.deleted_bytes = load(r->deleted_bytes);
    s.budget_unmet = load(r->budget_unmet) != 0;
    return s;
}

std::optional<ManifestSample> sample_manifest(const ManifestCounters* c) {
    if (c == nullptr) return std::nullopt;
    // Read as gauges by two threads' fetch_add/fetch_sub: never negative, since the bytes
    // are counted in before the hasher can count them out.
    return ManifestSample{load(c->backlog_bytes), load(c->backlog_files), load(c->hashed_bytes),
                          load(c->written_files), load(c->failed_files),  load(c->deleted_files)};
}

std::optional<IndexingSample> sample_indexing(const IndexingCounters* c) {
    if (c == nullptr) return std::nullopt;
    return IndexingSample{load(c->built_files),  load(c->failed_files), load(c->skipped_files),
                          load(c->queued_files), load(c->pcap_bytes),   load(c->index_bytes),
                          static_cast<double>(load(c->busy_ns)) / 1e9};
}

std::optional<CompressSample> sample_compressing(const CompressCounters* c) {
    if (c == nullptr) return std::nullopt;
    return CompressSample{load(c->compressed_files), load(c->failed_files), load(c->pcap_bytes),
                          load(c->compressed_bytes), static_cast<double>(load(c->cpu_ns)) / 1e9};
}

std::optional<ScrubSample> sample_scrub(const ScrubCounters* c) {
    if (c == nullptr) return std::nullopt;
    return ScrubSample{load(c->ok_files),         load(c->mismatched_files), load(c->missing_manifests),
                       load(c->bad_manifests),    load(c->unreadable_files), load(c->bytes_read),
                       load(c->damaged_files),    load(c->passes),
                       static_cast<double>(load(c->last_pass_end_ns)) / 1e9,
                       static_cast<double>(load(c->period_s))};
}

}  // namespace

MetricsCollector::MetricsCollector(CaptureViews views, std::unique_ptr<PortStatsSource> port_stats,
                                   FilesystemProbe filesystem, BuildInfo build)
    : views_(std::move(views)),
      port_stats_(std::move(port_stats)),
      filesystem_(std::move(filesystem)),
      build_(std::move(build)),
      worker_history_(views_.workers.size()),
      port_history_(views_.ports.size()) {}

StreamSample MetricsCollector::sample_stream(const StreamView& view) const {
    StreamSample s;
    s.port = view.port;
    s.queue = view.queue;
    if (view.capture != nullptr) s.capture = read_counts(*view.capture);
    if (view.output != nullptr) s.output = read_counts(*view.output);
    return s;
}

PortSample MetricsCollector::sample_port(const PortView& view, PortHistory& history) {
    if (!history.identity) history.identity = port_stats_->identity(view.port_id);
    if (const auto c = port_stats_->counters(view.port_id)) {
        history.ipackets.observe(c->ipackets);
        history.ibytes.observe(c->ibytes);
        history.imissed.observe(c->imissed);
        history.ierrors.observe(c->ierrors);
        history.rx_nombuf.observe(c->rx_nombuf);
    }  // else: keep the previous totals; a failed read must not look like a reset
    PortSample p;
    p.name = view.name;
    p.device = view.device;
    p.stamps = view.stamps;
    p.identity = *history.identity;
    p.counters = PortCounters{
        .ipackets = history.ipackets.total(),
        .ibytes = history.ibytes.total(),
        .imissed = history.imissed.total(),
        .ierrors = history.ierrors.total(),
        .rx_nombuf = history.rx_nombuf.total(),
    };
    p.link = port_stats_->link(view.port_id);
    return p;
}

WorkerSample MetricsCollector::sample_worker(const WorkerView& view, WorkerHistory& history) const {
    WorkerSample w;
    w.lcore = view.lcore;
    w.polling = view.control != nullptr && view.control->polling.load(std::memory_order_relaxed);
    w.cycles_per_packet = std::numeric_limits<double>::quiet_NaN();
    if (view.counters == nullptr) return w;

    const LcoreCounters& c = *view.counters;
    w.loops = c.loops.get();
    w.max_poll_gap_s = static_cast<double>(c.max_poll_gap_ns.get()) / 1e9;
    // The three are separate relaxed stores, so a read may pair one publication's busy
    // cycles with a neighbouring publication's total; the error is one publication
    // period at most, and the clamp keeps the ratio within [0, 1] meanwhile.
    const uint64_t total_cycles = c.total_cycles.get();
    const uint64_t busy_cycles = c.busy_cycles.get();
    const uint64_t packets = c.packets.get();

    const uint64_t d_total = total_cycles - std::min(total_cycles, history.total_cycles);
    const uint64_t d_busy = busy_cycles - std::min(busy_cycles, history.busy_cycles);
    const uint64_t d_packets = packets - std::min(packets, history.packets);
    if (d_total > 0) w.busy_ratio = std::clamp(static_cast<double>(d_busy) / static_cast<double>(d_total), 0.0, 1.0);
    if (d_packets > 0) w.cycles_per_packet = static_cast<double>(d_busy) / static_cast<double>(d_packets);
    history = WorkerHistory{busy_cycles, total_cycles, packets};
    return w;
}

bool MetricsCollector::all_workers_polling() const {
    if (views_.all_workers_polling) return views_.all_workers_polling();
    return std::all_of(views_.workers.begin(), views_.workers.end(), [](const WorkerView& w) {
        return w.control != nullptr && w.control->polling.load(std::memory_order_relaxed);
    });
}

void MetricsCollector::collect() {
    MetricsSnapshot next;
    next.collected = true;
    next.streams.reserve(views_.streams.size());
    for (const StreamView& view : views_.streams) next.streams.push_back(sample_stream(view));
    next.ports.reserve(views_.ports.size());
    for (size_t i = 0; i < views_.ports.size(); ++i) next.ports.push_back(sample_port(views_.ports[i], port_history_[i]));
    next.workers.reserve(views_.workers.size());
    for (size_t i = 0; i < views_.workers.size(); ++i) {
        next.workers.push_back(sample_worker(views_.workers[i], worker_history_[i]));
    }
    next.all_workers_polling = all_workers_polling();
    if (views_.write_latency != nullptr) {
        LatencySample latency;
        for (size_t i = 0; i < WriteLatency::kBuckets; ++i) latency.per_bucket[i] = load(views_.write_latency->bucket[i]);
        latency.sum_ns = load(views_.write_latency->sum_ns);
        next.write_latency = latency;
    }
    if (filesystem_ && !views_.output_directory.empty()) next.filesystem = filesystem_(views_.output_directory);
    if (views_.backlog_blocks) next.backlog_blocks = views_.backlog_blocks();
    next.retention = sample_retention(views_.retention);
    next.manifest = sample_manifest(views_.manifest);
    next.indexing = sample_indexing(views_.indexing);
    next.compressing = sample_compressing(views_.compressing);
    next.scrub = sample_scrub(views_.scrub);
    if (views_.clock_quality != nullptr)
        next.clock = ClockQualitySample{views_.clock_quality->sample(), views_.clock_quality->steps(),
                                        views_.clock_quality->status_source()};

    const std::lock_guard lock(mutex_);
    published_ = std::move(next);
}

std::vector<prometheus::MetricFamily> MetricsCollector::Collect() const {
    const std::lock_guard lock(mutex_);
    return build_metric_families(published_, build_);
}

Readiness MetricsCollector::readiness() const {
    const std::lock_guard lock(mutex_);
    return evaluate_readiness(published_);
}

MetricsSnapshot MetricsCollector::snapshot() const {
    const std::lock_guard lock(mutex_);
    return published_;
}

}  // namespace linecap
