#include "api/status.hpp"

#include <httplib.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "archive/store_inventory.hpp"
#include "store/time_spec.hpp"

namespace linecap::api {

std::vector<MetricSample> parse_prometheus_text(const std::string& text) {
    std::vector<MetricSample> out;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(pos, end - pos);
        pos = end + 1;
        if (line.empty() || line[0] == '#') continue;
        MetricSample s;
        size_t i = 0;
        while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
        s.name = line.substr(0, i);
        if (i < line.size() && line[i] == '{') {
            ++i;
            bool ok = true;
            while (i < line.size() && line[i] != '}') {
                const size_t eq = line.find('=', i);
                if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
                    ok = false;
                    break;
                }
                const std::string key = line.substr(i, eq - i);
                std::string value;
                size_t j = eq + 2;
                for (; j < line.size() && line[j] != '"'; ++j) {
                    if (line[j] == '\\' && j + 1 < line.size()) {
                        ++j;
                        value += line[j] == 'n' ? '\n' : line[j];
                    } else {
                        value += line[j];
                    }
                }
                if (j >= line.size()) {
                    ok = false;
                    break;
                }
                s.labels[key] = value;
                i = j + 1;
                if (i < line.size() && line[i] == ',') ++i;
            }
            if (!ok || i >= line.size()) continue;
            ++i;
        }
        while (i < line.size() && line[i] == ' ') ++i;
        const std::string value = line.substr(i, line.find(' ', i) - i);
        char* endp = nullptr;
        s.value = std::strtod(value.c_str(), &endp);
        if (value.empty() || endp != value.c_str() + value.size()) continue;
        out.push_back(std::move(s));
    }
    return out;
}

StatusSource::StatusSource(const Config& config, const StoreBackend* store) : config_(config), store_(store) {
    metrics_url_ = config.api.metrics_url.empty() ? "http://" + config.metrics.listen + "/metrics" : config.api.metrics_url;
}

std::string StatusSource::json(unsigned queries_running, unsigned max_queries) {
    nlohmann::ordered_json j;
    j["time"] = store::format_time(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count()));

    // linecapd, through its metrics endpoint.
    nlohmann::ordered_json daemon;
    daemon["metrics_url"] = metrics_url_;
    std::vector<MetricSample> samples;
    {
        const size_t scheme = metrics_url_.find("://");
        const size_t path = metrics_url_.find('/', scheme == std::string::npos ? 0 : scheme + 3);
        httplib::Client client(metrics_url_.substr(0, path));
        client.set_connection_timeout(2);
        client.set_read_timeout(2);
        auto res = client.Get(path == std::string::npos ? "/metrics" : metrics_url_.substr(path).c_str());
        if (res && res->status == 200) {
            daemon["state"] = "up";
            samples = parse_prometheus_text(res->body);
        } else {
            daemon["state"] = res ? "metrics endpoint answered " + std::to_string(res->status)
                                  : "unreachable (" + httplib::to_string(res.error()) + ")";
        }
    }
    const auto now = std::chrono::steady_clock::now();
    std::map<std::string, double> counters;  // "port|what" → value, for rates
    std::map<std::string, nlohmann::ordered_json> ports;
    for (const auto& s : samples) {
        const auto port_it = s.labels.find("port");
        if (port_it == s.labels.end()) continue;
        auto& p = ports[port_it->second];
        p["port"] = port_it->second;
        const auto add = [&](const std::string& key) {
            p[key] = p.value(key, 0.0) + s.value;
            counters[port_it->second + "|" + key] += s.value;
        };
        if (s.name == "linecap_port_link_up") p["link_up"] = s.value != 0;
        else if (s.name == "linecap_rx_packets_total") add("received_packets");
        else if (s.name == "linecap_rx_bytes_total") add("received_bytes");
        else if (s.name == "linecap_written_packets_total") add("written_packets");
        else if (s.name == "linecap_filtered_packets_total") add("filtered_packets");
        else if (s.name == "linecap_dropped_packets_total") {
            const auto r = s.labels.find("reason");
            const std::string reason = r == s.labels.end() ? "unknown" : r->second;
            // value() throws on null: the object is made first.
            auto& dropped = p["dropped"];
            if (!dropped.is_object()) dropped = nlohmann::ordered_json::object();
            dropped[reason] = dropped.value(reason, 0.0) + s.value;
            add("dropped_packets");
        }
    }
    {
        std::lock_guard lock(mu_);
        const double dt = std::chrono::duration<double>(now - previous_at_).count();
        if (!previous_.empty() && dt > 0.2) {
            for (auto& [name, p] : ports) {
                for (const char* what : {"received_packets", "received_bytes", "dropped_packets"}) {
                    const auto cur = counters.find(name + "|" + what);
                    const auto prev = previous_.find(name + "|" + what);
                    if (cur != counters.end() && prev != previous_.end() && cur->second >= prev->second)
                        p[std::string(what) + "_per_second"] = (cur->second - prev->second) / dt;
                }
            }
        }
        if (!counters.empty()) {
            previous_ = counters;
            previous_at_ = now;
        }
    }
    nlohmann::ordered_json port_list = nlohmann::ordered_json::array();
    for (auto& [name, p] : ports) port_list.push_back(p);
    daemon["ports"] = port_list;
    for (const auto& s : samples) {
        if (s.name == "linecap_retention_horizon_seconds") daemon["retention_horizon_seconds"] = s.value;
        if (s.name == "linecap_retention_bytes") daemon["retention_bytes"] = s.value;
        if (s.name == "linecap_index_queued_files") daemon["index_queued_files"] = s.value;
        if (s.name == "linecap_scrub_damaged_files") daemon["scrub_damaged_files"] = s.value;
    }
    j["linecapd"] = daemon;

    // The store: its file system as linecapd measures it (the figures retention works
    // with; absent while linecapd is down), its files as this process sees them.
    nlohmann::ordered_json store;
    store["directory"] = config_.output.directory;
    double fs_size = -1, fs_free = -1;
    for (const auto& s : samples) {
        if (s.name == "linecap_output_filesystem_size_bytes") fs_size = s.value;
        if (s.name == "linecap_output_filesystem_free_bytes") fs_free = s.value;
    }
    if (fs_size > 0 && fs_free >= 0) {
        store["filesystem_size_bytes"] = static_cast<uint64_t>(fs_size);
        store["filesystem_free_bytes"] = static_cast<uint64_t>(fs_free);
        store["filesystem_used_percent"] = 100.0 * (fs_size - fs_free) / fs_size;
    }
    auto tmpl = FileTemplate::compile(config_.output.file_template);
    std::unique_ptr<StoreBackend> opened;
    const StoreBackend* listed = store_ ? store_ : (opened = open_store(config_.output.directory)).get();
    auto catalog = tmpl ? listed->list(ListOptions::catalog(tmpl.value())) : Result<StoreInventory>(tmpl.error());
    if (catalog) {
        uint64_t bytes = 0, oldest = UINT64_MAX, newest = 0;
        for (const auto& f : catalog->files) {
            bytes += f.size;
            if (f.parsed && f.parsed->has_time) {
                oldest = std::min(oldest, f.lower_ns);
                newest = std::max(newest, f.lower_ns);
            }
        }
        store["files"] = catalog->files.size();
        store["bytes"] = bytes;
        store["oldest_file_time"] = oldest == UINT64_MAX ? "" : store::format_time(oldest);
        store["newest_file_time"] = newest == 0 ? "" : store::format_time(newest);
    } else {
        store["error"] = catalog.error().message;
    }
    j["store"] = store;
    j["api"] = {{"queries_running", queries_running}, {"max_queries", max_queries},
                {"max_bytes", config_.api.max_bytes}, {"max_duration_seconds", config_.api.max_duration_s}};
    // Labels come from another process: invalid UTF-8 is replaced, not thrown on.
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace linecap::api
