// Capture file reading, packet keys, the index format (round trip, corruption), times
// and file names.
#include <gtest/gtest.h>

#include <set>

#include "archive/crc32c.hpp"
#include "archive/index_format.hpp"
#include "archive/layout.hpp"
#include "archive/store_inventory.hpp"
#include "packet/packet_keys.hpp"
#include "store/filter_plan.hpp"
#include "store/time_spec.hpp"
#include "store_test_support.hpp"

using namespace linecap;
using namespace linecap::store;
using namespace store_test;

namespace {

Packet pkt(uint64_t ts, FrameSpec s) { return Packet{ts, frame(s)}; }

}  // namespace

TEST(Crc32c, KnownVector) {
    EXPECT_EQ(crc32c("123456789", 9), 0xe3069283u);
    EXPECT_EQ(crc32c("", 0), 0u);
    // Split computation equals one pass.
    const std::string s(1000, 'x');
    EXPECT_EQ(crc32c_extend(crc32c(s.data(), 333), s.data() + 333, 667), crc32c(s.data(), 1000));
    std::string r;
    for (int i = 0; i < 1021; ++i) r += char(i * 7919 % 251);
    for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(8), size_t(9), size_t(1021)})
        EXPECT_EQ(crc32c_extend_portable(5, r.data(), n), crc32c_extend(5, r.data(), n)) << n;
    EXPECT_EQ(crc32c_extend_portable(0, "123456789", 9), 0xe3069283u);
}

// --- packet keys ---

namespace {
std::set<std::string> keys_of(const Bytes& f, uint32_t caplen = 0) {
    PacketKeys k;
    extract_keys(f.data(), caplen ? caplen : uint32_t(f.size()), k);
    std::set<std::string> out;
    IndexKey key;
    for (unsigned i = 0; i < k.n_protos; ++i) out.insert("proto " + std::to_string(k.protos[i]));
    for (unsigned i = 0; i < k.n_ports; ++i) out.insert("port " + std::to_string(k.ports[i]));
    for (unsigned i = 0; i < k.n_addr4; ++i) {
        key.kind = IndexKey::Kind::addr4;
        key.value = k.addr4[i];
        out.insert(key.to_string());
    }
    for (unsigned i = 0; i < k.n_addr6; ++i) {
        key.kind = IndexKey::Kind::addr6;
        key.addr6 = k.addr6[i];
        out.insert(key.to_string());
    }
    return out;
}
const std::string kSrc6 = "host6 20010db8000000000000000000000001", kDst6 = "host6 20010db8000000000000000000000002";
}  // namespace

TEST(PacketKeys, Ipv4TcpPlainAndTagged) {
    const std::set<std::string> want = {"proto 6", "port 40000", "port 80", "host 198.18.0.1", "host 198.19.0.1"};
    FrameSpec s;
    EXPECT_EQ(keys_of(frame(s)), want);
    s.vlan_tpids = {0x8100};
    EXPECT_EQ(keys_of(frame(s)), want);
    s.vlan_tpids = {0x88a8, 0x8100};  // QinQ
    EXPECT_EQ(keys_of(frame(s)), want);
    s.ip_options_words = 3;  // IPv4 options move the ports
    EXPECT_EQ(keys_of(frame(s)), want);
}

TEST(PacketKeys, Ipv4FragmentsHavePortsOnlyInTheFirst) {
    FrameSpec s;
    s.proto = 17;
    s.more_fragments = true;
    EXPECT_EQ(keys_of(frame(s)).count("port 80"), 1u);
    s.frag_offset = 185;
    const auto k = keys_of(frame(s));
    EXPECT_EQ(k.count("port 80"), 0u);
    EXPECT_EQ(k.count("proto 17"), 1u);
    EXPECT_EQ(k.count("host 198.18.0.1"), 1u);
}

TEST(PacketKeys, Ipv6WithExtensionHeaders) {
    FrameSpec s;
    s.v6 = true;
    s.proto = 17;
    s.dport = 53;
    EXPECT_EQ(keys_of(frame(s)), (std::set<std::string>{"proto 17", "port 40000", "port 53", kSrc6, kDst6}));
    s.v6_hop_by_hop = true;
    s.v6_fragment_header = true;
    s.more_fragments = true;
    auto k = keys_of(frame(s));
    EXPECT_EQ(k.count("port 53"), 1u);
    EXPECT_EQ(k.count("proto 17"), 1u);
    EXPECT_EQ(k.count("proto 0"), 1u);  // what libpcap sees in ip6[6]
    s.frag_offset = 100;                // not the first fragment: no ports
    k = keys_of(frame(s));
    EXPECT_EQ(k.count("port 53"), 0u);
    EXPECT_EQ(k.count("proto 17"), 1u);
}

TEST(PacketKeys, ArpAddressesAndShortCaptures) {
    FrameSpec s;
    s.arp = true;
    EXPECT_EQ(keys_of(frame(s)), (std::set<std::string>{"host 198.18.0.1", "host 198.19.0.1"}));
    FrameSpec t;
    const Bytes f = frame(t);
    EXPECT_EQ(keys_of(f, 30), (std::set<std::string>{"proto 6", "host 198.18.0.1"}));  // dst cut off
    EXPECT_TRUE(keys_of(f, 13).empty());
}

// --- index ---

namespace {

std::vector<Packet> mixed_packets(size_t n) {
    std::vector<Packet> ps;
    for (uint32_t i = 0; i < n; ++i) {
        FrameSpec s;
        s.tag = i;
        s.v6 = i % 5 == 0;
        s.proto = i % 3 == 0 ? 17 : 6;
        s.src4 = ip4(198, 18, 0, int(i % 23));
        s.dst4 = ip4(198, 19, 1, int(i % 7));
        s.src6[15] = uint8_t(i % 11);
        s.sport = uint16_t(1024 + i % 97);
        s.dport = uint16_t(i % 4 == 0 ? 443 : 80);
        if (i % 9 == 0) s.vlan_tpids = {0x8100};
        s.payload = 20 + (i * 131) % 1200;
        ps.push_back(pkt(1700000000000000000ull + i * 1000, s));
    }
    return ps;
}

// Recomputes section and header checksums after a deliberate edit (crafted indexes).
SectionEntry section_of(const Bytes& ix, SectionType type) {
    IndexHeader h;
    std::memcpy(&h, ix.data(), sizeof h);
    for (uint32_t i = 0; i < h.section_count; ++i) {
        SectionEntry e;
        std::memcpy(&e, ix.data() + sizeof(IndexHeader) + i * sizeof e, sizeof e);
        if (e.type == uint32_t(type)) return e;
    }
    return {};
}

// Recomputes every checksum, as a crafted index would.
void reseal(Bytes& ix) {
    IndexHeader h;
    std::memcpy(&h, ix.data(), sizeof h);
    if (h.version >= 3) {
        const SectionEntry blocks = section_of(ix, SectionType::blocks);
        const SectionEntry chunks = section_of(ix, SectionType::chunk_crcs);
        // One per page of the file, of the part of it from the block table's end on.
        const uint64_t begin = blocks.offset + blocks.size;
        for (uint64_t at = begin, c = 0; at < chunks.offset; at = (at / kIndexChunkBytes + 1) * kIndexChunkBytes, ++c) {
            const uint64_t to = std::min<uint64_t>((at / kIndexChunkBytes + 1) * kIndexChunkBytes, chunks.offset);
            const uint32_t crc = crc32c(ix.data() + at, to - at);
            std::memcpy(ix.data() + chunks.offset + c * 4, &crc, 4);
        }
    }
    for (uint32_t i = 0; i < h.section_count; ++i) {
        SectionEntry e;
        uint8_t* p = ix.data() + sizeof(IndexHeader) + i * sizeof e;
        std::memcpy(&e, p, sizeof e);
        e.crc = crc32c(ix.data() + e.offset, e.size);
        std::memcpy(p, &e, sizeof e);
    }
    const size_t fixed = sizeof(IndexHeader) + h.section_count * sizeof(SectionEntry);
    std::memset(ix.data() + offsetof(IndexHeader, header_crc), 0, 4);
    const uint32_t crc = crc32c(ix.data(), fixed);
    std::memcpy(ix.data() + offsetof(IndexHeader, header_crc), &crc, 4);
}

}  // namespace

TEST(Index, RoundTripLookupsAreExact) {
    const auto ps = mixed_packets(3000);
    const Bytes img = pcap_image(ps);
    IndexBuildOptions o;
    o.block_bytes = 8192;
    IndexStats st;
    auto bytes = build_index_bytes(img, o, &st);
    ASSERT_TRUE(bytes.ok());
    auto ix = Index::parse(bytes.value());
    ASSERT_TRUE(ix.ok()) << ix.error().message;
    const IndexHeader& h = ix->header();
    EXPECT_EQ(h.packets, ps.size());
    EXPECT_EQ(h.pcap_size, img.size());
    EXPECT_EQ(h.data_end, img.size());
    EXPECT_EQ(h.min_ts_ns, ps.front().ts_ns);
    EXPECT_EQ(h.max_ts_ns, ps.back().ts_ns);
    EXPECT_TRUE(h.flags & kIndexMonotonic);
    EXPECT_GT(h.block_count, 100u);
    EXPECT_EQ(st.index_bytes, bytes->size());
    EXPECT_LT(double(bytes->size()) / double(img.size()), 0.05);

    // Brute force: which blocks hold each key.
    std::map<std::string, std::set<uint32_t>> truth;
    size_t p = 0;
    const auto blocks = ix->blocks();
    for (uint32_t b = 0; b < blocks.size(); ++b)
        for (uint32_t k = 0; k < blocks[b].packets; ++k, ++p)
            for (const auto& key : keys_of(ps[p].data)) truth[key].insert(b);
    ASSERT_EQ(p, ps.size());
    auto check = [&](const IndexKey& key) {
        const BlockSet got = ix->lookup(key);
        std::set<uint32_t> g;
        for (uint32_t b = 0; b < got.size(); ++b)
            if (got.test(b)) g.insert(b);
        EXPECT_EQ(g, truth[key.to_string()]) << key.to_string();
    };
    for (int a = 0; a < 25; ++a) {
        IndexKey k;
        k.kind = IndexKey::Kind::addr4;
        k.value = ip4(198, 18, 0, a);
        check(k);
    }
    for (uint32_t port : {80u, 443u, 1024u, 1100u, 9999u}) {
        IndexKey k;
        k.kind = IndexKey::Kind::port;
        k.value = port;
        check(k);
    }
    for (uint32_t proto : {6u, 17u, 1u}) {
        IndexKey k;
        k.kind = IndexKey::Kind::proto;
        k.value = proto;
        check(k);
    }
    IndexKey k6;
    k6.kind = IndexKey::Kind::addr6;
    FrameSpec s;
    k6.addr6 = s.src6;
    k6.addr6[15] = 5;
    check(k6);
}

TEST(Index, EverySingleByteCorruptionIsDetected) {
    const Bytes img = pcap_image(mixed_packets(400));
    IndexBuildOptions o;
    o.block_bytes = 4096;
    const Bytes good = build_index_bytes(img, o).value();
    ASSERT_TRUE(Index::parse(good).ok());
    // Version 3 leaves the sections a lookup reads in part to the lookups: parse() or
    // verify() finds every flip.
    for (size_t i = 0; i < good.size(); i += 1 + i / 64) {
        Bytes bad = good;
        bad[i] ^= 0x5a;
        auto r = Index::parse(bad);
        ASSERT_FALSE(r.ok() && r->verify().ok()) << "byte " << i;
    }
    for (size_t n : {size_t(0), size_t(7), size_t(100), size_t(300), good.size() / 2, good.size() - 1}) {
        auto r = Index::parse(Bytes(good.begin(), good.begin() + long(n)));
        EXPECT_FALSE(r.ok()) << n;
    }
    Bytes v = good;
    v[8] = 9;
    EXPECT_EQ(Index::parse(v).error().message, "unsupported index version 9 (this linecap reads 1 to 3)");
    Bytes crc = good;
    crc[crc.size() - 1] ^= 1;
    EXPECT_NE(Index::parse(crc).error().message.find("checksum mismatch"), std::string::npos);
}

TEST(Index, CraftedIndexWithValidChecksumsIsStillChecked) {
    const Bytes img = pcap_image(mixed_packets(400));
    IndexBuildOptions o;
    o.block_bytes = 4096;
    const Bytes good = build_index_bytes(img, o).value();
    IndexHeader h;
    std::memcpy(&h, good.data(), sizeof h);
    SectionEntry blocks;
    std::memcpy(&blocks, good.data() + sizeof h, sizeof blocks);
    ASSERT_EQ(blocks.type, 1u);
    // The last block points past the end of the capture file.
    Bytes past = good;
    BlockEntry last;
    uint8_t* lp = past.data() + blocks.offset + (h.block_count - 1) * sizeof(BlockEntry);
    std::memcpy(&last, lp, sizeof last);
    last.length += 100000;
    std::memcpy(lp, &last, sizeof last);
    reseal(past);
    auto r = Index::parse(past);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("extends past the end of the capture file"), std::string::npos) << r.error().message;
    // A gap between blocks.
    Bytes gap = good;
    BlockEntry b1;
    uint8_t* bp = gap.data() + blocks.offset + sizeof(BlockEntry);
    std::memcpy(&b1, bp, sizeof b1);
    b1.offset += 16;
    std::memcpy(bp, &b1, sizeof b1);
    reseal(gap);
    EXPECT_NE(Index::parse(gap).error().message.find("does not start where the previous one ends"), std::string::npos);
}

// Found by the fuzzer (UBSan: memcpy from a null pointer for an empty block table).
TEST(Index, EmptyCaptureFileHasAnEmptyIndex) {
    {
        auto bytes = build_index_bytes(pcap_image({}));
        ASSERT_TRUE(bytes.ok());
        auto ix = Index::parse(bytes.value());
        ASSERT_TRUE(ix.ok()) << ix.error().message;
        EXPECT_EQ(ix->header().packets, 0u);
        EXPECT_EQ(ix->header().block_count, 0u);
        EXPECT_EQ(ix->blocks().size(), 0u);
        IndexKey k;
        EXPECT_EQ(ix->lookup(k).size(), 0u);
    }
}

TEST(Index, TruncatedTailIsIndexedUpToIt) {
    const auto ps = mixed_packets(100);
    Bytes img = pcap_image(ps);
    img.resize(img.size() - 10);
    IndexStats st;
    auto bytes = build_index_bytes(img, {}, &st);
    ASSERT_TRUE(bytes.ok());
    EXPECT_NE(st.warning.find("truncated record at offset"), std::string::npos);
    auto ix = Index::parse(bytes.value());
    ASSERT_TRUE(ix.ok());
    EXPECT_EQ(ix->header().packets, 99u);
    EXPECT_TRUE(ix->header().flags & kIndexTruncatedTail);
}

TEST(Index, BuildIndexWritesAtomicallyAndDetectsStaleness) {
    TempDir dir;
    const std::string pcap = dir / "a.pcap";
    write_file(pcap, pcap_image(mixed_packets(50)));
    auto st = build_index(pcap);
    ASSERT_TRUE(st.ok()) << st.error().message;
    EXPECT_EQ(st->packets, 50u);
    int entries = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
        ++entries;
        EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos);
    }
    EXPECT_EQ(entries, 2);
    struct stat s {};
    ASSERT_EQ(::stat(pcap.c_str(), &s), 0);
    const int64_t mtime = int64_t(s.st_mtim.tv_sec) * 1000000000 + s.st_mtim.tv_nsec;
    EXPECT_EQ(load_index(pcap, uint64_t(s.st_size), mtime).state, IndexState::valid);
    EXPECT_EQ(load_index(pcap, uint64_t(s.st_size) + 1, mtime).state, IndexState::stale);
    EXPECT_EQ(load_index(pcap, uint64_t(s.st_size), mtime + 1).state, IndexState::stale);
    EXPECT_EQ(load_index(dir / "none.pcap", 0, 0).state, IndexState::missing);
    write_file(linecap::layout::index_name(pcap), Bytes{1, 2, 3});
    const auto bad = load_index(pcap, uint64_t(s.st_size), mtime);
    EXPECT_EQ(bad.state, IndexState::corrupt);
    EXPECT_EQ(bad.problem, "bad magic (not a linecap index)");
    // A damaged pcapng header and missing files: clear errors naming the file.
    write_file(dir / "b.pcap", Bytes{0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a});
    EXPECT_EQ(build_index(dir / "b.pcap").error().message,
              dir / "b.pcap: incomplete pcapng section header block (12 of 28 bytes)");
    EXPECT_NE(build_index(dir / "c.pcap").error().message.find("c.pcap: open: No such file"), std::string::npos);
}

namespace {

// 3000 mixed packets with one conversation spread through them: every 97th packet is
// 10.9.9.1:5555 <-> 10.9.9.2:6666 over TCP (both directions). `flow`: its ordinals.
std::vector<Packet> spread_flow(std::vector<uint32_t>* flow) {
    std::vector<Packet> ps = mixed_packets(3000);
    for (uint32_t i = 13; i < ps.size(); i += 97) {
        FrameSpec s;
        s.tag = 100000 + i;
        const bool back = (i / 97) % 2;
        s.src4 = back ? ip4(10, 9, 9, 2) : ip4(10, 9, 9, 1);
        s.dst4 = back ? ip4(10, 9, 9, 1) : ip4(10, 9, 9, 2);
        s.sport = back ? 6666 : 5555;
        s.dport = back ? 5555 : 6666;
        s.payload = 100 + i % 700;
        ps[i] = pkt(ps[i].ts_ns, s);
        flow->push_back(i);
    }
    return ps;
}

IndexKey key4(uint32_t a) {
    IndexKey k;
    k.kind = IndexKey::Kind::addr4;
    k.value = a;
    return k;
}

}  // namespace

TEST(Index, Version2GivesTheExactRecordsOfASpreadFlow) {
    std::vector<uint32_t> flow;
    const auto ps = spread_flow(&flow);
    const Bytes img = pcap_image(ps);
    IndexStats st;
    const Bytes bytes = build_index_bytes(img, IndexBuildOptions{8192}, &st).value();
    auto ix = Index::parse(bytes);
    ASSERT_TRUE(ix.ok()) << ix.error().message;
    EXPECT_EQ(ix->version(), kIndexVersion);
    EXPECT_GT(st.record_entries, 0u);
    ASSERT_GT(ix->header().block_count, 100u);
    // Where each record is: pcap header, then 16-byte record headers.
    std::vector<std::pair<uint64_t, uint64_t>> truth;
    uint64_t at = sizeof(pcap::FileHeader);
    for (const Packet& p : ps) {
        truth.emplace_back(at, at + 16 + p.data.size());
        at = truth.back().second;
    }
    // Both ends of the flow, both ports: exactly its records.
    for (const IndexKey& k : {key4(ip4(10, 9, 9, 1)), key4(ip4(10, 9, 9, 2))}) {
        auto got = ix->lookup_records(k);
        ASSERT_TRUE(got) << k.to_string();
        EXPECT_EQ(*got, flow) << k.to_string();
    }
    IndexKey port;
    port.kind = IndexKey::Kind::port;
    port.value = 5555;
    ASSERT_TRUE(ix->lookup_records(port));
    EXPECT_EQ(*ix->lookup_records(port), flow);
    // A key the file does not hold: no records; a protocol: blocks only.
    EXPECT_TRUE(ix->lookup_records(key4(ip4(9, 9, 9, 9)))->empty());
    IndexKey tcp;
    tcp.kind = IndexKey::Kind::proto;
    tcp.value = 6;
    EXPECT_FALSE(ix->lookup_records(tcp));
    // Every address the index lists records for: exactly the records holding it.
    std::map<std::string, std::vector<uint32_t>> holding;
    for (uint32_t i = 0; i < ps.size(); ++i)
        for (const auto& key : keys_of(ps[i].data)) holding[key].push_back(i);
    size_t listed = 0;
    for (int a = 0; a < 23; ++a) {
        const IndexKey k = key4(ip4(198, 18, 0, a));
        if (auto got = ix->lookup_records(k)) {
            ++listed;
            EXPECT_EQ(*got, holding[k.to_string()]) << k.to_string();
        }
    }
    EXPECT_EQ(listed, 23u) << "each in 1 of 23 records";
    IndexKey http;  // in 3 of 4 records: by block only
    http.kind = IndexKey::Kind::port;
    http.value = 80;
    EXPECT_FALSE(ix->lookup_records(http));
    // Byte ranges: the records' own, block by block.
    for (uint32_t b = 0; b < ix->header().block_count; ++b) {
        std::vector<uint32_t> in;
        for (uint32_t r : flow)
            if (ix->block_of_record(r) == b) in.push_back(r);
        std::vector<std::pair<uint64_t, uint64_t>> got;
        ASSERT_TRUE(ix->record_extents(b, in, got)) << b;
        ASSERT_EQ(got.size(), in.size());
        for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(got[i], truth[in[i]]) << "record " << in[i];
        EXPECT_GE(in.empty() ? ix->first_record(b) : in.front(), ix->first_record(b));
    }
    // The query's plan: the flow's records, no whole block.
    auto f = CompiledFilter::compile("host 10.9.9.1 and host 10.9.9.2 and tcp port 5555");
    ASSERT_TRUE(f.ok());
    const CandidateRecords c = candidate_records(ix.value(), f->plan());
    EXPECT_EQ(c.records, flow);
    EXPECT_EQ(c.whole.popcount(), 0u);
    // An alternative with no listed key (udp alone) reads its blocks whole; the records of
    // the other alternative in those blocks are not listed twice.
    auto g = CompiledFilter::compile("(host 10.9.9.1 and port 6666) or udp");
    ASSERT_TRUE(g.ok());
    const CandidateRecords d = candidate_records(ix.value(), g->plan());
    EXPECT_GT(d.whole.popcount(), 0u);
    for (uint32_t r : d.records) EXPECT_FALSE(d.whole.test(ix->block_of_record(r)));
    for (uint32_t r : flow) EXPECT_TRUE(d.whole.test(ix->block_of_record(r)) || std::count(d.records.begin(), d.records.end(), r));
    // Within 2 % of the capture file for this mix (small frames, 8 KiB blocks).
    EXPECT_LT(double(bytes.size()) / double(img.size()), 0.06);
}

TEST(Index, BlockChecksumsCatchAFlippedByte) {
    const Bytes img = pcap_image(mixed_packets(1000));
    auto ix = Index::parse(build_index_bytes(img, IndexBuildOptions{8192}).value());
    ASSERT_TRUE(ix.ok());
    const auto blocks = ix->blocks();
    ASSERT_GT(blocks.size(), 10u);
    for (uint32_t b = 0; b < blocks.size(); ++b) {
        ASSERT_TRUE(ix->block_crc(b));
        EXPECT_EQ(*ix->block_crc(b), crc32c(img.data() + blocks[b].offset, blocks[b].length));
        EXPECT_TRUE(ix->block_matches(b, img.data() + blocks[b].offset)) << b;
    }
    for (uint64_t at : {blocks[5].offset, blocks[5].offset + blocks[5].length / 2, blocks[5].offset + blocks[5].length - 1}) {
        Bytes bad = img;
        bad[at] ^= 0x01;
        for (uint32_t b = 0; b < blocks.size(); ++b)
            EXPECT_EQ(ix->block_matches(b, bad.data() + blocks[b].offset), b != 5) << "block " << b << ", flip at " << at;
    }
}

// Version 3: a damaged chunk is found by the lookup that reads it. That lookup answers
// "every block" (never a wrong "no"), the others stay exact, and verify() names the chunk.
TEST(Index, Version3ChecksTheChunksALookupReads) {
    std::vector<uint32_t> flow;
    const Bytes img = pcap_image(spread_flow(&flow));
    const Bytes good = build_index_bytes(img, IndexBuildOptions{8192}).value();
    auto clean = Index::parse(good);
    ASSERT_TRUE(clean.ok()) << clean.error().message;
    ASSERT_TRUE(clean->verify().ok());
    // The flow's server port: its block list (and records) are in the postings.
    IndexKey port;
    port.kind = IndexKey::Kind::port;
    port.value = 5555;
    ASSERT_GT(clean->lookup(port).popcount(), 0u);
    ASSERT_TRUE(clean->lookup_records(port).has_value());
    // Any other key whose lookup reads none of the damaged chunk.
    IndexKey proto;
    proto.kind = IndexKey::Kind::proto;
    proto.value = 17;
    const BlockSet udp = clean->lookup(proto);

    const SectionEntry postings = section_of(good, SectionType::postings);
    PostingRef ref{};
    {
        // Port 5555's reference, to flip a byte of its list.
        const SectionEntry ports = section_of(good, SectionType::ports);
        for (uint64_t i = 0; i < ports.count; ++i) {
            uint16_t key;
            std::memcpy(&key, good.data() + ports.offset + i * 2, 2);
            if (key == 5555)
                std::memcpy(&ref, good.data() + ports.offset + ((ports.count * 2 + 7) & ~uint64_t{7}) + i * sizeof ref,
                            sizeof ref);
        }
    }
    ASSERT_GT(ref.count_enc, 0u);
    Bytes bad = good;
    const uint64_t at = postings.offset + ref.offset;
    bad[at] ^= 0x40;
    auto ix = Index::parse(bad);
    ASSERT_TRUE(ix.ok()) << "parse reads no postings: " << ix.error().message;
    EXPECT_FALSE(ix->damaged());
    EXPECT_EQ(ix->lookup(proto).popcount(), udp.popcount());
    const BlockSet got = ix->lookup(port);
    EXPECT_EQ(got.popcount(), got.size()) << "a damaged list answers every block";
    EXPECT_TRUE(ix->damaged());
    EXPECT_FALSE(ix->lookup_records(port).has_value());
    auto whole = ix->verify();
    ASSERT_FALSE(whole.ok());
    EXPECT_NE(whole.error().message.find("checksum mismatch in chunk"), std::string::npos) << whole.error().message;
    // The same flip with every checksum recomputed: the list no longer decodes as written,
    // or decodes to other blocks; either way no crash, and parse() and verify() pass.
    reseal(bad);
    auto crafted = Index::parse(bad);
    ASSERT_TRUE(crafted.ok());
    EXPECT_TRUE(crafted->verify().ok());
    (void)crafted->lookup(port);
}

TEST(Index, Version1FilesStillLoadAndAnswerByBlock) {
    std::vector<uint32_t> flow;
    const Bytes img = pcap_image(spread_flow(&flow));
    IndexBuildOptions v1{8192};
    v1.version = 1;
    IndexStats s1, s2;
    const Bytes old_bytes = build_index_bytes(img, v1, &s1).value();
    const Bytes new_bytes = build_index_bytes(img, IndexBuildOptions{8192}, &s2).value();
    auto old_ix = Index::parse(old_bytes);
    auto new_ix = Index::parse(new_bytes);
    ASSERT_TRUE(old_ix.ok()) << old_ix.error().message;
    ASSERT_TRUE(new_ix.ok());
    EXPECT_EQ(old_ix->version(), 1u);
    IndexHeader h;
    std::memcpy(&h, old_bytes.data(), sizeof h);
    EXPECT_EQ(h.section_count, 6u);
    EXPECT_EQ(s1.record_entries, 0u);
    EXPECT_LT(old_bytes.size(), new_bytes.size());
    // The same blocks for every key; no records, no checksums (nothing to refuse).
    for (const IndexKey& k : {key4(ip4(10, 9, 9, 1)), key4(ip4(198, 18, 0, 3)), key4(ip4(9, 9, 9, 9))}) {
        const BlockSet a = old_ix->lookup(k), b = new_ix->lookup(k);
        ASSERT_EQ(a.size(), b.size());
        for (uint32_t i = 0; i < a.size(); ++i) EXPECT_EQ(a.test(i), b.test(i)) << k.to_string();
        EXPECT_FALSE(old_ix->lookup_records(k));
    }
    EXPECT_FALSE(old_ix->block_crc(0));
    EXPECT_TRUE(old_ix->block_matches(0, img.data()));
    std::vector<std::pair<uint64_t, uint64_t>> none;
    EXPECT_FALSE(old_ix->record_extents(0, std::vector<uint32_t>{0}, none));
    auto f = CompiledFilter::compile("host 10.9.9.1 and host 10.9.9.2");
    const CandidateRecords c = candidate_records(old_ix.value(), f->plan());
    EXPECT_TRUE(c.records.empty());
    EXPECT_EQ(c.whole.popcount(), candidate_blocks(new_ix.value(), f->plan()).popcount());
}

TEST(Index, CraftedRecordListsFallBackToBlocks) {
    std::vector<uint32_t> flow;
    const Bytes img = pcap_image(spread_flow(&flow));
    const Bytes good = build_index_bytes(img, IndexBuildOptions{8192}).value();
    IndexHeader h;
    std::memcpy(&h, good.data(), sizeof h);
    SectionEntry records;
    std::memcpy(&records, good.data() + sizeof h + 7 * sizeof(SectionEntry), sizeof records);
    ASSERT_EQ(records.type, uint32_t(SectionType::records));
    // Record lengths that no longer add up to their block's: that block reads whole.
    Bytes bad = good;
    uint32_t start1;
    std::memcpy(&start1, bad.data() + records.offset + 4, 4);  // block 1's first length
    bad[records.offset + records.count * 4 + start1] ^= 0x01;
    reseal(bad);
    auto ix = Index::parse(bad);
    ASSERT_TRUE(ix.ok()) << ix.error().message;
    std::vector<std::pair<uint64_t, uint64_t>> out;
    EXPECT_FALSE(ix->record_extents(1, std::vector<uint32_t>{uint32_t(ix->first_record(1))}, out));
    EXPECT_TRUE(out.empty());
    EXPECT_TRUE(ix->damaged());
    EXPECT_TRUE(ix->record_extents(2, std::vector<uint32_t>{uint32_t(ix->first_record(2))}, out));
}

// --- times ---

TEST(TimeSpec, Iso8601AndUnixSeconds) {
    const uint64_t base = 1796004600ull * 1000000000ull;  // 2026-11-30T02:10:00Z
    EXPECT_EQ(parse_time("2026-11-30T02:10:00Z").value(), base);
    EXPECT_EQ(parse_time("2026-11-30T02:10:00.5Z").value(), base + 500000000);
    EXPECT_EQ(parse_time("2026-11-30t02:10:00.000000001z").value(), base + 1);
    EXPECT_EQ(parse_time("2026-11-30 03:10:00+01:00").value(), base);
    EXPECT_EQ(parse_time("2026-11-30T01:40:00-0030").value(), base);
    EXPECT_EQ(parse_time("2026-11-30T04:10:00+02").value(), base);
    EXPECT_EQ(parse_time("20261130T021000Z").value(), base);
    EXPECT_EQ(parse_time("20261130T021000.25Z").value(), base + 250000000);
    EXPECT_EQ(parse_time("2026-11-30T02:10Z").value(), base);
    EXPECT_EQ(parse_time("2026-11-30").value(), base - (2 * 3600 + 600) * 1000000000ull);
    EXPECT_EQ(parse_time("1700000000").value(), 1700000000000000000ull);
    EXPECT_EQ(parse_time("1700000000.123456789").value(), 1700000000123456789ull);
    EXPECT_EQ(parse_time("1700000000.5").value(), 1700000000500000000ull);
    EXPECT_EQ(parse_time("2024-02-29T00:00:00Z").value(), 1709164800ull * 1000000000ull);
    EXPECT_EQ(format_time(base + 500000000), "2026-11-30T02:10:00.500000000Z");
}

TEST(TimeSpec, RefusesAmbiguousOrInvalid) {
    for (const char* bad : {"", "2026-11-30T02:10:00", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z",
                            "2026-11-30T24:00:00Z", "2026-11-30T02:10:60Z", "1700000000.1234567891", "17000x",
                            "1969-12-31T23:59:59Z", "2026-11-30T02:10:00+25:00", "2026-11-30T02:10:00Zjunk",
                            "yesterday", "1700000000."}) {
        EXPECT_FALSE(parse_time(bad).ok()) << bad;
    }
    EXPECT_NE(parse_time("2026-11-30T02:10:00").error().message.find("add 'Z'"), std::string::npos);
}

// --- file names ---

// Names and the template grammar: tests/output/layout_test.cpp.

TEST(Catalog, SpansFromConsecutiveNamesAndIgnoredFiles) {
    TempDir dir;
    const Bytes empty = pcap_image({});
    const uint64_t t0 = 1796004600000000000ull;
    write_file(dir / store_name(t0, "p0", 0), empty);
    write_file(dir / store_name(t0 + 5000, "p0", 0), empty);
    write_file(dir / store_name(t0 + 100, "p0", 1), empty);
    write_file(dir / ("." + store_name(t0 + 9000, "p0", 0) + ".part"), empty);
    write_file(dir / (store_name(t0, "p0", 0) + ".idx"), empty);
    write_file(dir / (store_name(t0, "p0", 0) + ".sha256"), empty);
    write_file(dir / "notes.txt", empty);
    write_file(dir / "foreign.pcap", empty);
    const auto file_template = linecap::FileTemplate::compile(linecap::kDefaultFileTemplate).value();
    auto cat = linecap::LocalDirectoryStore(dir.path()).list(linecap::ListOptions::catalog(file_template));
    ASSERT_TRUE(cat.ok());
    ASSERT_EQ(cat->files.size(), 4u);
    EXPECT_EQ(cat->in_progress, 1u);
    const auto& a = cat->files[0];  // 20261130T021000.000000000Z-p0-q0.pcap
    EXPECT_EQ(a.stream, "p0/q0");
    EXPECT_EQ(a.lower_ns, t0);
    EXPECT_EQ(a.upper_ns, t0 + 5001);
    EXPECT_EQ(cat->files[1].upper_ns, UINT64_MAX);  // p0/q1: last of its stream
    EXPECT_EQ(cat->files[2].lower_ns, t0 + 5000);
    EXPECT_EQ(cat->files[3].name, "foreign.pcap");
    EXPECT_FALSE(cat->files[3].parsed);
    EXPECT_EQ(cat->files[3].lower_ns, 0u);
}

// `--to 2600-01-01` wrapped around 2^64 ns and selected a window in 1970.
TEST(TimeSpec, RefusesTimesANanosecondTimestampCannotHold) {
    EXPECT_EQ(parse_time("2554-07-21T23:34:33.709551615Z").value(), UINT64_MAX);
    EXPECT_EQ(parse_time("18446744073.709551615").value(), UINT64_MAX);
    for (const char* t : {"2600-01-01", "2554-07-21T23:34:33.709551616Z", "2554-07-22", "9999-12-31T23:59:59Z",
                          "18446744073.709551616", "18446744074", "99999999999999999999999"}) {
        auto r = parse_time(t);
        ASSERT_FALSE(r.ok()) << t;
        EXPECT_EQ(r.error().message, "'" + std::string(t) +
                                         "': after 2554-07-21T23:34:33.709551615Z, the latest time a 64-bit "
                                         "nanosecond timestamp can hold");
    }
}
