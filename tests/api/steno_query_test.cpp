// Stenographer's query language compiled to a libpcap filter and a time range: every form
// its README documents, its left-to-right precedence, and what is refused. Each filter is
// also compiled by libpcap, so a translation libpcap would refuse fails here.
#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <initializer_list>
#include <vector>

#include "api/steno_query.hpp"
#include "store/time_spec.hpp"

namespace linecap::api {
namespace {

constexpr uint64_t kNow = 1700000000ull * 1000000000ull;

StenoQuery compiled(const std::string& q) {
    auto r = compile_steno_query(q, kNow);
    EXPECT_TRUE(r) << q << ": " << (r ? "" : r.error().message);
    if (!r) return {};
    pcap_t* p = pcap_open_dead(DLT_EN10MB, 65535);
    bpf_program prog{};
    EXPECT_EQ(pcap_compile(p, &prog, r->filter.c_str(), 1, PCAP_NETMASK_UNKNOWN), 0)
        << r->filter << ": " << pcap_geterr(p);
    pcap_freecode(&prog);
    pcap_close(p);
    return r.value();
}

std::string refused(const std::string& q) {
    auto r = compile_steno_query(q, kNow);
    EXPECT_FALSE(r) << q << " was accepted: " << (r ? r->filter : "");
    return r ? "" : r.error().message;
}

TEST(StenoQuery, EveryPrimitiveOfTheReadme) {
    EXPECT_EQ(compiled("host 8.8.8.8").filter, "host 8.8.8.8");
    EXPECT_EQ(compiled("host 2001:db8::1").filter, "host 2001:db8::1");
    EXPECT_EQ(compiled("net 1.0.0.0/8").filter, "net 1.0.0.0/8");
    EXPECT_EQ(compiled("net 1.0.0.0 mask 255.255.255.0").filter, "net 1.0.0.0 mask 255.255.255.0");
    EXPECT_EQ(compiled("net 2001:db8::/32").filter, "net 2001:db8::/32");
    EXPECT_EQ(compiled("port 80").filter, "(tcp port 80 or udp port 80)");
    EXPECT_EQ(compiled("ip proto 6").filter, "(ip proto 6 or ip6 proto 6)");
    EXPECT_EQ(compiled("icmp").filter, "(ip proto 1)");
    EXPECT_EQ(compiled("tcp").filter, "(ip proto 6 or ip6 proto 6)");
    EXPECT_EQ(compiled("udp").filter, "(ip proto 17 or ip6 proto 17)");
    const StenoQuery every = compiled("host 8.8.8.8");
    EXPECT_EQ(every.from_ns, 0u);
    EXPECT_EQ(every.to_ns, UINT64_MAX);
}

TEST(StenoQuery, AndOrHaveEqualPrecedenceLeftToRight) {
    // (udp and port 514) or (tcp and port 8080): as written.
    EXPECT_EQ(compiled("(udp and port 514) or (tcp and port 8080)").filter,
              "(((ip proto 17 or ip6 proto 17) and (tcp port 514 or udp port 514)) or "
              "((ip proto 6 or ip6 proto 6) and (tcp port 8080 or udp port 8080)))");
    // a or b and c is (a or b) and c — unlike BPF, where "and" binds tighter.
    EXPECT_EQ(compiled("host 1.1.1.1 or host 2.2.2.2 and port 53").filter,
              "(host 1.1.1.1 or host 2.2.2.2) and (tcp port 53 or udp port 53)");
    EXPECT_EQ(compiled("host 1.1.1.1 && port 1 || port 2").filter,
              "((host 1.1.1.1 and (tcp port 1 or udp port 1)) or (tcp port 2 or udp port 2))");
}

TEST(StenoQuery, TimesNarrowTheWholeQueryExactly) {
    const StenoQuery q = compiled("host 1.2.3.4 and after 2012-11-03T11:05:00Z and before 2012-11-03T12:00:00-07:00");
    EXPECT_EQ(q.filter, "host 1.2.3.4");
    EXPECT_EQ(q.from_ns, store::parse_time("2012-11-03T11:05:00Z").value());
    EXPECT_EQ(q.to_ns, store::parse_time("2012-11-03T19:00:00Z").value());
    const StenoQuery ago = compiled("after 3h ago and before 45m ago and port 443");
    EXPECT_EQ(ago.from_ns, kNow - 3 * 3600 * 1000000000ull);
    EXPECT_EQ(ago.to_ns, kNow - 45 * 60 * 1000000000ull);
    EXPECT_EQ(ago.filter, "(tcp port 443 or udp port 443)");
    EXPECT_EQ(compiled("after 1h30m ago").from_ns, kNow - 5400 * 1000000000ull);
    const StenoQuery only_time = compiled("after 2012-11-03T11:05:00Z");
    EXPECT_EQ(only_time.filter, "");
    // Two bounds on one side: the narrower holds.
    EXPECT_EQ(compiled("after 2h ago and after 1h ago").from_ns, kNow - 3600 * 1000000000ull);
    // Times inside parentheses of the "and" chain still narrow the whole query.
    EXPECT_EQ(compiled("(host 1.2.3.4 and after 1h ago) and port 1").from_ns, kNow - 3600 * 1000000000ull);
}

// Bounds that leave no time match nothing; a span past 64 bits of ns reaches back to 1970.
TEST(StenoQuery, EmptyAndHugeSpans) {
    const StenoQuery empty = compiled("after 1h ago and before 2h ago");
    EXPECT_EQ(empty.from_ns, kNow - 3600 * 1000000000ull);
    EXPECT_EQ(empty.to_ns, empty.from_ns);
    EXPECT_EQ(compiled("after 99999999h ago").from_ns, 0u);
    EXPECT_EQ(compiled("after 5000000h5000000h ago").from_ns, 0u);
}

// libpcap refuses a network with bits set past its prefix or mask; Stenographer clears them.
// Addresses are written as inet_ntop does, whatever inet_pton took.
TEST(StenoQuery, NetworksKeepTheirNetworkBitsOnly) {
    EXPECT_EQ(compiled("net 10.1.2.3/8").filter, "net 10.0.0.0/8");
    EXPECT_EQ(compiled("net 10.1.2.3/12").filter, "net 10.0.0.0/12");
    EXPECT_EQ(compiled("net 10.31.2.3/12").filter, "net 10.16.0.0/12");
    EXPECT_EQ(compiled("net 10.1.2.3 mask 255.0.255.0").filter, "net 10.0.2.0 mask 255.0.255.0");
    EXPECT_EQ(compiled("net 2001:db8:1::1/32").filter, "net 2001:db8::/32");
    EXPECT_EQ(compiled("net 1.2.3.4/0").filter, "net 0.0.0.0/0");
    EXPECT_EQ(compiled("net 1.2.3.4/32").filter, "net 1.2.3.4/32");
    EXPECT_EQ(compiled("host 0:0:0:0:0:ffff:1.2.3.4").filter, "host ::ffff:1.2.3.4");
    EXPECT_EQ(compiled("host 2001:0DB8:0::01").filter, "host 2001:db8::1");
}

// A UDP packet 10.1.2.3:5353 -> 10.4.5.6:53 behind `tags` 802.1Q tags (VLAN 7, then 8).
std::vector<uint8_t> udp_frame(int tags, uint8_t last_octet = 3) {
    std::vector<uint8_t> f;
    const auto add = [&f](std::initializer_list<uint8_t> bytes) {
        for (const uint8_t b : bytes) f.push_back(b);
    };
    for (int i = 0; i < 12; ++i) f.push_back(0x02);  // locally administered MACs
    for (int t = 0; t < tags; ++t) add({0x81, 0x00, 0x00, static_cast<uint8_t>(7 + t)});
    add({0x08, 0x00});
    add({0x45, 0, 0, 29, 0, 0, 0, 0, 64, 17, 0, 0, 10, 1, 2, last_octet, 10, 4, 5, 6});
    add({0x14, 0xe9, 0x00, 0x35, 0x00, 0x09, 0x00, 0x00, 0x00});
    return f;
}

bool matches(const std::string& filter, const std::vector<uint8_t>& frame) {
    pcap_t* p = pcap_open_dead(DLT_EN10MB, 65535);
    bpf_program prog{};
    EXPECT_EQ(pcap_compile(p, &prog, filter.c_str(), 1, PCAP_NETMASK_UNKNOWN), 0) << filter << ": " << pcap_geterr(p);
    pcap_pkthdr h{};
    h.caplen = h.len = static_cast<bpf_u_int32>(frame.size());
    const bool match = pcap_offline_filter(&prog, &h, frame.data()) != 0;
    pcap_freecode(&prog);
    pcap_close(p);
    return match;
}

// As Stenographer, a query matches a packet's headers behind its VLAN tags; libpcap's
// expression alone sees only untagged frames.
TEST(StenoQuery, FiltersApplyThroughVlanTags) {
    const std::string filter = compiled("host 10.1.2.3 and port 53").filter;
    EXPECT_FALSE(matches(filter, udp_frame(1))) << "the plain expression already matched a tagged frame";
    const std::string through = through_vlan_tags(filter);
    for (int tags = 0; tags <= 2; ++tags) {
        EXPECT_TRUE(matches(through, udp_frame(tags))) << tags << " tags";
        EXPECT_FALSE(matches(through, udp_frame(tags, 9))) << tags << " tags, another host";
    }
    EXPECT_EQ(through_vlan_tags(""), "");
}

// vlan N: the packet's outer or inner tag is N; it combines with the other terms, which
// still read through the tags.
TEST(StenoQuery, VlanIsTheOuterOrInnerTag) {
    const std::string outer = through_vlan_tags(compiled("vlan 7 and host 10.4.5.6").filter);
    const std::string inner = through_vlan_tags(compiled("vlan 8 and port 53").filter);
    EXPECT_FALSE(matches(outer, udp_frame(0)));
    EXPECT_TRUE(matches(outer, udp_frame(1)));
    EXPECT_TRUE(matches(outer, udp_frame(2)));
    EXPECT_FALSE(matches(inner, udp_frame(1)));  // its only tag is 7
    EXPECT_TRUE(matches(inner, udp_frame(2)));
    EXPECT_FALSE(matches(through_vlan_tags(compiled("vlan 9").filter), udp_frame(2)));
    compiled("mpls 17 or mpls 1048575");
}

TEST(StenoQuery, WhatStenographerDoesNotSayIsRefused) {
    EXPECT_NE(refused("not host 1.2.3.4").find("'not' is not a word of Stenographer's query language"),
              std::string::npos);
    EXPECT_NE(refused("host example.com").find("is not an IP address"), std::string::npos);
    EXPECT_NE(refused("port 70000").find("invalid port"), std::string::npos);
    EXPECT_NE(refused("ip proto 256").find("invalid protocol"), std::string::npos);
    EXPECT_NE(refused("ip 6").find("'ip' must be followed by 'proto'"), std::string::npos);
    EXPECT_NE(refused("net 10.0.0.0").find("needs '/BITS' or 'mask MASK'"), std::string::npos);
    EXPECT_NE(refused("net 10.0.0.0/33").find("invalid prefix length"), std::string::npos);
    EXPECT_NE(refused("host 1.2.3.4 or after 1h ago").find("may only narrow the whole query"), std::string::npos);
    EXPECT_NE(refused("(host 1.2.3.4").find("missing ')'"), std::string::npos);
    EXPECT_NE(refused("host 1.2.3.4 and").find("the query ends where a term is expected"), std::string::npos);
    EXPECT_NE(refused("host 1.2.3.4 port 80").find("unexpected 'port'"), std::string::npos);
    EXPECT_NE(refused("after yesterday").find("at character 7"), std::string::npos);
    EXPECT_NE(refused("after 2d ago").find("units are s, m and h"), std::string::npos);
    EXPECT_NE(refused("vlan 4096").find("invalid VLAN id"), std::string::npos);
    EXPECT_NE(refused("mpls 1048576").find("invalid MPLS label"), std::string::npos);
    // Every refusal is one line that says where.
    EXPECT_NE(refused("host 1.2.3.4 or after 1h ago").find("not one side of an 'or' at character 17"),
              std::string::npos);
    EXPECT_NE(refused("after 1\x01h ago").find("'1\\x01h': units are s, m and h"), std::string::npos);
    EXPECT_EQ(refused("port \x7f").find_first_of("\x7f\n"), std::string::npos);
    refused("");
    refused(std::string(70000, ' ') + "tcp");
    refused(std::string(100, '(') + "tcp" + std::string(100, ')'));
    // Deeply nested but within the bound: fine.
    EXPECT_EQ(compiled(std::string(10, '(') + "tcp" + std::string(10, ')')).filter, "(ip proto 6 or ip6 proto 6)");
}

}  // namespace
}  // namespace linecap::api
