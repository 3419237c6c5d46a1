// The capture policies after the filter, without a port: the direction-independent flow
// key, the flow table (allowance, idle ageing, eviction), duplicate suppression (TTL / hop
// limit / IPv4 checksum ignored, nothing else; originals compared in the write block or
// in the same burst) and its table, over bursts of fake mbufs as the worker runs them.
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <random>
#include <vector>

#include "capture/dedup.hpp"
#include "capture/flow_cap.hpp"
#include "packet/packet_keys.hpp"

namespace linecap {
namespace {

// Ethernet + IPv4 + UDP (or TCP), `size` bytes, payload bytes set to `fill`.
std::vector<uint8_t> ipv4_frame(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, size_t size,
                                uint8_t proto = 17, uint8_t fill = 0xab) {
    std::vector<uint8_t> f(size, fill);
    const uint8_t eth[] = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00};
    std::memcpy(f.data(), eth, sizeof eth);
    uint8_t* ip = f.data() + 14;
    ip[0] = 0x45;
    ip[1] = 0;
    ip[2] = uint8_t((size - 14) >> 8);
    ip[3] = uint8_t(size - 14);
    ip[4] = ip[5] = ip[6] = ip[7] = 0;
    ip[8] = 64;
    ip[9] = proto;
    ip[10] = 0x12;
    ip[11] = 0x34;
    for (int i = 0; i < 4; ++i) {
        ip[12 + i] = uint8_t(src >> (24 - 8 * i));
        ip[16 + i] = uint8_t(dst >> (24 - 8 * i));
    }
    uint8_t* l4 = ip + 20;
    l4[0] = uint8_t(sport >> 8);
    l4[1] = uint8_t(sport);
    l4[2] = uint8_t(dport >> 8);
    l4[3] = uint8_t(dport);
    return f;
}

std::vector<uint8_t> ipv6_frame(uint8_t src_last, uint8_t dst_last, uint16_t sport, uint16_t dport, size_t size) {
    std::vector<uint8_t> f(size, 0xcd);
    const uint8_t eth[] = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x86, 0xdd};
    std::memcpy(f.data(), eth, sizeof eth);
    uint8_t* ip = f.data() + 14;
    std::memset(ip, 0, 40);
    ip[0] = 0x60;
    ip[4] = uint8_t((size - 54) >> 8);
    ip[5] = uint8_t(size - 54);
    ip[6] = 6;  // TCP
    ip[7] = 64;
    ip[8] = 0x20;
    ip[9] = 0x01;
    ip[23] = src_last;
    ip[24] = 0x20;
    ip[25] = 0x01;
    ip[39] = dst_last;
    ip[40] = uint8_t(sport >> 8);
    ip[41] = uint8_t(sport);
    ip[42] = uint8_t(dport >> 8);
    ip[43] = uint8_t(dport);
    return f;
}

// Single-segment mbufs over the frames (what the policies read: buf_addr, buf_len,
// data_off, data_len, pkt_len, next). Each buffer goes on for kTail bytes after its frame,
// different in every Burst: nothing there may count.
struct Burst {
    static constexpr size_t kTail = 64;
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<rte_mbuf> mbufs;
    std::vector<rte_mbuf*> ptrs;
    explicit Burst(const std::vector<std::vector<uint8_t>>& frames) : buffers(frames.size()), mbufs(frames.size()) {
        static uint8_t garbage = 0;
        for (size_t i = 0; i < frames.size(); ++i) {
            buffers[i].assign(RTE_PKTMBUF_HEADROOM, 0);
            buffers[i].insert(buffers[i].end(), frames[i].begin(), frames[i].end());
            for (size_t k = 0; k < kTail; ++k) buffers[i].push_back(uint8_t(++garbage * 37));
            std::memset(&mbufs[i], 0, sizeof(rte_mbuf));
            mbufs[i].buf_addr = buffers[i].data();
            mbufs[i].buf_len = uint16_t(buffers[i].size());
            mbufs[i].data_off = RTE_PKTMBUF_HEADROOM;
            mbufs[i].data_len = uint16_t(frames[i].size());
            mbufs[i].pkt_len = uint32_t(frames[i].size());
            mbufs[i].nb_segs = 1;
        }
        for (auto& m : mbufs) ptrs.push_back(&m);
    }
    uint16_t size() const { return uint16_t(ptrs.size()); }
};

// The flow table's hash key of these tests (each queue draws its own).
const KeyedHash kHash = KeyedHash::random();

FlowKey key_of(const std::vector<uint8_t>& f) {
    FlowKey k;
    EXPECT_TRUE(flow_key(f.data(), uint32_t(f.size()), k));
    return k;
}

// The key as the table hashes it: its first `size` bytes.
std::vector<uint8_t> key_bytes(const FlowKey& k) {
    const auto* p = static_cast<const uint8_t*>(k.data());
    return {p, p + k.size};
}

TEST(FlowKey, IsTheSameForBothDirections) {
    const auto a = key_of(ipv4_frame(0xc6120001, 0xc6130002, 40000, 443, 100));
    const auto b = key_of(ipv4_frame(0xc6130002, 0xc6120001, 443, 40000, 60));
    EXPECT_EQ(a.size, FlowKey::kIpv4Size);
    EXPECT_EQ(key_bytes(a), key_bytes(b));
    EXPECT_EQ(FlowTable::hash_key(a, kHash), FlowTable::hash_key(b, kHash));
    // One address at both ends: the ports decide the order.
    EXPECT_EQ(key_bytes(key_of(ipv4_frame(0xc6120001, 0xc6120001, 40000, 443, 100))),
              key_bytes(key_of(ipv4_frame(0xc6120001, 0xc6120001, 443, 40000, 100))));

    const auto v6a = key_of(ipv6_frame(1, 2, 5000, 80, 120));
    const auto v6b = key_of(ipv6_frame(2, 1, 80, 5000, 80));
    EXPECT_EQ(v6a.size, FlowKey::kIpv6Size);
    EXPECT_EQ(key_bytes(v6a), key_bytes(v6b));
    EXPECT_EQ(FlowTable::hash_key(v6a, kHash), FlowTable::hash_key(v6b, kHash));
}

// Every field of the flow counts: another protocol, address or port at either end is
// another flow.
TEST(FlowKey, EveryFieldCounts) {
    const uint64_t h = FlowTable::hash_key(key_of(ipv4_frame(0xc6120001, 0xc6130002, 40000, 443, 100)), kHash);
    for (const auto& other : {ipv4_frame(0xc6120001, 0xc6130002, 40000, 443, 100, 6),
                              ipv4_frame(0xc6120002, 0xc6130002, 40000, 443, 100),
                              ipv4_frame(0xc6120001, 0xc6130003, 40000, 443, 100),
                              ipv4_frame(0xc6120001, 0xc6130002, 40001, 443, 100),
                              ipv4_frame(0xc6120001, 0xc6130002, 40000, 444, 100),
                              // the ends' ports swapped: not the reverse direction
                              ipv4_frame(0xc6120001, 0xc6130002, 443, 40000, 100)})
        EXPECT_NE(FlowTable::hash_key(key_of(other), kHash), h);
    const uint64_t v6 = FlowTable::hash_key(key_of(ipv6_frame(1, 2, 5000, 80, 120)), kHash);
    EXPECT_NE(FlowTable::hash_key(key_of(ipv6_frame(1, 3, 5000, 80, 120)), kHash), v6);
    EXPECT_NE(FlowTable::hash_key(key_of(ipv6_frame(1, 2, 5001, 80, 120)), kHash), v6);
    EXPECT_NE(FlowTable::hash_key(key_of(ipv6_frame(1, 2, 80, 5000, 120)), kHash), v6);
}

// An IPv4 end as the key holds it: the address's and port's wire bytes as loaded.
uint64_t loaded_end(uint32_t address, uint16_t port) {
    const uint8_t wire[6] = {uint8_t(address >> 24), uint8_t(address >> 16), uint8_t(address >> 8), uint8_t(address),
                             uint8_t(port >> 8), uint8_t(port)};
    uint32_t a;
    uint16_t p;
    std::memcpy(&a, wire, sizeof a);
    std::memcpy(&p, wire + 4, sizeof p);
    return uint64_t{a} << 16 | p;
}

// The key's bytes, as the table hashes them: every one set (IPv4: each end as its wire
// bytes loaded, the lower first, the protocol in the first word's top byte; IPv6: version,
// protocol, ports, addresses), the same key behind VLAN tags and IPv4 options (the walked
// layouts), so a flow seen tagged in one direction and untagged in the other is one flow.
TEST(FlowKey, SetsEveryByte) {
    const auto f = ipv4_frame(0xc6130002, 0xc6120001, 443, 40000, 100, 6);
    FlowKey k;
    std::memset(static_cast<void*>(&k), 0x5a, sizeof k);
    ASSERT_TRUE(flow_key(f.data(), uint32_t(f.size()), k));
    ASSERT_EQ(k.size, 16u);
    const uint64_t src = loaded_end(0xc6130002, 443), dst = loaded_end(0xc6120001, 40000);
    EXPECT_EQ(k.words[0], (uint64_t{6} << 56) | std::min(src, dst));
    EXPECT_EQ(k.words[1], std::max(src, dst));

    auto tagged = f;
    const uint8_t tag[] = {0x81, 0x00, 0x00, 0x07};
    tagged.insert(tagged.begin() + 12, tag, tag + 4);
    FlowKey t;
    ASSERT_TRUE(flow_key(tagged.data(), uint32_t(tagged.size()), t));
    EXPECT_EQ(key_bytes(k), key_bytes(t));

    // IPv4 options (the header's length from its first byte): the ports after them.
    auto options = f;
    options[14] = 0x46;
    const uint8_t nops[4] = {1, 1, 1, 1};
    options.insert(options.begin() + 14 + 20, nops, nops + 4);
    EXPECT_EQ(key_bytes(key_of(options)), key_bytes(k));

    // A fragment after the first: no ports, the address pair and protocol only.
    auto fragment = f;
    fragment[14 + 7] = 0x10;
    EXPECT_EQ(key_of(fragment).words[0],
              (uint64_t{6} << 56) | std::min(loaded_end(0xc6130002, 0), loaded_end(0xc6120001, 0)));

    const auto v6 = ipv6_frame(2, 1, 443, 40000, 100);
    FlowKey k6;
    std::memset(static_cast<void*>(&k6), 0x5a, sizeof k6);
    ASSERT_TRUE(flow_key(v6.data(), uint32_t(v6.size()), k6));
    ASSERT_EQ(k6.size, 40u);
    const uint8_t lo[16] = {0x20, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    const uint8_t hi[16] = {0x20, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    std::vector<uint8_t> expected = {6, 6, 0, 0, 0, 0, 0, 0};
    // 40000, 443 as on the wire: the lower address's end (the destination) first
    const uint8_t ports[4] = {0x9c, 0x40, 0x01, 0xbb};
    std::memcpy(expected.data() + 2, ports, sizeof ports);
    expected.insert(expected.end(), lo, lo + 16);
    expected.insert(expected.end(), hi, hi + 16);
    EXPECT_EQ(key_bytes(k6), expected);
}

TEST(FlowKey, RefusesWhatIsNotIp) {
    std::vector<uint8_t> arp(60, 0);
    arp[12] = 0x08;
    arp[13] = 0x06;
    FlowKey k;
    EXPECT_FALSE(flow_key(arp.data(), uint32_t(arp.size()), k));
    const auto truncated = ipv4_frame(1, 2, 3, 4, 100);
    EXPECT_FALSE(flow_key(truncated.data(), 30, k));
}

struct Table {
    std::vector<FlowTable::Bucket> memory;
    FlowTable table;
    explicit Table(size_t entries) : memory(entries / FlowTable::kWays), table(memory) {}
};

TEST(FlowTable, CountsAndAgesOut) {
    Table t(1024);
    bool evicted = false;
    const uint64_t h = 0x1234567890abcdefull | 1;
    EXPECT_EQ(t.table.account(h, 100, 10, 1000, evicted), 0u);
    EXPECT_EQ(t.table.account(h, 50, 11, 1000, evicted), 100u);
    EXPECT_EQ(t.table.account(h, 1, 12, 1000, evicted), 150u);
    // Idle for longer than the timeout: the flow starts over.
    EXPECT_EQ(t.table.account(h, 7, 12 + 1001, 1000, evicted), 0u);
    EXPECT_EQ(t.table.account(h, 1, 12 + 1002, 1000, evicted), 7u);
    EXPECT_FALSE(evicted);
    // Saturates instead of wrapping.
    EXPECT_EQ(t.table.account(h, UINT32_MAX, 2000, 1000, evicted), 8u);
    EXPECT_EQ(t.table.account(h, 5, 2001, 1000, evicted), UINT32_MAX);
}

TEST(FlowTable, EvictsTheLeastRecentlySeenOfAFullBucket) {
    Table t(1024);  // 256 buckets: hashes equal in the low 8 bits share one
    bool evicted = false;
    for (uint64_t w = 0; w < FlowTable::kWays; ++w) {
        t.table.account(((w + 1) << 32) | 1, 10, uint32_t(100 + w), 1000, evicted);
        EXPECT_FALSE(evicted);
    }
    const uint64_t newcomer = (uint64_t{99} << 32) | 1;
    EXPECT_EQ(t.table.account(newcomer, 10, 200, 1000, evicted), 0u);
    EXPECT_TRUE(evicted);
    // The oldest (first) flow was pushed out and starts over; the others kept their counts.
    evicted = false;
    EXPECT_EQ(t.table.account((uint64_t{2} << 32) | 1, 1, 201, 1000, evicted), 10u);
    EXPECT_EQ(t.table.account((uint64_t{1} << 32) | 1, 1, 202, 1000, evicted), 0u);
    EXPECT_TRUE(evicted);
    // An idle entry is reused without counting an eviction.
    evicted = false;
    t.table.account((uint64_t{77} << 32) | 1, 1, 5000, 1000, evicted);
    EXPECT_FALSE(evicted);
}

TEST(FlowCap, CutsEveryPacketAfterTheAllowanceInBothDirections) {
    std::vector<std::vector<uint8_t>> frames;
    for (int i = 0; i < 6; ++i) {
        frames.push_back(i % 2 ? ipv4_frame(0xc6130002, 0xc6120001, 443, 40000, 1000)
                               : ipv4_frame(0xc6120001, 0xc6130002, 40000, 443, 1000));
    }
    frames.push_back(ipv4_frame(0xc6120009, 0xc6130002, 40000, 443, 1000));  // another flow
    Burst burst(frames);
    Table t(1024);
    FlowCapQueue cap;
    cap.table = t.table;
    cap.rule = FlowCapRule{2500, true, 128, 1000};
    uint64_t keep[8], scratch[8];
    for (auto& k : keep) k = 262144;
    keep[5] = 0;  // filtered out before the cap: not counted, not touched
    const FlowCapOutcome out = apply_flow_cap(cap, burst.ptrs.data(), burst.size(), keep, 1'000'000'000, scratch);
    // 1000 + 1000 + 1000 reach 2500 during the third packet: it is kept whole, the rest cut.
    EXPECT_EQ(keep[0], 262144u);
    EXPECT_EQ(keep[1], 262144u);
    EXPECT_EQ(keep[2], 262144u);
    EXPECT_EQ(keep[3], 128u);
    EXPECT_EQ(keep[4], 128u);
    EXPECT_EQ(keep[5], 0u);
    EXPECT_EQ(keep[6], 262144u);
    EXPECT_EQ(out.cut, 2u);
    EXPECT_EQ(out.dropped, 0u);
    EXPECT_EQ(out.saved_bytes, 2u * (1000 - 128));

    // Drop mode, counted in packets.
    Table t2(1024);
    cap.table = t2.table;
    cap.rule = FlowCapRule{1, false, 0, 1000};
    for (auto& k : keep) k = 262144;
    const FlowCapOutcome dropped = apply_flow_cap(cap, burst.ptrs.data(), burst.size(), keep, 1'000'000'000, scratch);
    EXPECT_EQ(dropped.dropped, 5u);
    EXPECT_EQ(dropped.cut, 0u);
    EXPECT_EQ(keep[0], 262144u);
    EXPECT_EQ(keep[1], 0u);
    EXPECT_EQ(keep[6], 262144u);
}

// One queue's dedup and write block as the worker runs them: dedup over a burst, the kept
// packets appended to the block (cut to keep_each when that is shorter), the records noted.
struct DedupRig {
    explicit DedupRig(uint32_t entries = 1024, uint64_t window_ns = 1'000'000)
        : memory(DedupQueue::memory_bytes(entries) / sizeof(Line)), block_bytes(256 << 10),
          dedup(memory.data(), entries, window_ns) {
        block.data = block_bytes.data();
        block.capacity = uint32_t(block_bytes.size());
    }
    // What dedup left of each packet (0: suppressed), and the outcome in `last`.
    std::vector<uint64_t> run(const Burst& burst, uint64_t ts_ns, uint64_t keep_each = 262144) {
        const uint16_t n = burst.size();
        std::vector<uint64_t> keep(n, keep_each), scratch(n);
        last = apply_dedup(dedup, burst.ptrs.data(), n, keep.data(), ts_ns, scratch.data());
        const BurstSize size = measure_burst<FileKind::pcap>(burst.ptrs.data(), n, keep.data(), 262144);
        EXPECT_GE(block.room(), size.record_bytes);
        append_burst<FileKind::pcap>(block, burst.ptrs.data(), n, keep.data(), 262144, ts_ns, size, dedup.recorder(ts_ns, &block));
        end_dedup_burst(dedup, true);
        return keep;
    }
    // Whether `copy`, after `original` was written (in an earlier burst, or earlier in the
    // same one), is taken for a copy. Each call starts from a new block, later than the
    // window of every earlier call.
    bool suppresses(const std::vector<uint8_t>& original, const std::vector<uint8_t>& copy, bool same_burst) {
        block.reset();
        dedup.block_taken(block);
        ts += 10 * dedup.window_ns;
        if (same_burst) return run(Burst({original, copy}), ts)[1] == 0;
        EXPECT_NE(run(Burst({original}), ts)[0], 0u);
        return run(Burst({copy}), ts + 1)[0] == 0;
    }

    struct alignas(64) Line {
        uint8_t bytes[64];
    };
    std::vector<Line> memory;  // before `dedup`, which is built on it
    std::vector<uint8_t> block_bytes;
    DedupQueue dedup;
    WriteBlock block;
    DedupOutcome last;
    uint64_t ts = 1'000'000'000;  // suppresses(): each call later than the last's window
};

TEST(Dedup, IgnoresTtlHopLimitAndIpv4ChecksumOnly) {
    DedupRig rig;
    const auto original = ipv4_frame(0xc6120001, 0xc6130002, 40000, 443, 200);
    auto routed = original;
    routed[14 + 8] = 63;     // TTL
    routed[14 + 10] = 0x77;  // header checksum
    routed[14 + 11] = 0x88;
    for (const bool same_burst : {false, true}) {
        EXPECT_TRUE(rig.suppresses(original, original, same_burst));
        EXPECT_TRUE(rig.suppresses(original, routed, same_burst));
        for (size_t at : {size_t(0), size_t(14 + 1), size_t(14 + 4), size_t(14 + 9), size_t(14 + 12), size_t(60), size_t(199)}) {
            auto other = original;
            other[at] ^= 1;
            EXPECT_FALSE(rig.suppresses(original, other, same_burst)) << "byte " << at;
        }
        const std::vector<uint8_t> shorter(original.begin(), original.end() - 1);
        EXPECT_FALSE(rig.suppresses(original, shorter, same_burst));

        const auto v6 = ipv6_frame(1, 2, 5000, 80, 120);
        auto v6_routed = v6;
        v6_routed[14 + 7] = 1;  // hop limit
        EXPECT_TRUE(rig.suppresses(v6, v6_routed, same_burst));
        auto v6_other = v6;
        v6_other[14 + 6] = 17;
        EXPECT_FALSE(rig.suppresses(v6, v6_other, same_burst));
    }
}

// Every byte counts except the ignored fields, at every size the comparison treats
// differently (runts, exactly the hashed head, just past it, past its first 256-byte
// piece) and with the fields moved by VLAN tags; against an original in the block and
// one earlier in the same burst.
TEST(Dedup, EveryOtherByteCountsAtEverySizeAndTagDepth) {
    DedupRig rig;
    for (const size_t size : {size_t(42), size_t(60), size_t(64), size_t(65), size_t(300), size_t(1514)}) {
        for (const unsigned tags : {0u, 2u}) {
            for (const bool v6 : {false, true}) {
                if (v6 && size < 62) continue;
                auto f = v6 ? ipv6_frame(1, 2, 5000, 80, size) : ipv4_frame(0xc6120001, 0xc6130002, 40000, 443, size);
                for (size_t k = 0; k < f.size(); ++k) f[k] ^= uint8_t(k * 7);  // no two frames alike
                for (unsigned t = 0; t < tags; ++t) {
                    const uint8_t tag[] = {0x81, 0x00, 0x00, uint8_t(t + 1)};
                    f.insert(f.begin() + 12, tag, tag + 4);
                    f.resize(size);
                }
                const size_t l3 = 14 + 4 * tags;
                f[l3 - 2] = v6 ? 0x86 : 0x08;  // the EtherType after the tags
                f[l3 - 1] = v6 ? 0xdd : 0x00;
                for (size_t at = 0; at < f.size(); ++at) {
                    auto g = f;
                    g[at] ^= 0x10;
                    const bool ignored = v6 ? at == l3 + 7 : (at == l3 + 8 || at == l3 + 10 || at == l3 + 11);
                    for (const bool same_burst : {false, true})
                        EXPECT_EQ(rig.suppresses(f, g, same_burst), ignored)
                            << "size " << size << " tags " << tags << " byte " << at << (same_burst ? " same burst" : "");
                }
            }
        }
    }
}

// The smallest frames end inside the hashed head: their hash is read in place, what
// follows them in the buffer masked off, and equals the hash of the same frame at the very
// end of its buffer (copied out). Any byte of the frame still changes it.
TEST(Dedup, HashesTheHeadOfShortFramesInPlace) {
    const KeyedHash hash = KeyedHash::random();
    for (const size_t size : {size_t(57), size_t(60), size_t(63)}) {
        const auto f = ipv4_frame(0xc6120001, 0xc6130002, 40000, 443, size);
        Burst a({f}), b({f}), at_end({f});
        at_end.mbufs[0].buf_len = uint16_t(RTE_PKTMBUF_HEADROOM + size);
        const uint64_t h = dedup_head_hash(a.ptrs[0], hash);
        EXPECT_EQ(dedup_head_hash(b.ptrs[0], hash), h) << size;
        EXPECT_EQ(dedup_head_hash(at_end.ptrs[0], hash), h) << size;
        auto g = f;
        g[size - 1] ^= 1;
        EXPECT_NE(dedup_head_hash(Burst({g}).ptrs[0], hash), h) << size;
    }
}

// A chained mbuf: the bytes of its further segments count too, whether the original is in
// the block or is itself chained in the same burst.
TEST(Dedup, ComparesEverySegment) {
    const auto frame = ipv4_frame(0xc6120001, 0xc6130002, 40000, 443, 1000);
    const auto chained = [&](uint8_t flip) {
        Burst b({std::vector<uint8_t>(frame.begin(), frame.begin() + 600),
                 std::vector<uint8_t>(frame.begin() + 600, frame.end())});
        b.mbufs[0].next = &b.mbufs[1];
        b.mbufs[0].nb_segs = 2;
        b.mbufs[0].pkt_len = 1000;
        b.buffers[1][RTE_PKTMBUF_HEADROOM + 399] ^= flip;
        b.ptrs.pop_back();  // one packet of two segments
        return b;
    };
    DedupRig rig;
    EXPECT_NE(rig.run(Burst({frame}), 1'000'000)[0], 0u);
    EXPECT_EQ(rig.run(chained(0), 1'000'001)[0], 0u) << "a chained copy of a whole original";
    EXPECT_NE(rig.run(chained(1), 1'000'002)[0], 0u) << "its last byte differs";

    // In one burst: the original, a copy, then a packet differing in its last byte only.
    DedupRig same;
    Burst all = chained(0);
    const Burst copy = chained(0), other = chained(1);
    all.ptrs.push_back(copy.ptrs[0]);
    all.ptrs.push_back(other.ptrs[0]);
    const auto keep = same.run(all, 1'000'000);
    EXPECT_NE(keep[0], 0u);
    EXPECT_EQ(keep[1], 0u);
    EXPECT_NE(keep[2], 0u);
}

TEST(Dedup, SuppressesCopiesWithinTheWindowOnly) {
    const auto a = ipv4_frame(0xc6120001, 0xc6130002, 40000, 443, 200);
    auto a_routed = a;
    a_routed[14 + 8] = 12;
    const auto b = ipv4_frame(0xc6120001, 0xc6130002, 40000, 443, 200, 17, 0xac);
    const Burst burst({a, b, a_routed, a});
    DedupRig rig;
    const auto keep = rig.run(burst, 5'000'000'000);
    EXPECT_EQ(rig.last.suppressed, 2u);
    EXPECT_EQ(rig.last.saved_bytes, 400u);
    EXPECT_EQ(keep, (std::vector<uint64_t>{262144, 262144, 0, 0}));

    // Within the window (measured from the written copy): still copies.
    rig.run(burst, 5'001'000'000);
    EXPECT_EQ(rig.last.suppressed, 4u);
    // After it: written again, once.
    const auto again = rig.run(burst, 5'001'000'001);
    EXPECT_EQ(rig.last.suppressed, 2u);
    EXPECT_NE(again[0], 0u);
    EXPECT_NE(again[1], 0u);
}

// Only a record still in its block and written whole is an original: a copy is written
// when its original's block was reused since, when the original was cut, and when its
// burst's records were never noted.
TEST(Dedup, WritesACopyWhoseOriginalIsNotThereWhole) {
    const auto a = ipv4_frame(0xc6120001, 0xc6130002, 40000, 443, 200);
    DedupRig rig;
    rig.run(Burst({a}), 1'000'000);
    rig.dedup.block_taken(rig.block);  // the worker took the block from the writer again
    EXPECT_NE(rig.run(Burst({a}), 1'000'001)[0], 0u);
    EXPECT_EQ(rig.run(Burst({a}), 1'000'002)[0], 0u) << "the copy written above is the original now";

    DedupRig cut;
    EXPECT_EQ(cut.run(Burst({a}), 1'000'000, 100)[0], 100u);
    EXPECT_NE(cut.run(Burst({a}), 1'000'001)[0], 0u);

    DedupRig forgot;
    uint64_t keep[1] = {262144}, scratch[1];
    const Burst first({a});
    apply_dedup(forgot.dedup, first.ptrs.data(), 1, keep, 1'000'000, scratch);  // never noted
    EXPECT_NE(forgot.run(Burst({a}), 1'000'001)[0], 0u);
}

// The ring holds as many records as the table has entries: an entry whose record has
// been given to a later packet names none; nor one whose block the worker took again.
TEST(Dedup, ForgetsWhatTheRingOrTheBlocksNoLongerHold) {
    DedupRig rig(1024);
    rig.dedup.next_seq = 5000;
    EXPECT_TRUE(rig.dedup.holds(4999));
    EXPECT_TRUE(rig.dedup.holds(5000 - 1024));
    EXPECT_FALSE(rig.dedup.holds(5000 - 1025));
    EXPECT_FALSE(rig.dedup.holds(1));
    WriteBlock earlier, later;
    earlier.dedup_last_seq = 4500;
    later.dedup_last_seq = 4200;  // handed back out of order: forgets nothing more
    rig.dedup.block_taken(earlier);
    rig.dedup.block_taken(later);
    EXPECT_FALSE(rig.dedup.holds(4500));
    EXPECT_TRUE(rig.dedup.holds(4501));
    EXPECT_EQ(earlier.dedup_last_seq, 0u);
}

// The policies' hashes depend on the queue's key: the same input hashes differently on
// another queue (and differently from the same words of another length).
TEST(KeyedHash, DependsOnTheKeyAndTheLength) {
    const KeyedHash a = KeyedHash::random(), b = KeyedHash::random();
    const uint64_t x = 0x0123456789abcdefull, y = 0xfedcba9876543210ull;
    EXPECT_EQ(a.finish(a.pair(0, x, y), 16), a.finish(a.pair(0, x, y), 16));
    EXPECT_NE(a.finish(a.pair(0, x, y), 16), b.finish(b.pair(0, x, y), 16));
    EXPECT_NE(a.finish(a.pair(0, x, y), 16), a.finish(a.pair(0, x, y), 17));
    EXPECT_NE(a.finish(a.pair(0, x, y), 16), a.finish(a.pair(0, y, x), 16));
    EXPECT_NE(a.finish(0, 0), 0u);
}

// The low bits pick a table's bucket: every one of them must vary (a bit forced to 1 there
// once left half the buckets unused).
TEST(KeyedHash, SpreadsOverEveryBucket) {
    const KeyedHash h = KeyedHash::random();
    std::vector<unsigned> load(1024);
    for (uint64_t s = 0; s < 32 * load.size(); ++s) load[h.finish(h.pair(0, 0xc6120000 + s, 0xc6130001), 16) % load.size()]++;
    EXPECT_EQ(std::count(load.begin(), load.end(), 0u), 0) << "buckets never used";
    EXPECT_LT(*std::max_element(load.begin(), load.end()), 80u);  // 32 on average
}

// NH in SSE2 is NH word by word, and heads that differ in one word (a counter, as in a
// flow's packets) spread over every bucket.
TEST(KeyedHash, NhIsNhWordByWordAndSpreads) {
    const KeyedHash h = KeyedHash::random();
    std::mt19937_64 random(7);
    const auto nh = [&](const uint8_t (&b)[64]) {
        const auto piece = [&](unsigned k) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 * k)); };
        return h.nh(piece(0), piece(1), piece(2), piece(3));
    };
    for (int n = 0; n < 1000; ++n) {
        uint8_t bytes[64];
        for (auto& b : bytes) b = uint8_t(random() >> (n % 56));  // some inputs mostly 0 bytes
        EXPECT_EQ(nh(bytes), h.nh_reference(bytes));
    }
    std::vector<unsigned> load(1024);
    uint8_t head[64] = {};
    for (uint64_t s = 0; s < 32 * load.size(); ++s) {
        std::memcpy(head + 42, &s, sizeof s);
        load[h.finish(nh(head), 60) % load.size()]++;
    }
    EXPECT_EQ(std::count(load.begin(), load.end(), 0u), 0) << "buckets never used";
    EXPECT_LT(*std::max_element(load.begin(), load.end()), 80u);  // 32 on average
}

// A full bucket forgets its oldest packet (the first of equals): a free entry first.
TEST(DedupTable, ANewPacketTakesTheOldestEntry) {
    const auto oldest = [](std::array<uint64_t, 4> seq) {
        DedupTable::Bucket b{};
        for (unsigned w = 0; w < 4; ++w) b.seq[w] = seq[w];
        return DedupTable::oldest(b);
    };
    EXPECT_EQ(oldest({500, 100, 400, 300}), 1u);
    EXPECT_EQ(oldest({500, 600, 400, 300}), 3u);
    EXPECT_EQ(oldest({7, 0, 0, 9}), 1u);
    EXPECT_EQ(oldest({0, 0, 0, 0}), 0u);
    EXPECT_EQ(oldest({5, 6, 3, 3}), 2u);
}

}  // namespace
}  // namespace linecap
