#include "api/status.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "archive/store_inventory.hpp"
#include "store/time_spec.hpp"
#include "util/curl_library.hpp"
#include "util/utc_time.hpp"

namespace linecap::api {

StatusSource::StatusSource(const Config& config, const StoreBackend* store) : config_(config), store_(store) {
    status_url_ = config.api.status_url.empty() ? "http://" + config.metrics.listen + "/status" : config.api.status_url;
}

namespace {

// A member of a document from another process: null when absent; a number as a double,
// 0 when it is not one.
const nlohmann::ordered_json& member(const nlohmann::ordered_json& j, const char* key) {
    static const nlohmann::ordered_json kNull;
    if (!j.is_object()) return kNull;
    const auto it = j.find(key);
    return it == j.end() ? kNull : *it;
}

double number(const nlohmann::ordered_json& j, const char* key) {
    const nlohmann::ordered_json& v = member(j, key);
    return v.is_number() ? v.get<double>() : 0;
}

// linecapd's /status document (metrics/status_document.hpp), or why there is none.
struct DaemonAnswer {
    nlohmann::ordered_json document;  // null when linecapd did not answer with one
    std::string state;        // "up", or what went wrong
};

// No status document is larger; a bigger answer is not the daemon's.
constexpr size_t kMaxStatusBytes = 16u << 20;

size_t collect_status(char* data, size_t size, size_t n, void* body) {
    auto& out = *static_cast<std::string*>(body);
    if (out.size() + size * n > kMaxStatusBytes) return 0;  // ends the transfer (CURLE_WRITE_ERROR)
    out.append(data, size * n);
    return size * n;
}

DaemonAnswer ask_daemon(const std::string& url) {
    const size_t scheme = url.find("://");
    const bool has_path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3) != std::string::npos;
    if (auto library = curl::load(); !library) return {nullptr, "unreachable (" + library.error().message + ")"};
    CurlEasy easy(curl::easy_init());
    if (!easy) return {nullptr, "unreachable (curl_easy_init failed)"};
    CURL* c = easy.get();
    const std::string target = has_path ? url : url + "/status";
    std::string body;
    char errbuf[CURL_ERROR_SIZE] = {};
    curl::easy_setopt(c, CURLOPT_URL, target.c_str());
    curl::easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl::easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl::easy_setopt(c, CURLOPT_TIMEOUT_MS, 4000L);
    curl::easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl::easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_status);
    curl::easy_setopt(c, CURLOPT_WRITEDATA, &body);
    if (const CURLcode rc = curl::easy_perform(c); rc != CURLE_OK)
        return {nullptr, "unreachable (" + std::string(errbuf[0] ? errbuf : curl::easy_strerror(rc)) + ")"};
    long status = 0;
    curl::easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) return {nullptr, "status endpoint answered " + std::to_string(status)};
    nlohmann::ordered_json document = nlohmann::ordered_json::parse(body, nullptr, false);
    if (!member(document, "ports").is_array()) return {nullptr, "status endpoint answered no status document"};
    return {std::move(document), "up"};
}

}  // namespace

std::string StatusSource::json(unsigned queries_running, unsigned max_queries) {
    nlohmann::ordered_json j;
    j["time"] = store::format_time(utc_now_ns());

    nlohmann::ordered_json daemon;
    daemon["status_url"] = status_url_;
    DaemonAnswer answer = ask_daemon(status_url_);
    const nlohmann::ordered_json& d = answer.document;
    daemon["state"] = answer.state;

    // Rates between this answer and the previous one, per port.
    const auto now = std::chrono::steady_clock::now();
    constexpr const char* kRated[] = {"received_packets", "received_bytes", "dropped_packets"};
    std::map<std::string, double> counters;  // "port|what"
    nlohmann::ordered_json ports = nlohmann::ordered_json::array();
    if (!d.is_null()) {
        for (const nlohmann::ordered_json& p : member(d, "ports")) {
            if (!member(p, "port").is_string()) continue;
            const std::string name = p["port"];
            for (const char* what : kRated) counters[name + "|" + what] = number(p, what);
            ports.push_back(p);
        }
    }
    {
        std::lock_guard lock(mu_);
        const double dt = std::chrono::duration<double>(now - previous_at_).count();
        if (!previous_.empty() && dt > 0.2) {
            for (auto& p : ports) {
                const std::string name = p["port"];
                for (const char* what : kRated) {
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
    daemon["ports"] = ports;
    if (const nlohmann::ordered_json& r = member(d, "retention"); r.is_object()) {
        daemon["retention_horizon_seconds"] = number(r, "horizon_seconds");
        daemon["retention_bytes"] = number(r, "bytes");
    }
    for (const char* key : {"index_queued_files", "scrub_damaged_files"})
        if (member(d, key).is_number()) daemon[key] = member(d, key);
    j["linecapd"] = daemon;

    // The store: its file system as linecapd measures it (the figures retention works
    // with; absent while linecapd is down), its files as this process sees them.
    nlohmann::ordered_json store;
    store["directory"] = config_.output.directory;
    const nlohmann::ordered_json& fs = member(d, "filesystem");
    if (const double size = number(fs, "size_bytes"); size > 0) {
        const double free = std::min(number(fs, "free_bytes"), size);
        store["filesystem_size_bytes"] = static_cast<uint64_t>(size);
        store["filesystem_free_bytes"] = static_cast<uint64_t>(free);
        store["filesystem_used_percent"] = 100.0 * (size - free) / size;
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
