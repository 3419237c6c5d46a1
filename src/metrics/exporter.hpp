// MetricsExporter: what the daemon holds for metrics. One collector, one registry for
// families other parts export themselves (e.g. retention), and the HTTP endpoint:
//
//   /metrics  Prometheus text format: the collector's last snapshot + the registry
//   /status   the same snapshot as one JSON document (status_document.hpp), for the API
//   /healthz  200 "ok" while the process runs (liveness)
//   /ready    200 "ready" when every port is up and every worker polls, else 503 and a
//             one-line reason (see readiness.hpp for what "up" means for vdevs)
//
// Lifetime: the control thread calls collect() about once a second and once more after
// CaptureEngine::stop() (before the engine is destroyed), so the last scrape is exact.
// Scrapes only read the published snapshot, so the server may outlive the engine.
#pragma once

#include <memory>
#include <string>

#include <prometheus/registry.h>

#include "config/config.hpp"
#include "metrics/collector.hpp"
#include "metrics/http_server.hpp"
#include "util/result.hpp"

namespace linecap {

class MetricsExporter {
public:
    // Collects once (so the first scrape has data), then, if config.enabled, listens on
    // config.listen. A bind failure is an error naming the address.
    static Result<std::unique_ptr<MetricsExporter>> start(const MetricsConfig& config,
                                                          std::unique_ptr<MetricsCollector> collector);

    void collect() { collector_->collect(); }       // control thread

    // Families registered here appear on /metrics next to the collector's.
    prometheus::Registry& registry() { return *registry_; }

    std::string scrape() const;                      // the /metrics body
    Readiness readiness() const { return collector_->readiness(); }
    MetricsSnapshot snapshot() const { return collector_->snapshot(); }  // the last collect()
    uint16_t port() const { return server_ ? server_->port() : 0; }   // 0 when disabled

private:
    explicit MetricsExporter(std::unique_ptr<MetricsCollector> collector);
    std::vector<HttpRoute> routes() const;

    std::unique_ptr<MetricsCollector> collector_;
    std::shared_ptr<prometheus::Registry> registry_;
    std::unique_ptr<HttpServer> server_;   // last member: stopped before what it reads
};

}  // namespace linecap
