#include "metrics/engine_views.hpp"

#include "capture/engine.hpp"
#include "metrics/ethdev_port_stats.hpp"

namespace linecap {

CaptureViews capture_views(const CaptureEngine& engine) {
    const Writer& writer = engine.writer();
    return CaptureViews{
        .streams = engine.streams(),
        .ports = engine.ports(),
        .workers = engine.workers(),
        .write_latency = &writer.latency(),
        .backlog_blocks = [&writer] { return writer.backlog_blocks(); },
        .all_workers_polling = [&engine] { return engine.all_workers_polling(); },
        .output_directory = engine.config().output.directory,
        .retention = &writer.retention(),
        .indexing = engine.indexing(),
        .scrub = engine.scrub(),
    };
}

std::unique_ptr<MetricsCollector> make_engine_collector(const CaptureEngine& engine) {
    return std::make_unique<MetricsCollector>(capture_views(engine), std::make_unique<EthdevPortStats>());
}

}  // namespace linecap
