#include "api/query.hpp"

#include <algorithm>
#include <array>

#include "format/pcap_format.hpp"
#include "packet/community_id.hpp"
#include "store/filter_plan.hpp"
#include "store/time_spec.hpp"

namespace linecap::api {
namespace {

constexpr std::array<const char*, 6> kPacketParams = {"from", "to", "filter", "community_id", "max_bytes", "format"};
constexpr std::array<const char*, 2> kFileParams = {"from", "to"};

// Shown in error lines: bounded, printable.
std::string shown(const std::string& value) {
    std::string out;
    for (char c : value.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
    if (value.size() > 80) out += "...";
    return out;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

Result<std::string> percent_decode(std::string_view text, bool plus_is_space) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '+' && plus_is_space) {
            out += ' ';
        } else if (c == '%') {
            const int hi = i + 1 < text.size() ? hex_value(text[i + 1]) : -1;
            const int lo = i + 2 < text.size() ? hex_value(text[i + 2]) : -1;
            if (hi < 0 || lo < 0) return runtime_error("bad %-escape at offset " + std::to_string(i));
            out += static_cast<char>(hi << 4 | lo);
            i += 2;
        } else {
            out += c;
        }
    }
    return out;
}

Result<Params> split_query_string(const std::string& query) {
    Params params;
    size_t start = 0;
    while (start <= query.size()) {
        size_t end = query.find('&', start);
        if (end == std::string::npos) end = query.size();
        const std::string part = query.substr(start, end - start);
        if (!part.empty()) {
            const size_t eq = part.find('=');
            auto name = percent_decode(part.substr(0, eq), true);
            if (!name) return name.error().context("query");
            auto value = percent_decode(eq == std::string::npos ? "" : part.substr(eq + 1), true);
            if (!value) return value.error().context("query");
            params.emplace_back(std::move(name.value()), std::move(value.value()));
        }
        start = end + 1;
    }
    return params;
}

namespace {

Result<PacketQuery> parse_query_checked(QueryKind kind, const Params& params) {
    PacketQuery q;
    const auto& known = kind == QueryKind::packets ? std::vector<const char*>(kPacketParams.begin(), kPacketParams.end())
                                                   : std::vector<const char*>(kFileParams.begin(), kFileParams.end());
    std::vector<std::string> seen;
    for (const auto& param : params) {
        // Named references, not a structured binding: clang 14 (the fuzz build) cannot
        // capture those in the lambda below.
        const std::string& name = param.first;
        const std::string& value = param.second;
        if (std::none_of(known.begin(), known.end(), [&](const char* k) { return name == k; })) {
            std::string list;
            for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
            return runtime_error("unknown parameter '" + shown(name) + "' (known: " + list + ")");
        }
        if (std::find(seen.begin(), seen.end(), name) != seen.end())
            return runtime_error("parameter '" + name + "' given twice");
        seen.push_back(name);
        if (name == "from" || name == "to") {
            auto t = store::parse_time(value);
            if (!t) return runtime_error(name + ": " + t.error().message);
            (name == "from" ? q.from_ns : q.to_ns) = t.value();
        } else if (name == "filter") {
            q.filter = value;
        } else if (name == "community_id") {
            if (!value.empty()) {
                auto id = parse_community_id(value);
                if (!id) return id.error();
            }
            q.community_id = value;
        } else if (name == "max_bytes") {
            uint64_t v = 0;
            const bool digits = !value.empty() && value.size() <= 19 &&
                                std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
            if (digits) v = std::stoull(value);
            if (!digits || v < sizeof(pcap::FileHeader))
                return runtime_error("max_bytes: expected a byte count of at least 24 (the pcap file header), got '" +
                                     shown(value) + "'");
            q.max_bytes = v;
        } else if (name == "format") {
            if (value == "pcap") q.format = FileKind::pcap;
            else if (value == "pcapng") q.format = FileKind::pcapng;
            else return runtime_error("format: expected pcap or pcapng, got '" + shown(value) + "'");
        }
    }
    if (q.from_ns > q.to_ns) return runtime_error("from is after to");
    if (!q.filter.empty()) {
        auto f = store::CompiledFilter::compile(q.filter);
        if (!f) return f.error();
    }
    return q;
}

}  // namespace

Result<PacketQuery> parse_query(QueryKind kind, const Params& params) {
    auto q = parse_query_checked(kind, params);
    if (q) return q;
    // The line goes into a 400 body and the audit log: no control characters from the
    // request (a filter's own text is quoted in libpcap's message).
    std::string m = q.error().message;
    for (char& c : m)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    return runtime_error(m);
}

}  // namespace linecap::api
