// BpfFilter (libpcap expression → classic BPF → eBPF → JIT) against libpcap itself.
//
// For every expression and every packet of the input files, the value BpfFilter returns
// must equal what pcap_offline_filter returns for the same classic program (0 = reject,
// else the snap length). The packets are real mbufs from a mempool: single segment, and
// chained over 2–3 segments cut at every offset the headers use, so that BPF_ABS/BPF_IND
// loads straddling a segment boundary are proven too. Both the JIT (what the workers run)
// and the interpreter (the fallback) are checked.
//
// Usage: bpf_filter_test [gtest flags] FILE.pcap...   (meson passes the generated mix and
// tests/filter/craft_pcap.py's edge cases). EAL runs --no-huge --no-shconf: no hugepages, no files.
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <rte_eal.h>
#include <unistd.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "filter/bpf_filter.hpp"

namespace linecap {
namespace {

struct Packet {
    pcap_pkthdr hdr{};
    std::vector<uint8_t> data;
    bool from_big_file = false;  // from an input of more than 1000 packets
};

std::vector<std::string> g_files;
std::vector<Packet> g_packets;
rte_mempool* g_pool = nullptr;

constexpr uint32_t kBurst = 64;
constexpr uint16_t kDataRoom = 10240;  // a 9018-byte frame fits one segment

// The expressions under test. `trivial` marks the few whose answer may be the same for
// every packet of the inputs (the test then does not demand both outcomes).
struct Expr {
    const char* text;
    bool trivial = false;
};

const Expr kExpressions[] = {
    // hosts and nets
    {"host 198.18.7.7"},
    {"src host 198.18.7.7 and dst port 53"},
    {"dst host 198.19.8.8 and tcp"},
    {"net 198.18.0.0/16"},
    {"dst net 198.19.0.0/16 and not src net 198.18.7.0/24"},
    {"ip6 host 2001:db8::7"},
    {"ip6 net 2001:db8::/48"},
    {"ether src 02:00:00:00:00:01 and ether dst 02:00:00:00:00:02"},
    {"ether broadcast"},
    {"ether multicast"},
    // ports
    {"port 53"},
    {"udp port 53"},
    {"tcp port 443 or udp port 53"},
    {"portrange 1000-2000"},
    {"tcp dst portrange 1000-2000"},
    {"udp src portrange 1000-2000"},
    {"not port 80 and not arp"},
    {"src host 198.18.7.7 and dst port 443"},
    // protocols
    {"tcp"},
    {"udp"},
    {"icmp"},
    {"icmp[icmptype] = icmp-echoreply"},
    {"arp"},
    {"ip"},
    {"ip6"},
    {"icmp6"},
    {"ip6 and tcp port 443"},
    {"ip6 and ip6[6] = 0"},
    {"ether proto 0x88cc"},
    {"llc"},
    // VLAN (the keyword shifts every later offset by 4)
    {"vlan"},
    {"vlan and tcp"},
    {"vlan 100 and ip"},
    {"vlan 100"},
    {"vlan and vlan 100 and udp"},
    {"vlan and ip6 and udp port 53"},
    {"vlan 200 and arp"},
    // TCP flags and byte offsets
    {"tcp[tcpflags] & (tcp-syn|tcp-fin) != 0"},
    {"tcp[tcpflags] & tcp-rst != 0"},
    {"tcp[13] = 18"},
    {"tcp[tcpflags] = tcp-syn"},
    {"tcp[12] & 0xf0 = 0x50 and tcp[tcpflags] & tcp-ack != 0"},
    {"ip[8] < 64"},
    {"ip[0] & 0xf > 5"},
    {"ip[6:2] & 0x1fff != 0"},
    {"ip[2:2] > 1000"},
    {"ether[12:2] = 0x86dd"},
    {"udp[8:4] < 1000"},
    {"ether[len - 4:4] != 0"},
    {"ether[1000] = 0"},
    // lengths
    {"greater 1000"},
    {"less 100"},
    {"len > 1500 and len <= 9000"},
    // long ones
    {"(tcp port 80 or tcp port 443 or tcp port 8080 or udp port 53 or udp port 5060) and "
     "(net 198.18.0.0/15 or ip6 net 2001:db8::/32) and not ip[6:2] & 0x1fff != 0 and greater 64"},
    {"host 198.18.7.7 or host 198.19.8.8 or host 198.18.200.1 or host 198.19.0.1 or host 198.18.1.1 or "
     "host 198.18.1.2 or host 198.18.1.3 or host 198.18.1.4 or ip6 host 2001:db8::7 or ip6 host 2001:db8::8"},
    {"(vlan and (tcp[tcpflags] & tcp-syn != 0 or udp port 53)) or (ip6 and (tcp port 443 or icmp6)) or "
     "(ip and ip[8] != 64)"},
    // edge cases of the program itself
    {"", true},  // pcap_compile accepts the empty expression: accept everything
};

std::string pcap_compile_error(const std::string& expression) {
    pcap_t* dead = pcap_open_dead(DLT_EN10MB, 262144);
    bpf_program prog{};
    std::string error;
    if (pcap_compile(dead, &prog, expression.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
        error = pcap_geterr(dead);
    } else {
        pcap_freecode(&prog);
    }
    pcap_close(dead);
    return error;
}

// The reference: libpcap's own interpreter on the classic program.
class ClassicFilter {
public:
    ClassicFilter(const std::string& expression, uint32_t snaplen) {
        dead_ = pcap_open_dead(DLT_EN10MB, static_cast<int>(snaplen));
        ok_ = pcap_compile(dead_, &prog_, expression.c_str(), 1, PCAP_NETMASK_UNKNOWN) == 0;
    }
    ~ClassicFilter() {
        if (ok_) pcap_freecode(&prog_);
        pcap_close(dead_);
    }
    bool ok() const { return ok_; }
    uint64_t run(const Packet& p) const { return pcap_offline_filter(&prog_, &p.hdr, p.data.data()); }

private:
    pcap_t* dead_ = nullptr;
    bpf_program prog_{};
    bool ok_ = false;
};

// An mbuf chain holding `p`, cut at `cuts` (ascending offsets inside the packet; none:
// one segment).
rte_mbuf* make_mbuf(const Packet& p, const std::vector<uint32_t>& cuts) {
    rte_mbuf* head = nullptr;
    uint32_t from = 0;
    for (size_t s = 0; s <= cuts.size(); ++s) {
        const uint32_t to = s < cuts.size() ? cuts[s] : uint32_t(p.data.size());
        rte_mbuf* m = rte_pktmbuf_alloc(g_pool);
        if (m == nullptr) {
            ADD_FAILURE() << "mempool empty";
            if (head) rte_pktmbuf_free(head);
            return nullptr;
        }
        char* dst = rte_pktmbuf_append(m, uint16_t(to - from));
        if (dst == nullptr && to > from) {
            ADD_FAILURE() << "segment of " << (to - from) << " bytes does not fit";
            rte_pktmbuf_free(m);
            if (head) rte_pktmbuf_free(head);
            return nullptr;
        }
        if (to > from) std::memcpy(dst, p.data.data() + from, to - from);
        if (head == nullptr) {
            head = m;
        } else if (rte_pktmbuf_chain(head, m) != 0) {
            ADD_FAILURE() << "rte_pktmbuf_chain failed";
            rte_pktmbuf_free(m);
            rte_pktmbuf_free(head);
            return nullptr;
        }
        from = to;
    }
    return head;
}

// Cut points for packet i: segmentations that put boundaries inside and between the
// headers filters read (Ethernet type 12–13, VLAN tag 14–17, IPv4 fields 14–34, ports
// 34–38 / 54–58, TCP flags 47, IPv6 addresses 22–54) and, for big frames, far in.
std::vector<uint32_t> cuts_for(size_t i, uint32_t len) {
    static const uint32_t kFirst[] = {1, 12, 13, 14, 15, 16, 17, 18, 20, 22, 23, 24, 26, 27, 30, 31, 34, 35,
                                      36, 37, 38, 40, 42, 46, 47, 48, 50, 54, 55, 56, 57, 58, 62};
    const uint32_t first = kFirst[i % (sizeof kFirst / sizeof kFirst[0])];
    std::vector<uint32_t> cuts;
    if (first >= len) return {len / 2};
    cuts.push_back(first);
    // Every other packet gets a third segment somewhere after the first cut.
    if (i % 2 == 1 && len - first > 2) {
        const uint32_t second = first + 1 + uint32_t((i * 7919) % (len - first - 1));
        if (second < len) cuts.push_back(second);
    }
    return cuts;
}

enum class Engine { jit, interpreter };

// Runs `filter` over all packets in bursts, segmenting with `segment(i)`; returns keep[].
template <typename Segmenter>
std::vector<uint64_t> run_all(const BpfFilter& filter, Engine engine, Segmenter segment) {
    std::vector<uint64_t> result(g_packets.size(), ~0ull);
    rte_mbuf* burst[kBurst];
    uint64_t keep[kBurst];
    for (size_t base = 0; base < g_packets.size(); base += kBurst) {
        const uint32_t n = uint32_t(std::min<size_t>(kBurst, g_packets.size() - base));
        for (uint32_t k = 0; k < n; ++k) {
            burst[k] = make_mbuf(g_packets[base + k], segment(base + k));
            if (burst[k] == nullptr) {
                rte_pktmbuf_free_bulk(burst, k);
                return {};
            }
            if (!segment(base + k).empty()) {
                EXPECT_GT(burst[k]->nb_segs, 1);
            }
        }
        std::fill(keep, keep + n, ~0ull);
        if (engine == Engine::jit) {
            filter.run(burst, n, keep);
        } else {
            filter.run_interpreted(burst, n, keep);
        }
        std::copy(keep, keep + n, result.begin() + base);
        rte_pktmbuf_free_bulk(burst, n);
    }
    return result;
}

std::string describe(size_t i) {
    const Packet& p = g_packets[i];
    char buf[64];
    std::snprintf(buf, sizeof buf, "packet %zu (%u bytes, ethertype %02x%02x)", i, p.hdr.len,
                  p.data.size() > 13 ? p.data[12] : 0, p.data.size() > 13 ? p.data[13] : 0);
    return buf;
}

class FilterVsLibpcap : public ::testing::TestWithParam<Expr> {
protected:
    void check(Engine engine, bool segmented) {
        const Expr& e = GetParam();
        ClassicFilter classic(e.text, 262144);
        ASSERT_TRUE(classic.ok()) << e.text;
        auto filter = BpfFilter::compile(e.text, 262144);
        ASSERT_TRUE(filter.ok()) << filter.error().message;
#if defined(RTE_ARCH_X86_64)
        if (engine == Engine::jit) {
            ASSERT_TRUE(filter.value()->jitted()) << "no JIT for '" << e.text << "'";
        }
#endif
        std::vector<uint64_t> got = segmented
            ? run_all(*filter.value(), engine, [](size_t i) { return cuts_for(i, g_packets[i].hdr.len); })
            : run_all(*filter.value(), engine, [](size_t) { return std::vector<uint32_t>{}; });
        ASSERT_EQ(got.size(), g_packets.size());
        size_t kept = 0, mismatches = 0;
        for (size_t i = 0; i < g_packets.size(); ++i) {
            const uint64_t want = classic.run(g_packets[i]);
            kept += want != 0;
            if (got[i] != want && ++mismatches <= 10) {
                ADD_FAILURE() << "'" << e.text << "': " << describe(i) << ": libpcap " << want << ", BpfFilter "
                              << got[i];
            }
        }
        EXPECT_EQ(mismatches, 0u) << "'" << e.text << "'";
        if (!e.trivial) {
            EXPECT_GT(kept, 0u) << "'" << e.text << "' matches nothing in the inputs: the test proves little";
            EXPECT_LT(kept, g_packets.size()) << "'" << e.text << "' matches everything in the inputs";
        }
    }
};

TEST_P(FilterVsLibpcap, JitSingleSegment) { check(Engine::jit, false); }
TEST_P(FilterVsLibpcap, JitMultiSegment) { check(Engine::jit, true); }
TEST_P(FilterVsLibpcap, InterpreterSingleSegment) { check(Engine::interpreter, false); }
TEST_P(FilterVsLibpcap, InterpreterMultiSegment) { check(Engine::interpreter, true); }

// Every two-segment split of every short frame (≤ 160 bytes): a load of 1, 2 or 4 bytes
// at any offset, wholly in segment one, straddling the cut or wholly in segment two.
TEST_P(FilterVsLibpcap, EverySplitPointOfShortFrames) {
    const Expr& e = GetParam();
    ClassicFilter classic(e.text, 262144);
    ASSERT_TRUE(classic.ok());
    auto filter = BpfFilter::compile(e.text, 262144);
    ASSERT_TRUE(filter.ok()) << filter.error().message;
    size_t checked = 0, mismatches = 0;
    rte_mbuf* burst[kBurst];
    uint64_t keep_jit[kBurst], keep_interp[kBurst];
    for (size_t i = 0; i < g_packets.size(); ++i) {
        const Packet& p = g_packets[i];
        if (p.hdr.len > 160) continue;
        // Frames of a big generated mix look alike: every 16th of those, every crafted one.
        if (p.from_big_file && i % 16 != 0) continue;
        const uint64_t want = classic.run(p);
        for (uint32_t cut = 1; cut < p.hdr.len; cut += kBurst) {
            const uint32_t n = std::min<uint32_t>(kBurst, p.hdr.len - cut);
            for (uint32_t k = 0; k < n; ++k) {
                burst[k] = make_mbuf(p, {cut + k});
                ASSERT_NE(burst[k], nullptr);
            }
            filter.value()->run(burst, n, keep_jit);
            filter.value()->run_interpreted(burst, n, keep_interp);
            for (uint32_t k = 0; k < n; ++k) {
                ++checked;
                if ((keep_jit[k] != want || keep_interp[k] != want) && ++mismatches <= 10) {
                    ADD_FAILURE() << "'" << e.text << "': " << describe(i) << " cut at " << cut + k << ": libpcap "
                                  << want << ", JIT " << keep_jit[k] << ", interpreter " << keep_interp[k];
                }
            }
            rte_pktmbuf_free_bulk(burst, n);
        }
    }
    EXPECT_GT(checked, 0u);
    EXPECT_EQ(mismatches, 0u);
}

INSTANTIATE_TEST_SUITE_P(Expressions, FilterVsLibpcap, ::testing::ValuesIn(kExpressions),
                         [](const ::testing::TestParamInfo<Expr>& info) {
                             return "e" + std::to_string(info.index);
                         });

// a 3,000-term filter ran libpcap's optimiser for minutes in --check and in the
// daemon's reload; both go through BpfFilter (validate, compile) and are refused at once.
TEST(BpfFilter, ComplexityIsBoundedBeforeLibpcapRuns) {
    std::string many;
    for (int i = 0; i < 3000; ++i) many += (i ? " or host 10.0." : "host 10.0.") + std::to_string(i / 256) + "." + std::to_string(i % 256);
    const auto started = std::chrono::steady_clock::now();
    const Status s = BpfFilter::validate(many, 262144);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(s.error().config);  // exit 78 from --check
    EXPECT_NE(s.error().message.find("3000 terms joined by and/or; at most 64"), std::string::npos) << s.error().message;
}

// Found by fuzz_filter: an expression with a line break (YAML allows one in a quoted
// value; extract takes any argument) made a two-line error. Its control characters are
// escaped, whether the bound or libpcap refuses it.
TEST(BpfFilter, ErrorsStayOneLineWhateverTheExpressionHolds) {
    for (const std::string& expr : {std::string("tcp port\n80 and"), std::string("host\t999.1.1.1\x01"), std::string(70, '\n') + "port 1 or"}) {
        const Status s = BpfFilter::validate(expr, 262144);
        ASSERT_FALSE(s.ok()) << expr;
        EXPECT_EQ(s.error().message.find_first_of("\n\t\x01"), std::string::npos) << s.error().message;
    }
    std::string many = "port 1";
    for (int i = 0; i < 64; ++i) many += "\nor port 1";
    const Status s = BpfFilter::validate(many, 262144);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("filter 'port 1\\nor port 1"), std::string::npos) << s.error().message;
}

TEST(BpfFilter, UsesTheJitOnX86_64) {
#if defined(RTE_ARCH_X86_64)
    auto filter = BpfFilter::compile("tcp port 443 or udp port 53", 262144);
    ASSERT_TRUE(filter.ok()) << filter.error().message;
    EXPECT_TRUE(filter.value()->jitted());
    EXPECT_EQ(filter.value()->expression(), "tcp port 443 or udp port 53");
#else
    GTEST_SKIP() << "DPDK has an eBPF JIT for x86-64 and arm64 only";
#endif
}

TEST(BpfFilter, AcceptReturnsTheSnapLength) {
    // pcap_compile is told the port's snap length: accepting programs return it.
    auto filter = BpfFilter::compile("udp port 53", 96);
    ASSERT_TRUE(filter.ok()) << filter.error().message;
    ClassicFilter classic("udp port 53", 96);
    size_t accepted = 0;
    std::vector<uint64_t> got = run_all(*filter.value(), Engine::jit, [](size_t) { return std::vector<uint32_t>{}; });
    ASSERT_EQ(got.size(), g_packets.size());
    for (size_t i = 0; i < g_packets.size(); ++i) {
        EXPECT_EQ(got[i], classic.run(g_packets[i]));
        if (got[i] != 0) {
            EXPECT_EQ(got[i], 96u);
            ++accepted;
        }
    }
    EXPECT_GT(accepted, 0u);
}

TEST(BpfFilter, EmptyBurstIsANoOp) {
    auto filter = BpfFilter::compile("tcp", 262144);
    ASSERT_TRUE(filter.ok());
    uint64_t keep[1] = {12345};
    filter.value()->run(nullptr, 0, keep);
    filter.value()->run_interpreted(nullptr, 0, keep);
    EXPECT_EQ(keep[0], 12345u);
}

TEST(BpfFilter, LongExpressionsLoadQuickly) {
    // rte_bpf_load validates every path of the program; long filters must still load in
    // well under a second (a SIGHUP builds them on the control thread).
    std::string hosts;
    for (int i = 1; i <= 24; ++i) {
        hosts += (hosts.empty() ? "" : " or ") + std::string("host 198.18.1.") + std::to_string(i);
    }
    std::string v6hosts;
    for (int i = 1; i <= 8; ++i) {
        v6hosts += (v6hosts.empty() ? "" : " or ") + std::string("ip6 host 2001:db8::") + std::to_string(i);
    }
    const std::string mixed = "(" + hosts + ") and (tcp[tcpflags] & (tcp-syn|tcp-fin) != 0 or udp port 53) or (" +
                              v6hosts + ") and (ip6[6] = 6 or vlan 100)";
    for (const std::string& expr : {hosts, v6hosts, mixed}) {
        const auto start = std::chrono::steady_clock::now();
        auto filter = BpfFilter::compile(expr, 262144);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        ASSERT_TRUE(filter.ok()) << filter.error().message;
        EXPECT_LT(s, 1.0) << "'" << expr << "' took " << s << " s to compile and load";
    }
}

// ---- invalid expressions ------------------------------------------------------------------

const char* const kInvalid[] = {
    "tcp port",                     // syntax error
    "host 999.1.1.1",               // bad address
    "port 70000",                   // out of range
    "tcp port nosuchservice",       // unknown port name (/etc/services, no network lookup)
    "vlan and (tcp",                // unbalanced
    "ether[1:3] = 0",               // data size must be 1, 2 or 4
    "ip6 net 2001:db8::/200",       // mask length
    "ip broadcast",                 // needs a netmask (not known for a capture port)
    "tcp[tcpflags] & tcp-bogus != 0",
    "tcp and udp",                  // libpcap: expression rejects all packets
};

class InvalidExpression : public ::testing::TestWithParam<const char*> {};

TEST_P(InvalidExpression, IsAConfigErrorQuotingTheExpressionAndLibpcap) {
    const std::string expr = GetParam();
    const std::string why = pcap_compile_error(expr);
    ASSERT_FALSE(why.empty()) << "libpcap accepts '" << expr << "': pick another invalid expression";

    auto compiled = BpfFilter::compile(expr, 262144);
    ASSERT_FALSE(compiled.ok());
    EXPECT_TRUE(compiled.error().config);
    EXPECT_NE(compiled.error().message.find("'" + expr + "'"), std::string::npos) << compiled.error().message;
    EXPECT_NE(compiled.error().message.find(why), std::string::npos)
        << compiled.error().message << " (libpcap: " << why << ")";

    Status validated = BpfFilter::validate(expr, 262144);
    ASSERT_FALSE(validated.ok());
    EXPECT_TRUE(validated.error().config);
    EXPECT_EQ(validated.error().message, compiled.error().message);
}

INSTANTIATE_TEST_SUITE_P(Expressions, InvalidExpression, ::testing::ValuesIn(kInvalid));

// libpcap compiles these, but into programs DPDK's BPF cannot run (backward jumps:
// protochain walks the extension-header chain in a loop). Both the configuration check
// and compile() reject them with the same message, before anything is started.
TEST(BpfFilter, ProtochainIsRejectedAsUnsupported) {
    for (const std::string expr : {"ip6 protochain 6", "ip protochain 17", "tcp port 80 or ip6 protochain 6"}) {
        ASSERT_TRUE(pcap_compile_error(expr).empty()) << expr;
        Status validated = BpfFilter::validate(expr, 262144);
        ASSERT_FALSE(validated.ok()) << expr;
        EXPECT_TRUE(validated.error().config);
        EXPECT_NE(validated.error().message.find("'" + expr + "'"), std::string::npos) << validated.error().message;
        EXPECT_NE(validated.error().message.find("jumps backwards"), std::string::npos) << validated.error().message;
        auto compiled = BpfFilter::compile(expr, 262144);
        ASSERT_FALSE(compiled.ok()) << expr;
        EXPECT_TRUE(compiled.error().config);
        EXPECT_EQ(compiled.error().message, validated.error().message);
    }
}

TEST(BpfFilter, ValidateAcceptsWhatCompileAccepts) {
    for (const Expr& e : kExpressions) {
        Status s = BpfFilter::validate(e.text, 262144);
        EXPECT_TRUE(s.ok()) << e.text << ": " << (s.ok() ? "" : s.error().message);
    }
}

// ---- setup --------------------------------------------------------------------------------

bool load_pcap(const std::string& path) {
    char err[PCAP_ERRBUF_SIZE];
    pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
    if (p == nullptr) {
        std::fprintf(stderr, "cannot read %s: %s\n", path.c_str(), err);
        return false;
    }
    if (pcap_datalink(p) != DLT_EN10MB) {
        std::fprintf(stderr, "%s: not Ethernet\n", path.c_str());
        pcap_close(p);
        return false;
    }
    pcap_pkthdr* hdr;
    const u_char* data;
    const size_t first = g_packets.size();
    while (pcap_next_ex(p, &hdr, &data) == 1) {
        if (hdr->caplen != hdr->len) continue;  // whole packets only: the daemon filters whole packets
        Packet pkt;
        pkt.hdr = *hdr;
        pkt.data.assign(data, data + hdr->caplen);
        g_packets.push_back(std::move(pkt));
    }
    pcap_close(p);
    for (size_t i = first; i < g_packets.size(); ++i) g_packets[i].from_big_file = g_packets.size() - first > 1000;
    return true;
}

}  // namespace
}  // namespace linecap

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    using namespace linecap;
    for (int i = 1; i < argc; ++i) g_files.push_back(argv[i]);
    if (g_files.empty()) {
        std::fprintf(stderr, "usage: %s [gtest flags] FILE.pcap...\n", argv[0]);
        return 2;
    }
    for (const auto& f : g_files) {
        if (!load_pcap(f)) return 1;
    }
    if (g_packets.empty()) {
        std::fprintf(stderr, "no packets in the input files\n");
        return 1;
    }

    // --no-huge implies --legacy-mem, which EAL refuses together with --in-memory;
    // --no-shconf gives the same "no files anywhere" property.
    // EAL makes its runtime directory all the same: a prefix of ours, no telemetry socket
    // in it, removed at the end.
    const char* eal_args[] = {"bpf_filter_test", "--no-huge", "--no-shconf", "-m", "256", "--no-pci",
                              "-l", "0", "--file-prefix", "lc-bpf-filter-test", "--no-telemetry",
                              "--log-level", "lib.*:error", "--log-level", "lib.bpf:info"};
    const int eal_argc = int(sizeof eal_args / sizeof eal_args[0]);
    if (rte_eal_init(eal_argc, const_cast<char**>(eal_args)) < 0) {
        std::printf("SKIP: rte_eal_init failed: %s\n", rte_strerror(rte_errno));
        return 77;
    }
    g_pool = rte_pktmbuf_pool_create("filter_test", 2047, 0, 0, RTE_PKTMBUF_HEADROOM + kDataRoom, SOCKET_ID_ANY);
    if (g_pool == nullptr) {
        std::fprintf(stderr, "rte_pktmbuf_pool_create: %s\n", rte_strerror(rte_errno));
        rte_eal_cleanup();
        return 1;
    }
    std::printf("%zu packets from %zu file(s)\n", g_packets.size(), g_files.size());
    const int rc = RUN_ALL_TESTS();
    rte_mempool_free(g_pool);
    const std::string runtime_dir = rte_eal_get_runtime_dir();
    rte_eal_cleanup();
    ::rmdir(runtime_dir.c_str());
    return rc;
}
