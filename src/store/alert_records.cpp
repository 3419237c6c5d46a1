#include "store/alert_records.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <cmath>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "packet/community_id.hpp"
#include "store/time_spec.hpp"
#include "util/one_line.hpp"

namespace linecap::store {

namespace {

using json = nlohmann::json;

std::string string_at(const json& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The two hosts of a flow record (KIND: "EVE", "Zeek") written as inet_ntop does, which
// libpcap's scanner is sure to read. Refused when either is no IP address, or when one is
// IPv4 and the other IPv6: "host A and host B" of those matches nothing, and libpcap refuses
// it ("expression rejects all packets"), which would refuse the whole input unnamed.
Result<std::pair<std::string, std::string>> flow_hosts(const json& r, const std::string& kind, const char* a_key,
                                                       const char* b_key) {
    std::string text[2] = {string_at(r, a_key), string_at(r, b_key)};
    int family[2] = {};
    for (int i = 0; i < 2; ++i) {
        unsigned char bytes[16];
        char canonical[INET6_ADDRSTRLEN] = {};
        family[i] = inet_pton(AF_INET, text[i].c_str(), bytes) == 1    ? AF_INET
                    : inet_pton(AF_INET6, text[i].c_str(), bytes) == 1 ? AF_INET6
                                                                       : 0;
        if (!family[i] || !inet_ntop(family[i], bytes, canonical, sizeof canonical))
            return runtime_error(kind + " record without valid " + a_key + "/" + b_key);
        text[i] = canonical;
    }
    if (family[0] != family[1])
        return runtime_error(kind + " record whose " + a_key + " and " + b_key + " are of different IP versions");
    return std::pair(text[0], text[1]);
}

// A port from a JSON number or numeric string; -1 when absent or out of range.
int port_at(const json& j, const char* key) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return -1;
    const auto v = it->get<int64_t>();
    return v >= 0 && v <= 65535 ? int(v) : -1;
}

// "TCP"/"tcp"/6 → the libpcap protocol word, or "" for one without ports.
std::string protocol_word(const json& j) {
    const auto it = j.find("proto");
    if (it == j.end()) return "";
    std::string p;
    if (it->is_string()) p = it->get<std::string>();
    else if (it->is_number_integer()) p = std::to_string(it->get<int>());
    for (char& c : p) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (p == "tcp" || p == "6") return "tcp";
    if (p == "udp" || p == "17") return "udp";
    if (p == "sctp" || p == "132") return "sctp";
    if (p == "icmp" || p == "1" || p == "ipv6-icmp" || p == "icmp6" || p == "58") return "icmp";
    return "";
}

// Both directions of a flow: the two hosts, and with a port protocol the two ports.
std::string five_tuple_filter(const std::string& a, int a_port, const std::string& b, int b_port,
                              const std::string& proto) {
    std::string f = "host " + a + " and host " + b;
    if ((proto == "tcp" || proto == "udp" || proto == "sctp") && a_port >= 0 && b_port >= 0) {
        f += " and " + proto + " port " + std::to_string(a_port) + " and " + proto + " port " + std::to_string(b_port);
    } else if (proto == "icmp") {
        f += " and (icmp or icmp6)";
    } else if (!proto.empty()) {
        f += " and " + proto;
    }
    return f;
}

// Seconds since the epoch with a fraction (Zeek's ts) to ns; nullopt when out of range.
// Rounded to whole microseconds: Zeek writes six decimals, and a double near 1.8e18 ns
// is only good to 256 ns, which would move a span's ends off the packets they name.
std::optional<uint64_t> seconds_to_ns(double s) {
    if (!std::isfinite(s) || s < 0 || s > 1.8e10) return std::nullopt;
    return uint64_t(std::llround(s * 1e6)) * 1000;
}

uint64_t sub_sat(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

// EVE: "2017-04-06T16:49:34.152186+0000". store::parse_time takes ±HHMM offsets.
std::optional<uint64_t> eve_time(const json& j, const char* key) {
    const std::string text = string_at(j, key);
    if (text.empty()) return std::nullopt;
    auto t = parse_time(text);
    if (!t) return std::nullopt;
    return t.value();
}

Result<FlowQuery> from_eve(const json& r, uint64_t margin) {
    const auto hosts = flow_hosts(r, "EVE", "src_ip", "dest_ip");
    if (!hosts) return hosts.error();
    const auto& [src, dst] = hosts.value();
    FlowQuery q;
    q.community_id = string_at(r, "community_id");
    q.filter = five_tuple_filter(src, port_at(r, "src_port"), dst, port_at(r, "dest_port"), protocol_word(r));
    std::optional<uint64_t> from, to;
    if (const auto flow = r.find("flow"); flow != r.end() && flow->is_object()) {
        from = eve_time(*flow, "start");
        to = eve_time(*flow, "end");
    }
    const auto stamp = eve_time(r, "timestamp");
    if (!from) from = stamp;
    if (!to) to = stamp ? stamp : from;
    if (!from || !to) return runtime_error("EVE record without a readable timestamp or flow.start");
    if (*to < *from) std::swap(from, to);
    q.from_ns = sub_sat(*from, margin);
    q.to_ns = add_sat(add_sat(*to, margin), 1);  // the last packet's own time is in the range
    std::string what = string_at(r, "event_type");
    if (const auto alert = r.find("alert"); alert != r.end() && alert->is_object()) {
        if (const auto sid = alert->find("signature_id"); sid != alert->end() && sid->is_number_integer()) {
            what += " " + std::to_string(sid->get<int64_t>());
        }
        const std::string sig = string_at(*alert, "signature");
        if (!sig.empty()) what += " \"" + sig.substr(0, 80) + "\"";
    }
    q.source = "suricata " + one_line(what);  // a line of its own (linecap extract -v)
    return q;
}

Result<FlowQuery> from_zeek(const json& r, uint64_t margin) {
    const auto hosts = flow_hosts(r, "Zeek", "id.orig_h", "id.resp_h");
    if (!hosts) return hosts.error();
    const auto& [src, dst] = hosts.value();
    const auto ts = r.find("ts");
    std::optional<uint64_t> from;
    if (ts != r.end() && ts->is_number()) from = seconds_to_ns(ts->get<double>());
    else if (ts != r.end() && ts->is_string()) {
        if (auto t = parse_time(ts->get<std::string>())) from = t.value();
    }
    if (!from) return runtime_error("Zeek record without a readable ts");
    uint64_t to = *from;
    if (const auto d = r.find("duration"); d != r.end() && d->is_number() && d->get<double>() >= 0) {
        if (const auto span = seconds_to_ns(d->get<double>())) to = add_sat(*from, *span);
    }
    FlowQuery q;
    q.community_id = string_at(r, "community_id");
    q.filter = five_tuple_filter(src, port_at(r, "id.orig_p"), dst, port_at(r, "id.resp_p"), protocol_word(r));
    q.from_ns = sub_sat(*from, margin);
    q.to_ns = add_sat(add_sat(to, margin), 1);
    q.source = "zeek conn " + one_line(string_at(r, "uid"));
    return q;
}

}  // namespace

Result<AlertRecords> read_alert_records(std::istream& in, uint64_t margin_ns, size_t max_records) {
    AlertRecords out;
    std::string line;
    size_t number = 0;
    bool any_json = false;
    while (std::getline(in, line)) {
        ++number;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = "line " + std::to_string(number);
        json record = json::parse(line, nullptr, false);
        if (record.is_discarded() || !record.is_object()) {
            if (!any_json) {
                return config_error(where + ": not a JSON object: alert input is one JSON record per line "
                                            "(Suricata EVE, Zeek conn.log with LogAscii::use_json)");
            }
            out.malformed.push_back(out.skipped.size());
            out.skipped.push_back(where + ": not a JSON object");
            continue;
        }
        any_json = true;
        const bool zeek = record.contains("id.orig_h");
        const bool eve = record.contains("src_ip");
        if (!zeek && !eve) {
            out.skipped.push_back(where + ": no flow in it (neither src_ip nor id.orig_h)");
            continue;
        }
        auto q = zeek ? from_zeek(record, margin_ns) : from_eve(record, margin_ns);
        if (!q) {
            out.malformed.push_back(out.skipped.size());
            out.skipped.push_back(where + ": " + q.error().message);
            continue;
        }
        if (out.queries.size() >= max_records) {
            return config_error("more than " + std::to_string(max_records) + " flow records: narrow the input");
        }
        q->source = where + ": " + q->source;
        out.queries.push_back(std::move(q.value()));
    }
    return out;
}

Result<std::vector<Selection>> flow_selections(const AlertRecords& records) {
    std::vector<Selection> out;
    std::vector<std::string> broken;
    for (const size_t i : records.malformed) broken.push_back(records.skipped[i]);
    for (const FlowQuery& q : records.queries) {
        if (q.community_id.empty()) {
            out.push_back({.from_ns = q.from_ns, .to_ns = q.to_ns, .filter = q.filter, .community_id = "",
                           .index_hint = ""});
        } else if (auto id = parse_community_id(q.community_id); !id) {
            // One line, whatever the record's text (a JSON string may hold any character).
            broken.push_back(one_line(q.source.substr(0, q.source.find(':')) + ": community_id " + q.community_id +
                                      ": " + id.error().message));
        } else {
            out.push_back({.from_ns = q.from_ns, .to_ns = q.to_ns, .filter = "", .community_id = q.community_id,
                           .index_hint = q.filter});
        }
    }
    if (!broken.empty()) {
        std::string lines;
        for (const std::string& b : broken) lines += (lines.empty() ? "" : "; ") + b;
        return config_error(std::to_string(broken.size()) + " malformed records, nothing done: " + lines);
    }
    if (out.empty()) return config_error("no flow record in it");
    return out;
}

}  // namespace linecap::store
