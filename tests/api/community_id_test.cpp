// Community ID v1 against the spec's own reference values (corelight/community-id-spec:
// baseline/README.md's tables for seed 0 and seed 1, and baseline/baseline_deflt.json's
// tuples from its pcaps), on frames built here — with and without VLAN tags, IPv4
// options, IPv6 extension headers — and the parser of the "1:…" text.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "../store/store_test_support.hpp"
#include "packet/community_id.hpp"

using namespace linecap;
using store_test::FrameSpec;

namespace {

struct Case {
    uint8_t proto;
    const char* src;
    const char* dst;
    int sport, dport;  // -1: no ports; ICMP: type, code
    const char* seed0;
    const char* seed1;  // nullptr: not in the seed-1 table
};

// baseline/README.md, "Default settings" and "A custom seed=1 value".
const Case kTable[] = {
    {6, "1.2.3.4", "5.6.7.8", 1122, 3344, "1:wCb3OG7yAFWelaUydu0D+125CLM=", "1:HhA1B+6CoLbiKPEs5nhNYN4XWfk="},
    {6, "5.6.7.8", "1.2.3.4", 3344, 1122, "1:wCb3OG7yAFWelaUydu0D+125CLM=", "1:HhA1B+6CoLbiKPEs5nhNYN4XWfk="},
    {17, "1.2.3.4", "5.6.7.8", 1122, 3344, "1:0Mu9InQx6z4ZiCZM/7HXi2WMhOg=", "1:OShq+iKDAMVouh/4bMxB9Sz4amw="},
    {17, "5.6.7.8", "1.2.3.4", 3344, 1122, "1:0Mu9InQx6z4ZiCZM/7HXi2WMhOg=", "1:OShq+iKDAMVouh/4bMxB9Sz4amw="},
    {132, "1.2.3.4", "5.6.7.8", 1122, 3344, "1:EKt4MsxuyaE6mL+hmrEkQ9csDD8=", "1:uitchpn5MMGAQKBJh7bIr/bAr7s="},
    {132, "5.6.7.8", "1.2.3.4", 3344, 1122, "1:EKt4MsxuyaE6mL+hmrEkQ9csDD8=", "1:uitchpn5MMGAQKBJh7bIr/bAr7s="},
    {1, "1.2.3.4", "5.6.7.8", 8, 0, "1:crodRHL2FEsHjbv3UkRrfbs4bZ0=", "1:9pr4ZGTICiuZoIh90RRYE2RyXpU="},
    {1, "5.6.7.8", "1.2.3.4", 0, 0, "1:crodRHL2FEsHjbv3UkRrfbs4bZ0=", "1:9pr4ZGTICiuZoIh90RRYE2RyXpU="},
    {1, "1.2.3.4", "5.6.7.8", 11, 0, "1:f/YiSyWqczrTgfUCZlBUnvHRcPk=", "1:1DD7cWGC/Yg91YGsQeni8du3pIA="},
    {58, "fe80:0001:0203:0405:0607:0809:0A0B:0C0D", "fe80:1011:1213:1415:1617:1819:1A1B:1C1D", 128, 0,
     "1:0bf7hyMJUwt3fMED7z8LIfRpBeo=", "1:IO27GQzPuCtNnwFvjWALMHu5tJE="},
    {58, "fe80:1011:1213:1415:1617:1819:1A1B:1C1D", "fe80:0001:0203:0405:0607:0809:0A0B:0C0D", 129, 0,
     "1:0bf7hyMJUwt3fMED7z8LIfRpBeo=", "1:IO27GQzPuCtNnwFvjWALMHu5tJE="},
    {58, "fe80:0001:0203:0405:0607:0809:0A0B:0C0D", "fe80:1011:1213:1415:1617:1819:1A1B:1C1D", 146, 0,
     "1:fYC8+pz24E+EhANP1EZhpX0Dw10=", "1:Cv4IKJe56BNkF0MBW2YxQ3Nwc3s="},
    {46, "1.2.3.4", "5.6.7.8", -1, -1, "1:ikv3kmf89luf73WPz1jOs49S768=", "1:/buhqeOmaRCopOZFy9HnoJd5XW8="},
    {46, "5.6.7.8", "1.2.3.4", -1, -1, "1:ikv3kmf89luf73WPz1jOs49S768=", "1:/buhqeOmaRCopOZFy9HnoJd5XW8="},
    {46, "fe80:0001:0203:0405:0607:0809:0A0B:0C0D", "fe80:1011:1213:1415:1617:1819:1A1B:1C1D", -1, -1,
     "1:wQ/2mwrnXP4lmJcHdGL5ePjR+e0=", "1:j6EyyfBzL4vWKHFXgUqb5Az3OxM="},
    {46, "fe80:1011:1213:1415:1617:1819:1A1B:1C1D", "fe80:0001:0203:0405:0607:0809:0A0B:0C0D", -1, -1,
     "1:wQ/2mwrnXP4lmJcHdGL5ePjR+e0=", "1:j6EyyfBzL4vWKHFXgUqb5Az3OxM="},
};

// baseline/baseline_deflt.json: tuples from the spec's pcaps. ICMP ports there are the
// mapped pair (type, counterpart) for two-way types and (type, code) for one-way ones.
const Case kBaseline[] = {
    {58, "fe80::200:86ff:fe05:80da", "fe80::260:97ff:fe07:69ea", 135, 0, "1:dGHyGvjMfljg6Bppwm3bg0LO8TY=", nullptr},
    {58, "fe80::260:97ff:fe07:69ea", "fe80::200:86ff:fe05:80da", 136, 0, "1:dGHyGvjMfljg6Bppwm3bg0LO8TY=", nullptr},
    {58, "fe80::260:97ff:fe07:69ea", "fe80::200:86ff:fe05:80da", 135, 0, "1:zavyT/cezQr1fmImYCwYnMXbgck=", nullptr},
    {58, "fe80::200:86ff:fe05:80da", "fe80::260:97ff:fe07:69ea", 136, 0, "1:zavyT/cezQr1fmImYCwYnMXbgck=", nullptr},
    {58, "3ffe:501:1800:2345::2", "3ffe:507:0:1:200:86ff:fe05:80da", 3, 0, "1:2ObVBgIn28oZvibYZhZMBgh7WdQ=", nullptr},
    {58, "3ffe:501:410:0:2c0:dfff:fe47:33e", "3ffe:507:0:1:200:86ff:fe05:80da", 1, 4, "1:hLZd0XGWojozrvxqE0dWB1iM6R0=", nullptr},
    {58, "3ffe:507:0:1:200:86ff:fe05:80da", "3ffe:501:0:1001::2", 128, 0, "1:+TW+HtLHvV1xnGhV1lv7XoJrqQg=", nullptr},
    {58, "3ffe:501:0:1001::2", "3ffe:507:0:1:200:86ff:fe05:80da", 129, 0, "1:+TW+HtLHvV1xnGhV1lv7XoJrqQg=", nullptr},
    {58, "fe80::200:86ff:fe05:80da", "ff02::2", 133, 0, "1:hO+sN4H+MG5MY/8hIrXPqc4ZQz0=", nullptr},
    {58, "fe80::260:97ff:fe07:69ea", "ff02::1", 134, 0, "1:pkvHqCL88/tg1k4cPigmZXUtL00=", nullptr},
    {1, "192.168.0.89", "192.168.0.1", 8, 0, "1:X0snYXpgwiv9TZtqg64sgzUn6Dk=", nullptr},
    {1, "192.168.0.1", "192.168.0.89", 0, 0, "1:X0snYXpgwiv9TZtqg64sgzUn6Dk=", nullptr},
    {1, "10.0.0.1", "10.0.0.2", 11, 0, "1:YHxtAirCG//0OzkcVAukqKQN9xM=", nullptr},
    {6, "2001:470:e5bf:dead:4957:2174:e82c:4887", "2607:f8b0:400c:c03::1a", 63943, 25, "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4=", nullptr},
    {6, "2607:f8b0:400c:c03::1a", "2001:470:e5bf:dead:4957:2174:e82c:4887", 25, 63943, "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4=", nullptr},
    {132, "192.168.170.8", "192.168.170.56", 7, 7, "1:MP2EtRCAUIZvTw6MxJHLV7N7JDs=", nullptr},
    {132, "192.168.170.56", "192.168.170.8", 7, 7, "1:MP2EtRCAUIZvTw6MxJHLV7N7JDs=", nullptr},
    {6, "128.232.110.120", "66.35.250.204", 34855, 80, "1:LQU9qZlK+B5F3KDmev6m5PMibrg=", nullptr},
    {6, "66.35.250.204", "128.232.110.120", 80, 34855, "1:LQU9qZlK+B5F3KDmev6m5PMibrg=", nullptr},
    {17, "192.168.1.52", "8.8.8.8", 54585, 53, "1:d/FP5EW3wiY1vCndhwleRRKHowQ=", nullptr},
    {17, "8.8.8.8", "192.168.1.52", 53, 54585, "1:d/FP5EW3wiY1vCndhwleRRKHowQ=", nullptr},
    {46, "10.1.12.1", "10.1.12.2", -1, -1, "1:KHlLkgoJW7ifUTyTSgyVfkFHzKw=", nullptr},
    {46, "10.1.12.2", "10.1.12.1", -1, -1, "1:KHlLkgoJW7ifUTyTSgyVfkFHzKw=", nullptr},
};

FrameSpec spec_for(const Case& c, std::vector<uint16_t> tags = {}) {
    FrameSpec s;
    s.vlan_tpids = std::move(tags);
    s.proto = c.proto;
    s.v6 = std::string(c.src).find(':') != std::string::npos;
    if (s.v6) {
        EXPECT_EQ(inet_pton(AF_INET6, c.src, s.src6.data()), 1) << c.src;
        EXPECT_EQ(inet_pton(AF_INET6, c.dst, s.dst6.data()), 1) << c.dst;
    } else {
        in_addr a{}, b{};
        EXPECT_EQ(inet_pton(AF_INET, c.src, &a), 1);
        EXPECT_EQ(inet_pton(AF_INET, c.dst, &b), 1);
        s.src4 = ntohl(a.s_addr);
        s.dst4 = ntohl(b.s_addr);
    }
    if (c.proto == 1 || c.proto == 58) {
        s.icmp_type = static_cast<uint8_t>(c.sport);
        s.icmp_code = static_cast<uint8_t>(c.dport);
    } else if (c.sport >= 0) {
        s.sport = static_cast<uint16_t>(c.sport);
        s.dport = static_cast<uint16_t>(c.dport);
    }
    return s;
}

std::string id_of(const FrameSpec& s, uint16_t seed = 0) {
    const auto f = store_test::frame(s);
    const auto d = community_id_digest(f.data(), static_cast<uint32_t>(f.size()), seed);
    return d ? format_community_id(*d) : "(none)";
}

TEST(CommunityId, SpecTablesSeed0AndSeed1) {
    for (const Case& c : kTable) {
        const FrameSpec s = spec_for(c);
        EXPECT_EQ(id_of(s), c.seed0) << unsigned(c.proto) << " " << c.src << " > " << c.dst;
        EXPECT_EQ(id_of(s, 1), c.seed1) << unsigned(c.proto) << " " << c.src << " > " << c.dst << " seed 1";
    }
}

TEST(CommunityId, SpecBaselineFromItsPcaps) {
    for (const Case& c : kBaseline)
        EXPECT_EQ(id_of(spec_for(c)), c.seed0) << unsigned(c.proto) << " " << c.src << " > " << c.dst << " " << c.sport;
}

TEST(CommunityId, VlanTagsIpOptionsAndIpv6ExtensionHeadersDoNotChangeIt) {
    for (const Case& c : kTable) {
        const std::string plain = id_of(spec_for(c));
        EXPECT_EQ(id_of(spec_for(c, {0x8100})), plain);
        EXPECT_EQ(id_of(spec_for(c, {0x88a8, 0x8100})), plain);
        FrameSpec s = spec_for(c);
        if (s.v6) s.v6_hop_by_hop = true;
        else s.ip_options_words = 2;
        EXPECT_EQ(id_of(s), plain) << unsigned(c.proto) << " " << c.src;
    }
}

TEST(CommunityId, NoIdForNonIpTruncatedAndLaterFragments) {
    FrameSpec arp;
    arp.arp = true;
    EXPECT_EQ(id_of(arp), "(none)");
    FrameSpec tcp;
    const auto f = store_test::frame(tcp);
    EXPECT_FALSE(community_id_digest(f.data(), 14 + 20 + 2));  // ports cut off
    EXPECT_TRUE(community_id_digest(f.data(), 14 + 20 + 4));
    FrameSpec later = tcp;
    later.frag_offset = 100;
    EXPECT_EQ(id_of(later), "(none)");
    FrameSpec first = tcp;
    first.more_fragments = true;  // the first fragment carries the ports
    EXPECT_EQ(id_of(first), id_of(tcp));
}

TEST(CommunityId, ParsesOnlyVersionOneBase64Sha1) {
    auto ok = parse_community_id("1:wCb3OG7yAFWelaUydu0D+125CLM=");
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_EQ(format_community_id(ok.value()), "1:wCb3OG7yAFWelaUydu0D+125CLM=");
    for (const char* bad : {"", "1:", "2:wCb3OG7yAFWelaUydu0D+125CLM=", "1:wCb3OG7yAFWelaUydu0D+125CLM",
                            "1:wCb3OG7yAFWelaUydu0D+125CL*=", "1:wCb3OG7yAFWelaUydu0D+125CLM==", "wCb3OG7yAFWelaUydu0D+125CLM="})
        EXPECT_FALSE(parse_community_id(bad)) << bad;
}

}  // namespace
