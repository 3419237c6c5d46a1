// libFuzzer harness for the retrieval API's request parsing (src/api/query.hpp): the raw
// query string of a request as a client sends it — %-escapes, '+', '&', '=', repeated and
// unknown names, times, filters (compiled by libpcap), Community IDs, byte counts. Every
// input must give a query or one error line, never a crash, hang or an error line with a
// control character in it (it goes into the audit log and a 400 body).
#include <cstddef>
#include <cstdint>
#include <string>

#include "api/query.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > 4096) return 0;  // api.max_request_bytes bounds real requests far below this
    const std::string text(reinterpret_cast<const char*>(data), size);
    auto params = linecap::api::split_query_string(text);
    if (!params) return 0;
    for (auto kind : {linecap::api::QueryKind::packets, linecap::api::QueryKind::files}) {
        auto q = linecap::api::parse_query(kind, params.value());
        if (q) {
            if (q->from_ns > q->to_ns) __builtin_trap();
        } else {
            for (char c : q.error().message)
                if (c == '\n' || c == '\r') __builtin_trap();
        }
    }
    return 0;
}
