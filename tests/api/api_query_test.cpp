// The API's query parameters: every accepted form, and one clear line for each refusal.
#include <gtest/gtest.h>

#include "api/query.hpp"

using namespace linecap::api;
using linecap::Result;

namespace {

Result<PacketQuery> parse(const std::string& qs, QueryKind kind = QueryKind::packets) {
    auto p = split_query_string(qs);
    if (!p) return p.error();
    return parse_query(kind, p.value());
}

std::string error_of(const std::string& qs, QueryKind kind = QueryKind::packets) {
    auto q = parse(qs, kind);
    return q ? "(accepted)" : q.error().message;
}

TEST(ApiQuery, AcceptsTheCliTimeFormsFiltersAndCommunityIds) {
    auto q = parse("from=2026-11-30T02:10:00Z&to=1796004660.5&filter=host+10.0.0.1+and+tcp%20port%2080"
                   "&community_id=1%3AwCb3OG7yAFWelaUydu0D%2B125CLM%3D&max_bytes=1000000&format=pcap");
    ASSERT_TRUE(q) << q.error().message;
    EXPECT_EQ(q->from_ns, 1796004600000000000ull);
    EXPECT_EQ(q->to_ns, 1796004660500000000ull);
    EXPECT_EQ(q->filter, "host 10.0.0.1 and tcp port 80");
    EXPECT_EQ(q->community_id, "1:wCb3OG7yAFWelaUydu0D+125CLM=");
    EXPECT_EQ(q->max_bytes, 1000000u);
    auto empty = parse("");
    ASSERT_TRUE(empty);
    EXPECT_EQ(empty->from_ns, 0u);
    EXPECT_EQ(empty->to_ns, UINT64_MAX);
    EXPECT_TRUE(parse("from=5&to=5"));  // half-open and empty: fine
    EXPECT_EQ(parse("")->format, linecap::FileKind::pcap);
    EXPECT_EQ(parse("format=pcapng")->format, linecap::FileKind::pcapng);
}

TEST(ApiQuery, RefusesWithOneLineNamingTheProblem) {
    EXPECT_NE(error_of("from=2026-11-30T02:10:00").find("from:"), std::string::npos);  // no zone
    EXPECT_NE(error_of("to=soon").find("to:"), std::string::npos);
    EXPECT_EQ(error_of("from=20&to=10"), "from is after to");
    EXPECT_NE(error_of("filter=tcp+port+eighty").find("filter 'tcp port eighty'"), std::string::npos);
    EXPECT_NE(error_of("limit=1").find("unknown parameter 'limit'"), std::string::npos);
    EXPECT_NE(error_of("filter=tcp&filter=udp").find("given twice"), std::string::npos);
    EXPECT_NE(error_of("max_bytes=23").find("at least 24"), std::string::npos);
    EXPECT_NE(error_of("max_bytes=-1").find("max_bytes"), std::string::npos);
    EXPECT_NE(error_of("max_bytes=99999999999999999999").find("max_bytes"), std::string::npos);
    EXPECT_NE(error_of("format=pcapng-ish").find("format"), std::string::npos);
    EXPECT_NE(error_of("community_id=2:abc").find("community id"), std::string::npos);
    EXPECT_NE(error_of("filter=%zz").find("%-escape"), std::string::npos);
    EXPECT_NE(error_of("filter=%4").find("%-escape"), std::string::npos);
    EXPECT_NE(error_of("filter=tcp", QueryKind::files).find("unknown parameter 'filter'"), std::string::npos);
    // Control bytes in a name are not echoed raw.
    EXPECT_EQ(error_of("a%0Ab=1").find('\n'), std::string::npos);
}

}  // namespace
