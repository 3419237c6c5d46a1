#include "api/hold_request.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/query.hpp"
#include "store/alert_records.hpp"
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
    // The query itself is checked as /api/v1/packets checks its parameters, with the same
    // messages.
    Params params;
    for (const char* key : {"from", "to", "filter", "community_id"}) {
        auto value = text(key);
        if (!value) return value.error();
        if (!value->empty()) params.emplace_back(key, std::move(*value));
    }
    auto parsed = parse_query(QueryKind::packets, params);
    if (!parsed) return config_error(parsed.error().message);
    q.from_ns = parsed->from_ns;
    q.to_ns = parsed->to_ns;
    q.filter = parsed->filter;
    q.community_id = parsed->community_id;
    request.origin = "POST /api/v1/holds";
    return {};
}

}  // namespace linecap::api
