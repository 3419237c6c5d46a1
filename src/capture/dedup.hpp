// Duplicate suppression (capture.dedup): a packet equal to one written from the same rx
// queue within the window — ignoring the fields routers change on the way, the IPv4 TTL
// and header checksum and the IPv6 hop limit — is counted and not written. SPAN ports and
// packet brokers deliver such copies, often within microseconds.
//
// Each queue remembers its recent packets in a fixed table filled only by its worker (no
// locks, nothing allocated after start; hugepages sized by the capture plan): `entries`
// slots in buckets of kWays (one 64-byte cache line), each holding a 64-bit XXH3 hash of
// the packet's masked bytes seeded with its length, and when it was written.
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

#include "capture/xxh3.hpp"
#include "store/packet_keys.hpp"

namespace linecap {

class DedupTable {
public:
    static constexpr unsigned kWays = 4;

    struct alignas(16) Entry {
        uint64_t hash = 0;   // 0: free (hashes are made non-zero)
        uint64_t ts_ns = 0;  // when the packet was written
    };
    static_assert(sizeof(Entry) * kWays == 64, "one bucket per cache line");

    DedupTable() = default;
    // `entries`: zeroed memory, a power of two of at least kWays entries, 64-byte aligned.
    explicit DedupTable(std::span<Entry> entries) : entries_(entries.data()), bucket_mask_(entries.size() / kWays - 1) {}

    Entry* bucket(uint64_t hash) const { return entries_ + (hash & bucket_mask_) * kWays; }
    void prefetch(uint64_t hash) const { rte_prefetch0(bucket(hash)); }

    // True when a packet with this hash was written within `window_ns` before `now_ns`;
    // otherwise the packet is remembered (it will be written) and false returned.
    bool seen(uint64_t hash, uint64_t now_ns, uint64_t window_ns) {
        Entry* b = bucket(hash);
        Entry* oldest = b;
        for (unsigned w = 0; w < kWays; ++w) {
            Entry& e = b[w];
            if (e.hash == hash && now_ns - e.ts_ns <= window_ns) return true;
            if (e.ts_ns < oldest->ts_ns) oldest = &e;
            if (e.hash == hash) {  // the same packet, outside the window: written again
                oldest = &e;
                break;
            }
        }
        *oldest = Entry{hash, now_ns};
        return false;
    }

private:
    Entry* entries_ = nullptr;
    uint64_t bucket_mask_ = 0;
};

// How many leading bytes are copied, masked and hashed in one piece: the headers whose
// TTL / hop limit and checksum are zeroed lie within them (Ethernet, 4 VLAN tags, the IPv4
// header up to its checksum: 42 bytes), and a packet up to this size takes one XXH3 call.
inline constexpr uint32_t kDedupHeadBytes = 256;

// The hash of a packet as dedup compares it: its bytes with TTL / hop limit and the IPv4
// header checksum zeroed, seeded with its length, never 0. Walks a chained mbuf.
inline uint64_t dedup_hash(const rte_mbuf* m) {
    const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
    const uint32_t first = m->data_len;
    const uint32_t head_len = std::min(first, kDedupHeadBytes);
    uint8_t head[kDedupHeadBytes];
    std::memcpy(head, data, head_len);
    uint16_t type = 0;
    uint32_t l3 = 0;
    if (store::link_layer(head, head_len, type, l3)) {
        if (type == 0x0800 && l3 + 12 <= head_len) {
            head[l3 + 8] = 0;   // TTL
            head[l3 + 10] = 0;  // header checksum
            head[l3 + 11] = 0;
        } else if (type == 0x86dd && l3 + 8 <= head_len) {
            head[l3 + 7] = 0;   // hop limit
        }
    }
    uint64_t h = XXH3_64bits_withSeed(head, head_len, m->pkt_len);
    if (first > head_len) h = XXH3_64bits_withSeed(data + head_len, first - head_len, h);
    for (const rte_mbuf* seg = m->next; seg != nullptr; seg = seg->next)
        h = XXH3_64bits_withSeed(rte_pktmbuf_mtod(seg, const uint8_t*), seg->data_len, h);
    return h | 1;
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
