#include "metrics/collector.hpp"
#include "util/utc_time.hpp"

#include <algorithm>
#include <ctime>
#include <limits>

namespace linecap {
namespace {

uint64_t load(const std::atomic<uint64_t>& value) { return value.load(std::memory_order_relaxed); }

// How often the store's file-system figures are taken: the collection period.
constexpr std::chrono::milliseconds kStoreFiguresPeriod{1000};

// A service's counters, when it runs.
template <template <class> class Of>
std::optional<Of<uint64_t>> counts_if(const Of<std::atomic<uint64_t>>* live) {
    if (live == nullptr) return std::nullopt;
    return read_counts(*live);
}

// The earlier of two "oldest" stamps, 0 meaning none.
uint64_t oldest_of(uint64_t a, uint64_t b) { return a == 0 ? b : b == 0 ? a : std::min(a, b); }

// Adds one volume's counts of a service to the store's (absent: the service is off).
template <template <class> class Of>
void add_volume(std::optional<Of<uint64_t>>& sum, const Of<std::atomic<uint64_t>>* live) {
    const std::optional<Of<uint64_t>> counts = counts_if(live);
    if (!counts) return;
    if (!sum) {
        sum = counts;
        return;
    }
    Of<uint64_t>::fields([](uint64_t& total, const uint64_t& add) { total += add; }, *sum, *counts);
}

// The store's counts over its volumes: sums, except the stamps and passes, which are the
// volume furthest behind's.
void add_volume_counts(MetricsSnapshot& next, const VolumeView& view, const VolumeSample& sample, bool first) {
    const RetentionCounts before = next.retention;
    RetentionCounts::fields([](uint64_t& sum, const uint64_t& add) { sum += add; }, next.retention, sample.retention);
    next.retention.oldest_packet_ns = oldest_of(before.oldest_packet_ns, sample.retention.oldest_packet_ns);
    next.retention.budget_unmet = std::max(before.budget_unmet, sample.retention.budget_unmet);
    add_volume(next.manifest, view.manifest);
    add_volume(next.indexing, view.indexing);
    add_volume(next.compressing, view.compressing);
    const std::optional<ScrubCounts> scrub_before = next.scrub;
    add_volume(next.scrub, view.scrub);
    if (scrub_before && next.scrub && !first) {
        const std::optional<ScrubCounts> mine = counts_if(view.scrub);
        next.scrub->passes = std::min(scrub_before->passes, mine->passes);
        next.scrub->last_pass_end_ns = std::min(scrub_before->last_pass_end_ns, mine->last_pass_end_ns);
        next.scrub->period_s = std::max(scrub_before->period_s, mine->period_s);
    }
    const std::optional<ArchiveCounts> archive_before = next.archiving;
    add_volume(next.archiving, view.archiving);
    if (archive_before && next.archiving)
        next.archiving->backlog_oldest_mtime_ns =
            oldest_of(archive_before->backlog_oldest_mtime_ns, counts_if(view.archiving)->backlog_oldest_mtime_ns);
}

}  // namespace

StoreFiguresSampler::StoreFiguresSampler(std::function<StoreFigures()> take, std::chrono::milliseconds period)
    : take_(std::move(take)), period_(period), thread_([this] { run(); }) {}

StoreFiguresSampler::~StoreFiguresSampler() {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
}

void StoreFiguresSampler::run() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        lock.unlock();
        StoreFigures fresh = take_();
        lock.lock();
        last_ = std::move(fresh);
        taken_ = true;
        changed_.notify_all();
        changed_.wait_for(lock, period_, [this] { return stopping_; });
    }
}

StoreFigures StoreFiguresSampler::get() {
    std::unique_lock lock(mutex_);
    if (!taken_) changed_.wait_for(lock, kFirstWait, [this] { return taken_; });
    return last_;
}

MetricsCollector::MetricsCollector(CaptureViews views, std::unique_ptr<PortStatsSource> port_stats,
                                   FilesystemProbe filesystem, BuildInfo build)
    : views_(std::move(views)),
      port_stats_(std::move(port_stats)),
      filesystem_(std::move(filesystem)),
      build_(std::move(build)),
      store_figures_(
          [this] {
              StoreFigures f;
              if (filesystem_ && !views_.output_directory.empty()) f.output = filesystem_(views_.output_directory);
              for (const VolumeView& view : views_.volumes)
                  f.volumes.push_back(filesystem_ ? filesystem_(view.directory) : std::nullopt);
              if (!views_.output_directory.empty()) {
                  const HoldListing holds = list_holds(views_.output_directory, utc_now_ns(), false);
                  f.holds = std::pair{holds.holds.size(), holds.bytes};
              }
              return f;
          },
          kStoreFiguresPeriod),
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
        history.xsk_fill_empty.observe(c->xsk_fill_empty);
        history.xsk_ring_full.observe(c->xsk_ring_full);
    }  // else: keep the previous totals; a failed read must not look like a reset
    // net_af_xdp's imissed includes the packets its sockets dropped for an empty fill ring,
    // read a moment later (so possibly a few more). imissed is split into those and the
    // rest so that both parts only grow and always sum to imissed: the fill-ring part takes
    // what the socket counted, at most what imissed leaves beside the rest's last value.
    // Once traffic stops it is exactly the socket's count.
    const uint64_t missed = history.imissed.total();
    history.fill_empty_part = std::max(history.fill_empty_part,
                                       std::min(history.xsk_fill_empty.total(), missed - history.missed_rest));
    history.missed_rest = missed - history.fill_empty_part;
    PortSample p;
    p.name = view.name;
    p.device = view.device;
    p.stamps = view.stamps;
    p.identity = *history.identity;
    p.counters = PortCounters{
        .ipackets = history.ipackets.total(),
        .ibytes = history.ibytes.total(),
        .imissed = history.missed_rest,
        .ierrors = history.ierrors.total(),
        .rx_nombuf = history.rx_nombuf.total(),
        .xsk_fill_empty = history.fill_empty_part,
        .xsk_ring_full = history.xsk_ring_full.total(),
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
    const StoreFigures figures = store_figures_.get();
    next.filesystem = figures.output;
    next.holds = figures.holds;
    if (views_.backlog_blocks) next.backlog_blocks = views_.backlog_blocks();
    next.collected_ns = utc_now_ns();
    if (views_.retention != nullptr) next.retention = read_counts(*views_.retention);
    next.manifest = counts_if(views_.manifest);
    next.indexing = counts_if(views_.indexing);
    next.compressing = counts_if(views_.compressing);
    next.scrub = counts_if(views_.scrub);
    next.archiving = counts_if(views_.archiving);
    if (!views_.volumes.empty()) {
        next.retention = {};
        next.manifest.reset();
        next.indexing.reset();
        next.compressing.reset();
        next.scrub.reset();
        next.archiving.reset();
        for (const VolumeView& view : views_.volumes) {
            VolumeSample& v = next.volumes.emplace_back();
            v.directory = view.directory;
            if (view.counters != nullptr) v.counts = read_counts(*view.counters);
            if (view.retention != nullptr) v.retention = read_counts(*view.retention);
            const size_t i = next.volumes.size() - 1;
            if (i < figures.volumes.size()) v.filesystem = figures.volumes[i];
            add_volume_counts(next, view, v, next.volumes.size() == 1);
        }
    }
    if (views_.feed) next.feed = views_.feed();
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
