#include "metrics/status_document.hpp"

#include <map>
#include <nlohmann/json.hpp>

namespace linecap {

std::string status_document(const MetricsSnapshot& snapshot) {
    using Json = nlohmann::ordered_json;
    std::map<std::string, Json> ports;  // by name: the document lists them sorted
    const auto port = [&ports](const std::string& name) -> Json& {
        Json& p = ports[name];
        if (p.is_null()) {
            p = {{"port", name},          {"link_up", false},         {"received_packets", 0},
                 {"received_bytes", 0},   {"written_packets", 0},     {"filtered_packets", 0},
                 {"dropped_packets", 0},  {"dropped", Json::object()}};
        }
        return p;
    };
    const auto add = [](Json& p, const char* key, uint64_t n) { p[key] = p[key].get<uint64_t>() + n; };
    const auto drop = [&add](Json& p, std::string_view reason, uint64_t n) {
        Json& by_reason = p["dropped"];
        const std::string r(reason);
        by_reason[r] = by_reason.value(r, uint64_t{0}) + n;
        add(p, "dropped_packets", n);
    };
    for (const PortSample& s : snapshot.ports) {
        Json& p = port(s.name);
        p["link_up"] = s.link.up;
        for_each_port_drop(s.counters, [&](std::string_view reason, uint64_t n) { drop(p, reason, n); });
    }
    for (const StreamSample& s : snapshot.streams) {
        Json& p = port(s.port);
        add(p, "received_packets", s.capture.*kRxPacketsMetric.field);
        add(p, "received_bytes", s.capture.*kRxBytesMetric.field);
        add(p, "filtered_packets", s.capture.*kFilteredPacketsMetric.field);
        add(p, "written_packets", s.output.*kWrittenPacketsMetric.field);
        for_each_stream_drop(s, [&](std::string_view reason, uint64_t n) { drop(p, reason, n); });
    }

    Json j;
    j["collected_ns"] = snapshot.collected_ns;
    Json list = Json::array();
    for (auto& [name, p] : ports) list.push_back(std::move(p));
    j["ports"] = std::move(list);
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
