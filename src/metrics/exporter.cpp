#include "metrics/exporter.hpp"

#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include "metrics/status_document.hpp"

namespace linecap {

MetricsExporter::MetricsExporter(std::unique_ptr<MetricsCollector> collector)
    : collector_(std::move(collector)), registry_(std::make_shared<prometheus::Registry>()) {}

Result<std::unique_ptr<MetricsExporter>> MetricsExporter::start(const MetricsConfig& config,
                                                                std::unique_ptr<MetricsCollector> collector) {
    std::unique_ptr<MetricsExporter> exporter(new MetricsExporter(std::move(collector)));
    exporter->collect();
    if (!config.enabled) {
        spdlog::info("metrics endpoint disabled (metrics.enabled: false)");
        return exporter;
    }
    auto server = HttpServer::start(config.listen, exporter->routes());
    if (!server) return server.error();
    exporter->server_ = std::move(server.value());
    spdlog::info("metrics endpoint on {} (port {}): /metrics /status /healthz /ready", config.listen, exporter->port());
    return exporter;
}

std::string MetricsExporter::scrape() const {
    auto families = collector_->Collect();
    auto extra = registry_->Collect();
    families.insert(families.end(), std::make_move_iterator(extra.begin()), std::make_move_iterator(extra.end()));
    return prometheus::TextSerializer().Serialize(families);
}

std::vector<HttpRoute> MetricsExporter::routes() const {
    return {
        {"/metrics",
         [this] { return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", scrape()}; }},
        {"/status",
         [this] { return HttpResponse{200, "application/json", status_document(snapshot())}; }},
        {"/healthz", [] { return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"}; }},
        {"/ready",
         [this] {
             const Readiness r = readiness();
             return HttpResponse{r.ready ? 200 : 503, "text/plain; charset=utf-8", r.reason + "\n"};
         }},
    };
}

}  // namespace linecap
