// Filter analysis: the keys derived from compiled filter programs, and soundness — for
// every packet a filter accepts, some alternative of its plan is contained in the
// packet's index keys (so pruning never drops a matching packet).
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>

#include "store/filter_plan.hpp"
#include "packet/packet_keys.hpp"
#include "store_test_support.hpp"

using namespace linecap;
using namespace linecap::store;
using namespace store_test;

namespace {

std::string plan_of(const std::string& expr) {
    auto f = CompiledFilter::compile(expr);
    EXPECT_TRUE(f.ok()) << expr;
    return f.ok() ? f->plan().describe() : "";
}

std::vector<IndexKey> keys_of(const Bytes& f) {
    PacketKeys k;
    extract_keys(f.data(), uint32_t(f.size()), k);
    std::vector<IndexKey> out;
    for (unsigned i = 0; i < k.n_protos; ++i) out.push_back({IndexKey::Kind::proto, k.protos[i], {}});
    for (unsigned i = 0; i < k.n_ports; ++i) out.push_back({IndexKey::Kind::port, k.ports[i], {}});
    for (unsigned i = 0; i < k.n_addr4; ++i) out.push_back({IndexKey::Kind::addr4, k.addr4[i], {}});
    for (unsigned i = 0; i < k.n_addr6; ++i) out.push_back({IndexKey::Kind::addr6, 0, k.addr6[i]});
    return out;
}

bool has(const std::vector<IndexKey>& keys, const IndexKey& k) {
    for (const auto& x : keys)
        if (x == k) return true;
    return false;
}

}  // namespace

TEST(FilterPlan, SimplePrimitives) {
    EXPECT_EQ(plan_of(""), "no index pruning: no filter");
    EXPECT_EQ(plan_of("host 198.18.1.2"), "a block may match only if it contains (host 198.18.1.2)");
    EXPECT_EQ(plan_of("tcp port 80"), "a block may match only if it contains (proto 6 and port 80)");
    EXPECT_EQ(plan_of("udp"), "a block may match only if it contains (proto 17)");
    EXPECT_EQ(plan_of("ip6 host 2001:db8::1"),
              "a block may match only if it contains (host6 20010db8000000000000000000000001)");
    EXPECT_EQ(plan_of("vlan and host 1.2.3.4"), "a block may match only if it contains (host 1.2.3.4)");
    EXPECT_EQ(plan_of("host 1.2.3.4 and host 5.6.7.8 and tcp port 22"),
              "a block may match only if it contains (proto 6 and port 22 and host 1.2.3.4 and host 5.6.7.8)");
    EXPECT_EQ(plan_of("port 53 or port 5353"),
              "a block may match only if it contains (proto 6 and port 53) or (proto 6 and port 5353) or "
              "(proto 17 and port 53) or (proto 17 and port 5353) or (proto 132 and port 53) or "
              "(proto 132 and port 5353)");
}

TEST(FilterPlan, NothingToPruneWhenAPathNeedsNoKey) {
    for (const char* f : {"not host 1.2.3.4", "len > 100", "ether host 02:00:00:00:00:01", "arp", "icmp or arp",
                          "tcp or not ip", "ip[8] = 64"}) {
        auto c = CompiledFilter::compile(f);
        ASSERT_TRUE(c.ok()) << f;
        EXPECT_FALSE(c->plan().prunable) << f << ": " << c->plan().describe();
    }
}

TEST(FilterPlan, RangesPruneByProtocolOnly) {
    EXPECT_EQ(plan_of("portrange 1-1000"),
              "a block may match only if it contains (proto 6) or (proto 17) or (proto 132)");
}

TEST(FilterPlan, CompileErrorsNameTheFilter) {
    auto c = CompiledFilter::compile("host or");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.error().message.rfind("filter 'host or': ", 0), 0u) << c.error().message;
}

// Property test: random frames (tags, v4/v6, fragments, options, extension headers,
// ARP, short captures) × many filters.
// `host a or host b or …` with 3,000 terms ran libpcap's optimiser for minutes
// in `linecap extract` (and in the daemon's --check and reload: the same bound, from
// filter/pcap_program.hpp, is tested there through BpfFilter::validate).
TEST(FilterPlan, ComplexityIsBoundedAndRefusedAtOnce) {
    std::string many;
    for (int i = 0; i < 3000; ++i) many += (i ? " or host 10.0." : "host 10.0.") + std::to_string(i / 256) + "." + std::to_string(i % 256);
    const auto started = std::chrono::steady_clock::now();
    const auto f = CompiledFilter::compile(many);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
    ASSERT_FALSE(f.ok());
    const std::string& m = f.error().message;
    EXPECT_EQ(m.rfind("filter 'host 10.0.0.0 or host 10.0.0.1 or host 10.0.0.2 ...': 3000 terms", 0), 0u) << m;
    EXPECT_NE(m.find("at most 64"), std::string::npos) << m;
    EXPECT_LT(m.size(), 400u);
    std::string arithmetic = "len = 1";
    for (int i = 0; i < 5000; ++i) arithmetic += "+1";
    EXPECT_NE(CompiledFilter::compile(arithmetic).error().message.find("10007 bytes; at most 8192"), std::string::npos);
    // At the bound: accepted. `or.example` is a name, not an operator.
    std::string at_bound;
    for (int i = 0; i < 64; ++i) at_bound += (i ? " || port " : "port ") + std::to_string(1000 + i);
    EXPECT_TRUE(CompiledFilter::compile(at_bound).ok());
    EXPECT_EQ(linecap::filter_complexity_problem("host or.example and net 10.0.0.0/8"), "");
}

TEST(FilterPlan, PruningIsSoundForEveryAcceptedPacket) {
    std::mt19937 rng(12345);
    const uint32_t hosts4[] = {ip4(198, 18, 0, 1), ip4(198, 19, 0, 1), ip4(10, 0, 0, 1), ip4(1, 2, 3, 4)};
    const uint16_t ports[] = {80, 443, 53, 22, 40000, 5555};
    std::vector<Bytes> frames;
    for (int i = 0; i < 4000; ++i) {
        FrameSpec s;
        const int tags = int(rng() % 5) == 0 ? int(rng() % 3) + 1 : 0;
        const uint16_t tpids[] = {0x8100, 0x88a8, 0x9100};
        for (int t = 0; t < tags; ++t) s.vlan_tpids.push_back(tpids[rng() % 3]);
        s.v6 = rng() % 3 == 0;
        s.arp = !s.v6 && rng() % 15 == 0;
        const uint8_t protos[] = {6, 17, 1, 132};
        s.proto = protos[rng() % 4];
        s.src4 = hosts4[rng() % 4];
        s.dst4 = hosts4[rng() % 4];
        s.src6[15] = uint8_t(rng() % 3);
        s.dst6[15] = uint8_t(rng() % 3);
        s.sport = ports[rng() % 6];
        s.dport = ports[rng() % 6];
        s.ip_options_words = rng() % 6 == 0 ? rng() % 4 : 0;
        if (rng() % 6 == 0) {
            s.more_fragments = true;
            s.frag_offset = rng() % 2 ? 0 : uint16_t(rng() % 400);
            s.v6_fragment_header = s.v6;
        }
        s.v6_hop_by_hop = s.v6 && rng() % 5 == 0;
        s.payload = 4 + rng() % 60;
        s.tag = uint32_t(i);
        Bytes f = frame(s);
        if (rng() % 8 == 0) f.resize(14 + rng() % (f.size() - 14));  // a short capture
        frames.push_back(std::move(f));
    }
    const char* filters[] = {
        "host 198.18.0.1", "host 1.2.3.4 and host 10.0.0.1", "src host 198.19.0.1 and dst port 80",
        "tcp port 80", "udp port 53", "port 443", "port 22 or port 5555", "tcp", "udp or icmp", "sctp",
        "ip proto 17", "ip6 proto 17", "ip6 and tcp port 443", "ip6 host 2001:db8::1", "ip6 src host 2001:db8::2",
        "host 2001:db8::1 and port 53", "vlan and host 198.18.0.1", "vlan and tcp port 80",
        "vlan and vlan and udp", "vlan 100 and port 53", "vlan and vlan and vlan and host 1.2.3.4",
        "(host 198.18.0.1 or host 1.2.3.4) and (port 80 or port 443)", "host 198.18.0.1 and not port 22",
        "icmp6", "ip and udp[0:2] = 53", "ip[9] = 6 and tcp[2:2] = 80", "tcp[13] & 8 != 0 and host 10.0.0.1",
        "ip6[6] = 17", "arp host 198.18.0.1", "dst port 40000 and src port 443", "ip6 or arp", "greater 70 and tcp",
        "ip and not udp", "net 198.18.0.0/16", "tcp dst port 80 or udp src port 53", "ip6 protochain 6",
        "ip[6:2] & 0x1fff = 0 and udp", "host 198.18.0.1 or host 2001:db8::2",
    };
    for (const char* expr : filters) {
        auto f = CompiledFilter::compile(expr);
        ASSERT_TRUE(f.ok()) << expr;
        const FilterPlan& plan = f->plan();
        for (const Bytes& fr : frames) {
            linecap::format::Record r;
            r.ts_ns = 1;
            r.caplen = r.len = uint32_t(fr.size());
            r.data = fr.data();
            if (!f->matches(r)) continue;
            if (!plan.prunable) continue;
            const auto keys = keys_of(fr);
            bool covered = false;
            for (const auto& alt : plan.alternatives) {
                bool all = true;
                for (const auto& k : alt) all = all && has(keys, k);
                covered = covered || all;
            }
            ASSERT_TRUE(covered) << "filter '" << expr << "' accepts a packet the plan would prune: "
                                 << plan.describe();
        }
    }
}
