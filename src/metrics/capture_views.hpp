// What the metrics collector reads: the engine's views of its counters (StreamView,
// PortView, WorkerView; capture/views.hpp) plus the few writer-side values that are not
// per stream and the background indexer's counters. Built once after the engine starts
// (by main, src/linecapd.cpp) or by hand in unit tests, which is why this is a plain
// struct and not the engine itself: metrics builds without the engine.
//
// Only MetricsCollector::collect() (control thread) dereferences these pointers; the
// HTTP threads see nothing but the collector's snapshot. So the views must outlive the
// last collect() call, not the HTTP server.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "archive/archive_service.hpp"
#include "archive/compress.hpp"
#include "archive/index_service.hpp"
#include "archive/scrub.hpp"
#include "capture/views.hpp"
#include "feed/feed.hpp"
#include "output/writer.hpp"

namespace linecap {

// One capture volume (Writer::volume_*): its directory (the `volume` label) and counters.
struct VolumeView {
    std::string directory;
    const VolumeCounters* counters = nullptr;
    const RetentionCounters* retention = nullptr;
    const ManifestCounters* manifest = nullptr;  // null: output.manifest off
    // The volume's pipeline (archive/pipeline.hpp); null: the stage is off.
    const IndexingCounters* indexing = nullptr;
    const CompressCounters* compressing = nullptr;
    const ScrubCounters* scrub = nullptr;
    const ArchiveCounters* archiving = nullptr;
};

struct CaptureViews {
    std::vector<StreamView> streams;
    std::vector<PortView> ports;
    std::vector<WorkerView> workers;
    const WriteLatency* write_latency = nullptr;
    std::function<size_t()> backlog_blocks;       // full blocks waiting, all streams
    // The engine's own verdict (CaptureEngine::all_workers_polling). When empty, every
    // worker's WorkerControl::polling flag is checked instead (unit tests).
    std::function<bool()> all_workers_polling;
    std::string output_directory;                 // statvfs target
    const RetentionCounters* retention = nullptr; // the writer's retention; null: zeros
    const ManifestCounters* manifest = nullptr;   // the writer's manifest hasher; null: off
    // The capture volumes; when given, retention, manifest and the pipeline's counters are
    // the sums over them (the pointers above are ignored) and each volume is sampled for
    // its labelled metrics.
    std::vector<VolumeView> volumes;
    const IndexingCounters* indexing = nullptr;  // the background indexer; null: off
    const CompressCounters* compressing = nullptr;  // the background compressor; null: off
    const ScrubCounters* scrub = nullptr;               // the background scrub; null: off
    const ArchiveCounters* archiving = nullptr;         // the archiver; null: output.archive off
    const ClockQualityBoard* clock_quality = nullptr;   // the host clock's state; null: not sampled
    std::function<FeedCounts()> feed;                   // the live feed's counters; empty: feed off
};

}  // namespace linecap
