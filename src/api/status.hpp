// /api/v1/status: what linecapd says about itself (its Prometheus endpoint, scraped on
// each request: ports, link, rates, drops by reason, retention, the file system of the
// store) plus what the store says (files, oldest and newest packet time from the names).
// linecapd being down is reported, not an error: the store can still be queried.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "archive/store_inventory.hpp"
#include "config/config.hpp"

namespace linecap::api {

// One sample of the Prometheus text format.
struct MetricSample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
};

// Parses the text exposition format; lines it cannot read are skipped.
std::vector<MetricSample> parse_prometheus_text(const std::string& text);

class StatusSource {
public:
    // `store`: the store the API answers over (an archive; kept by the caller), nullptr:
    // the configuration's directory.
    explicit StatusSource(const Config& config, const StoreBackend* store = nullptr);
    std::string json(unsigned queries_running, unsigned max_queries);

private:
    Config config_;
    const StoreBackend* store_;
    std::string metrics_url_;
    std::mutex mu_;  // the previous scrape, for rates
    std::map<std::string, double> previous_;
    std::chrono::steady_clock::time_point previous_at_{};
};

}  // namespace linecap::api
