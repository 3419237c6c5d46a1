// The query parameters of the retrieval API, checked before anything is streamed: a bad
// request gets 400 and one line saying what is wrong, never a half answer.
//
//   /api/v1/packets  from, to (ISO 8601 or Unix seconds, half-open [from, to)), filter
//                    (libpcap), community_id ("1:…"), max_bytes, format (pcap, pcapng)
//   /api/v1/size     the same: the size of that answer, without the packets
//   /api/v1/files    from, to
// Unknown or repeated parameters are refused (a typo must not silently widen a query).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/capture_reader.hpp"
#include "util/result.hpp"

namespace linecap::api {

using Params = std::vector<std::pair<std::string, std::string>>;

struct PacketQuery {
    uint64_t from_ns = 0;
    uint64_t to_ns = UINT64_MAX;
    std::string filter;
    std::string community_id;
    uint64_t max_bytes = 0;   // asked for; 0 = the server's limit
    ::linecap::FileKind format = ::linecap::FileKind::pcap;
};

enum class QueryKind { packets, files };

// Parses and checks a query's parameters (values already URL-decoded). Errors are one
// line naming the parameter. The filter is compiled here (libpcap's message on error).
Result<PacketQuery> parse_query(QueryKind kind, const Params& params);

// Decodes %XX escapes (and '+' as a space in a query); errors on a bad escape.
Result<std::string> percent_decode(std::string_view text, bool plus_is_space);

// Splits a raw query string ("a=1&b=x%20y") into decoded pairs; errors on bad escapes.
Result<Params> split_query_string(const std::string& query);

}  // namespace linecap::api
