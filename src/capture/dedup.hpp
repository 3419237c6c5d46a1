// Duplicate suppression (capture.dedup): a packet equal to one written from the same rx
// queue within the window — ignoring the fields routers change on the way, the IPv4 TTL
// and header checksum and the IPv6 hop limit — is counted and not written. SPAN ports and
// packet brokers deliver such copies, often within microseconds.
//
// Each queue remembers its recent packets in a fixed table filled only by its worker (no
// locks, nothing allocated after start; hugepages sized by the capture plan): `entries`
// slots in buckets of kWays (one 64-byte cache line), each holding a 64-bit XXH3 hash of
// the packet's masked bytes and its length (dedup_hash), and when it was written.
//
// Collisions: "equal" is decided on that hash, not on the bytes (keeping every packet of
// the window to compare would cost far more memory and time). Two different packets of
// the same length are taken for copies only when their hashes agree in all 64 bits; the
// bucket index already fixes log2(entries / kWays) of them, so for the default table
// about 2^-52 per comparison, a handful of comparisons per packet: at 10 Mpps, on the
// order of one wrongly suppressed packet per thousand years. A full bucket forgets its
// oldest packet, so a table too small for the traffic of one window lets copies through
// (written, as without dedup); it never suppresses a packet that is not a copy.
//
// The window counts from the copy that was written: copies do not refresh it, so a packet
// repeated forever is written once per window.
#pragma once

#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

#include "capture/record_copy.hpp"
#include "capture/table_bucket.hpp"
#include "capture/xxh3.hpp"
#include "store/packet_keys.hpp"

namespace linecap {

class DedupTable {
public:
    static constexpr unsigned kWays = kBucketWays;

    // Laid out by field (capture/table_bucket.hpp): the four hashes compared at once, the
    // oldest of the four times found with three comparisons of values already loaded.
    struct alignas(64) Bucket {
        uint64_t hash[kWays];   // 0: free (hashes are made non-zero)
        uint64_t ts_ns[kWays];  // when the packet was written
    };
    static_assert(sizeof(Bucket) == 64, "one bucket per cache line");
    static constexpr size_t kEntryBytes = sizeof(Bucket) / kWays;  // the memory of one packet

    DedupTable() = default;
    // `buckets`: zeroed memory, a power of two of them, 64-byte aligned.
    explicit DedupTable(std::span<Bucket> buckets) : buckets_(buckets.data()), bucket_mask_(buckets.size() - 1) {}

    Bucket& bucket(uint64_t hash) const { return buckets_[hash & bucket_mask_]; }
    void prefetch(uint64_t hash) const { rte_prefetch0(&bucket(hash)); }

    // True when a packet with this hash was written within `window_ns` before `now_ns`;
    // otherwise the packet is remembered (it will be written) and false returned.
    // A hash is in its bucket at most once (it is only added when not there). Which way
    // matches and which is oldest are computed without branches (they are data); the one
    // branch is the verdict, which the caller takes anyway.
    bool seen(uint64_t hash, uint64_t now_ns, uint64_t window_ns) {
        Bucket& b = bucket(hash);
        const unsigned match = find_way(b.hash, hash);
        // The oldest (free entries are 0), the first of equals: a tournament of two pairs in
        // arithmetic, because which way is oldest is data and the compiler turned selects
        // into branches. Times are below 2^63 (until 2262), so the sign of a difference says
        // which is older: all ones when y is older than x.
        static_assert(kWays == 4);
        const auto older = [](uint64_t x, uint64_t y) { return static_cast<uint64_t>(static_cast<int64_t>(y - x) >> 63); };
        const uint64_t t0 = b.ts_ns[0], t1 = b.ts_ns[1], t2 = b.ts_ns[2], t3 = b.ts_ns[3];
        const uint64_t pick01 = older(t0, t1), pick23 = older(t2, t3);
        const uint64_t pick = older(t0 + ((t1 - t0) & pick01), t2 + ((t3 - t2) & pick23));
        const uint64_t first = pick01 & 1, second = 2 + (pick23 & 1);
        const unsigned oldest = static_cast<unsigned>(first ^ ((first ^ second) & pick));
        if (match != kWays && now_ns - b.ts_ns[match] <= window_ns) return true;
        // A new packet takes the oldest entry; the same packet outside the window (written
        // again) its own.
        const unsigned w = match != kWays ? match : oldest;
        b.hash[w] = hash;
        b.ts_ns[w] = now_ns;
        return false;
    }

private:
    Bucket* buckets_ = nullptr;
    uint64_t bucket_mask_ = 0;
};

// The leading bytes dedup masks: the fields it ignores lie within them (Ethernet, up to 4
// VLAN tags, the IPv4 header up to its checksum: at most 42 bytes; the IPv6 hop limit: 38).
inline constexpr uint32_t kDedupHeadBytes = 64;

namespace dedup_detail {

// One byte mask of the head per place the ignored fields can be: nothing (not IP), the
// IPv4 TTL and header checksum, or the IPv6 hop limit, each after 0..kMaxVlanTags tags;
// all ones elsewhere. The head is copied through its mask in 16-byte pieces: no byte
// store into memory the hash then reads in 8-byte words (each such read would wait for
// the stores to reach the cache, a store-forwarding stall).
struct HeadMasks {
    static constexpr unsigned kPlaces = store::kMaxVlanTags + 1;
    alignas(64) uint8_t bytes[3][kPlaces][kDedupHeadBytes];
};

consteval HeadMasks make_head_masks() {
    HeadMasks m{};
    for (unsigned kind = 0; kind < 3; ++kind)
        for (unsigned tags = 0; tags < HeadMasks::kPlaces; ++tags) {
            uint8_t* b = m.bytes[kind][tags];
            for (unsigned k = 0; k < kDedupHeadBytes; ++k) b[k] = 0xff;
            const unsigned l3 = 14 + 4 * tags;
            if (kind == 1) b[l3 + 8] = b[l3 + 10] = b[l3 + 11] = 0;  // TTL, header checksum
            if (kind == 2) b[l3 + 7] = 0;                             // hop limit
        }
    return m;
}
inline constexpr HeadMasks kHeadMasks = make_head_masks();

}  // namespace dedup_detail

// The hash of a packet as dedup compares it: its bytes with TTL / hop limit and the IPv4
// header checksum zeroed, and its length. The bytes after the first kDedupHeadBytes are
// hashed where they lie (XXH3; a chained mbuf's further segments each seeded with the
// hash so far); the head, masked, is hashed seeded with that and the length. Never 0.
inline uint64_t dedup_hash(const rte_mbuf* m) {
    const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
    const uint32_t first = m->data_len;
    const uint32_t head_len = std::min(first, kDedupHeadBytes);

    uint64_t rest = 0;
    if (first > head_len) rest = xxh3_64(data + head_len, first - head_len);
    for (const rte_mbuf* seg = m->next; seg != nullptr; seg = seg->next)
        rest = xxh3_64(rte_pktmbuf_mtod(seg, const uint8_t*), seg->data_len, rest);

    uint16_t type = 0;
    uint32_t l3 = 14;
    unsigned kind = 0;  // what the head masks: nothing, IPv4 fields, IPv6 hop limit
    if (store::link_layer(data, first, type, l3))
        kind = type == store::wire::kEtherIPv4 ? 1 : type == store::wire::kEtherIPv6 ? 2 : 0;
    const uint8_t* mask = dedup_detail::kHeadMasks.bytes[kind][(l3 - 14) / 4];  // link_layer: <= kMaxVlanTags tags
    alignas(16) uint8_t head[kDedupHeadBytes];
    if (likely(head_len == kDedupHeadBytes)) {
        for (unsigned k = 0; k < kDedupHeadBytes; ++k) head[k] = data[k] & mask[k];
        return xxh3_64(head, kDedupHeadBytes, rest ^ m->pkt_len) | 1;  // a constant length: XXH3's path inlined
    }
    // A runt: what it has of the fields is masked.
    std::memset(head, 0, sizeof head);
    std::memcpy(head, data, head_len);
    for (unsigned k = 0; k < kDedupHeadBytes; ++k) head[k] &= mask[k];
    return xxh3_64(head, head_len, rest ^ m->pkt_len) | 1;
}

struct DedupQueue {
    DedupTable table;
    uint64_t window_ns = 1000000;
};

struct DedupOutcome {
    uint32_t suppressed = 0;
    uint64_t saved_bytes = 0;  // packet bytes not written (record headers not included)
};

// Dedup over one burst: keep[i] as in apply_flow_cap (0 = not written); a copy's keep[i]
// becomes 0. Hashes first with each bucket prefetched, then the table, in packet order
// (a copy in the same burst as its original is found).
inline DedupOutcome apply_dedup(DedupQueue& dedup, rte_mbuf* const* pkts, uint16_t n, uint64_t* keep,
                                uint64_t ts_ns, uint64_t* hashes) {
    DedupOutcome out;
    for (uint16_t i = 0; i < n; ++i) {
        // The first reader of the packet's bytes after rx: fetch ahead as append_burst does.
        if (i + kAppendPrefetch < n) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + kAppendPrefetch], void*));
        hashes[i] = keep[i] == 0 ? 0 : dedup_hash(pkts[i]);
        if (hashes[i] != 0) dedup.table.prefetch(hashes[i]);
    }
    for (uint16_t i = 0; i < n; ++i) {
        if (hashes[i] == 0 || !dedup.table.seen(hashes[i], ts_ns, dedup.window_ns)) continue;
        out.suppressed += 1;
        out.saved_bytes += std::min<uint64_t>(pkts[i]->pkt_len, keep[i]);
        keep[i] = 0;
    }
    return out;
}

}  // namespace linecap
