#include "api/hold_request.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "packet/community_id.hpp"
#include "store/alert_records.hpp"
#include "store/filter_plan.hpp"
#include "store/time_spec.hpp"

namespace linecap::api {

namespace {
constexpr uint64_t kDefaultMarginS = 60;
constexpr const char* kKeys[] = {"reason", "from", "to", "filter", "community_id", "alert", "margin", "expires"};
}  // namespace

Status parse_hold_request(const std::string& body, uint64_t now_ns, store::HoldRequest& request) {
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return config_error("the body is not a JSON object");
    for (const auto& [key, value] : j.items())
        if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys))
            return config_error("unknown key '" + key.substr(0, 64) + "'");
    auto text = [&](const char* key) -> Result<std::string> {
        const auto it = j.find(key);
        if (it == j.end()) return std::string();
        if (!it->is_string()) return config_error(std::string(key) + ": expected a string");
        return it->get<std::string>();
    };
    auto time_at = [&](const char* key, uint64_t& out) -> Status {
        auto t = text(key);
        if (!t) return t.error();
        if (t->empty()) return {};
        auto parsed = store::parse_time(*t);
        if (!parsed) return config_error(std::string(key) + ": " + parsed.error().message);
        out = parsed.value();
        return {};
    };
    auto reason = text("reason");
    if (!reason) return reason.error();
    if (reason->empty()) return config_error("reason: required (a hold says why it was made)");
    request.reason = *reason;
    if (auto e = text("expires"); !e) {
        return e.error();
    } else if (!e->empty()) {
        auto t = store::parse_expiry(*e, now_ns);
        if (!t) return config_error("expires: " + t.error().message);
        request.expires_ns = t.value();
    }
    store::ExtractOptions& q = request.query;
    auto alert = text("alert");
    if (!alert) return alert.error();
    if (!alert->empty()) {
        for (const char* single : {"from", "to", "filter", "community_id"})
            if (j.contains(single)) return config_error(std::string(single) + " does not go with alert");
        uint64_t margin_s = kDefaultMarginS;
        if (const auto m = j.find("margin"); m != j.end()) {
            if (!m->is_number_unsigned() || m->get<uint64_t>() > 86400)
                return config_error("margin: expected whole seconds 0..86400");
            margin_s = m->get<uint64_t>();
        }
        std::istringstream lines(*alert);
        auto records = store::read_alert_records(lines, margin_s * 1000000000ull);
        if (!records) return config_error("alert: " + records.error().message);
        auto selections = store::flow_selections(records.value());
        if (!selections) return config_error("alert: " + selections.error().message);
        q.any_of = std::move(selections.value());
        request.origin = "alert records (" + std::to_string(q.any_of.size()) + " flows) posted to /api/v1/holds";
        return {};
    }
    if (j.contains("margin")) return config_error("margin goes with alert");
    if (auto s = time_at("from", q.from_ns); !s) return s;
    if (auto s = time_at("to", q.to_ns); !s) return s;
    if (q.from_ns > q.to_ns) return config_error("from is after to");
    auto filter = text("filter");
    if (!filter) return filter.error();
    if (auto compiled = store::CompiledFilter::compile(*filter); !compiled)
        return config_error("filter: " + compiled.error().message);
    q.filter = *filter;
    auto community_id = text("community_id");
    if (!community_id) return community_id.error();
    if (!community_id->empty())
        if (auto id = parse_community_id(*community_id); !id) return config_error("community_id: " + id.error().message);
    q.community_id = *community_id;
    request.origin = "POST /api/v1/holds";
    return {};
}

}  // namespace linecap::api
