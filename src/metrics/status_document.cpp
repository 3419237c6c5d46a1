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
    if (!snapshot.volumes.empty()) {
        std::vector<Json> volumes;
        for (const VolumeSample& v : snapshot.volumes) {
            Json volume = {{"directory", v.directory},
                           {"state", v.counts.healthy != 0 ? "healthy" : "failed"},
                           {"streams", v.counts.streams},
                           {"written_bytes", v.counts.file_bytes},
                           {"written_packets", v.counts.written_packets},
                           {"dropped", {{"write_error", v.counts.write_error_packets},
                                        {"disk_full", v.counts.disk_full_packets}}},
                           {"failures", v.counts.failures},
                           {"stalls", v.counts.stalls},
                           {"files", v.retention.files},
                           {"bytes", v.retention.bytes}};
            if (v.filesystem) volume["free_bytes"] = v.filesystem->free_bytes;
            volumes.push_back(std::move(volume));
        }
        j["volumes"] = std::move(volumes);
    }
    // Port names (and volume directories) come from the configuration: invalid UTF-8 is replaced, not thrown on.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace linecap
