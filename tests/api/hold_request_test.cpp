// POST /api/v1/holds bodies: what is taken, and every way a body is refused with one line
// naming the problem (a typo must not make a wider hold).
#include <gtest/gtest.h>

#include "api/hold_request.hpp"
#include "store/time_spec.hpp"

namespace linecap::api {
namespace {

constexpr uint64_t kNow = 1796004600000000000ull;  // 2026-11-30T02:10:00Z

Result<store::HoldRequest> parse(const std::string& body) {
    store::HoldRequest r;
    if (auto s = parse_hold_request(body, kNow, r); !s) return s.error();
    return r;
}

std::string refusal(const std::string& body) {
    auto r = parse(body);
    EXPECT_FALSE(r) << body;
    return r ? "" : r.error().message;
}

TEST(HoldRequest, RangeFilterCommunityIdAndExpiry) {
    auto r = parse(R"({"reason": "case 4711", "from": "2026-11-30T02:00:00Z", "to": "2026-11-30T02:05:00Z",
                       "filter": "host 10.0.0.5", "community_id": "1:LQU9qZlK+B5F3KDmev6m5PMibrg=", "expires": "2d"})");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->reason, "case 4711");
    EXPECT_EQ(r->query.from_ns, store::parse_time("2026-11-30T02:00:00Z").value());
    EXPECT_EQ(r->query.to_ns, store::parse_time("2026-11-30T02:05:00Z").value());
    EXPECT_EQ(r->query.filter, "host 10.0.0.5");
    EXPECT_EQ(r->query.community_id, "1:LQU9qZlK+B5F3KDmev6m5PMibrg=");
    EXPECT_EQ(r->expires_ns, kNow + 2 * 86400 * 1000000000ull);
    EXPECT_TRUE(r->query.any_of.empty());
}

TEST(HoldRequest, AlertRecordsBecomeSelections) {
    auto r = parse(R"({"reason": "alert", "margin": 0, "alert": "{\"ts\": 1796004600.5, \"uid\": \"C1\", \"id.orig_h\": \"10.0.0.5\", \"id.orig_p\": 1234, \"id.resp_h\": \"10.0.0.1\", \"id.resp_p\": 80, \"proto\": \"tcp\", \"duration\": 1.0}\n"})");
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->query.any_of.size(), 1u);
    EXPECT_EQ(r->query.any_of[0].filter, "host 10.0.0.5 and host 10.0.0.1 and tcp port 1234 and tcp port 80");
    EXPECT_EQ(r->query.any_of[0].from_ns, 1796004600500000000ull);
    EXPECT_EQ(r->query.any_of[0].to_ns, 1796004601500000001ull);
}

TEST(HoldRequest, RefusedWithTheReason) {
    EXPECT_EQ(refusal(R"({"reason": "x", "from": )"), "the body is not a JSON object");
    EXPECT_EQ(refusal(R"([1, 2])"), "the body is not a JSON object");
    EXPECT_EQ(refusal(R"({"reason": "x", "form": "2026-11-30T02:00:00Z"})"), "unknown key 'form'");
    EXPECT_EQ(refusal(R"({"filter": "tcp"})"), "reason: required (a hold says why it was made)");
    EXPECT_EQ(refusal(R"({"reason": 7})"), "reason: expected a string");
    EXPECT_NE(refusal(R"({"reason": "x", "from": "yesterday"})").find("from: "), std::string::npos);
    EXPECT_EQ(refusal(R"({"reason": "x", "from": "2026-11-30T03:00:00Z", "to": "2026-11-30T02:00:00Z"})"),
              "from is after to");
    EXPECT_NE(refusal(R"({"reason": "x", "filter": "host"})").find("filter 'host'"), std::string::npos);
    EXPECT_NE(refusal(R"({"reason": "x", "community_id": "1:abc"})").find("community id '1:abc'"), std::string::npos);
    EXPECT_NE(refusal(R"({"reason": "x", "filter": "tcp", "expires": "soon"})").find("expires: "), std::string::npos);
    EXPECT_NE(refusal(R"({"reason": "x", "filter": "tcp", "expires": "9999999d"})").find("too far in the future"),
              std::string::npos);
    EXPECT_EQ(refusal(R"({"reason": "x", "filter": "tcp", "margin": 5})"), "margin goes with alert");
    EXPECT_EQ(refusal(R"({"reason": "x", "alert": "{}", "filter": "tcp"})"), "filter does not go with alert");
    EXPECT_NE(refusal(R"({"reason": "x", "alert": "{\"src_ip\": \"10.0.0.300\", \"dest_ip\": \"10.0.0.1\"}\n"})")
                  .find("alert: 1 malformed records, nothing done: line 1: EVE record without valid src_ip/dest_ip"),
              std::string::npos);
    EXPECT_EQ(refusal(R"({"reason": "x", "alert": "{\"event_type\": \"stats\"}\n"})"), "alert: no flow record in it");
}

}  // namespace
}  // namespace linecap::api
