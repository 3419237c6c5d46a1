// /api/v1/status: what linecapd says about itself (its /status document, read on each
// request — metrics/status_document.hpp: ports, link, drops by reason, retention, the file
// system of the store — with the rates between two requests added here) plus what the
// store says (files, oldest and newest packet time from the names). linecapd being down is
// reported, not an error: the store can still be queried.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "archive/store_inventory.hpp"
#include "config/config.hpp"

namespace linecap::api {

class StatusSource {
public:
    // `store`: the store the API answers over (an archive; kept by the caller), nullptr:
    // the configuration's directory.
    explicit StatusSource(const Config& config, const StoreBackend* store = nullptr);
    std::string json(unsigned queries_running, unsigned max_queries);

private:
    Config config_;
    const StoreBackend* store_;
    std::string status_url_;
    std::mutex mu_;  // the previous answer's counters ("port|what"), for rates
    std::map<std::string, double> previous_;
    std::chrono::steady_clock::time_point previous_at_{};
};

}  // namespace linecap::api
