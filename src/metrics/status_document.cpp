#include "metrics/status_document.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace linecap {

std::string status_document(const MetricsSnapshot& snapshot) {
    using Json = nlohmann::ordered_json;
    std::vector<Json> ports;
    for (const PortSample& p : snapshot.ports) {
        const PortTotals t = port_totals(snapshot, p);
        Json dropped = Json::object();
        for (const auto& [reason, n] : t.drops) dropped[std::string(reason)] = n;
        ports.push_back({{"port", p.name},
                         {"link_up", p.link.up},
                         {"received_packets", t.rx_packets},
                         {"received_bytes", t.rx_bytes},
                         {"written_packets", t.written},
                         {"filtered_packets", t.filtered},
                         {"dropped_packets", t.dropped},
                         {"dropped", std::move(dropped)}});
    }
    std::sort(ports.begin(), ports.end(), [](const Json& a, const Json& b) { return a["port"] < b["port"]; });

    Json j;
    j["collected_ns"] = snapshot.collected_ns;
    j["ports"] = std::move(ports);
    j["retention"] = {{"horizon_seconds", retention_horizon_seconds(snapshot.retention, snapshot.collected_ns)},
                      {"files", snapshot.retention.files},
                      {"bytes", snapshot.retention.bytes}};
    if (snapshot.indexing) j["index_queued_files"] = snapshot.indexing->queued_files;
    if (snapshot.scrub) j["scrub_damaged_files"] = snapshot.scrub->damaged_files;
    if (snapshot.filesystem)
        j["filesystem"] = {{"size_bytes", snapshot.filesystem->size_bytes},
                           {"free_bytes", snapshot.filesystem->free_bytes}};
    // Port names come from the configuration: invalid UTF-8 is replaced, not thrown on.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace linecap
