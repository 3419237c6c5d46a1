// Duplicate suppression (capture.dedup): a packet equal to one written from the same rx
// queue within the window — ignoring the fields routers change on the way, the IPv4 TTL
// and header checksum and the IPv6 hop limit — is counted and not written. SPAN ports and
// packet brokers deliver such copies, often within microseconds.
//
// Equal means equal: a candidate is compared byte for byte with the original's record in
// the queue's write block, so no packet that is not a copy is ever suppressed, whatever
// its bytes (a hash alone could be made to collide by whoever chooses the packets, and
// hiding a packet from the record is what an intruder would want). What finds candidates
// is cheap and reads only the head: each queue remembers its recent packets in a fixed
// table filled only by its worker (no locks, nothing allocated after start; hugepages
// sized by the capture plan), `entries` slots in buckets of kWays (one 64-byte cache
// line), each holding a 64-bit keyed hash of the packet's masked first kDedupHeadBytes
// and its length (dedup_head_hash), and the packet's sequence number on the queue. The
// sequence number names the packet's DedupRecord in a ring of as many: where its bytes
// are (its record's packet data, while its block is not reused) and when it was written.
// The head holds the addresses, ports, IP identification and TCP sequence numbers, so
// for anything but a copy a candidate is rare, and comparing costs only the candidates.
//
// What lets a copy through (it is written, as without dedup), never the reverse: a full
// bucket forgets its oldest packet, and the ring its oldest record, so a table too small
// for the traffic of one window misses copies; a different packet with the same head
// replaces its bucket's entry; an original not written whole (cut by the snap length or
// the flow cap, dropped by the flow cap or for want of a block, longer than 65535 bytes)
// leaves nothing to compare with, nor one whose block the worker has taken again.
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

#include "capture/keyed_hash.hpp"
#include "capture/policy.hpp"
#include "capture/record_copy.hpp"
#include "capture/table_bucket.hpp"
#include "output/block.hpp"
#include "packet/packet_keys.hpp"

namespace linecap {

class DedupTable {
public:
    static constexpr unsigned kWays = kBucketWays;

    // Laid out by field (capture/table_bucket.hpp): the four hashes compared at once.
    struct alignas(64) Bucket {
        uint64_t hash[kWays];  // 0: free (hashes are made non-zero)
        uint64_t seq[kWays];   // the packet's sequence number on the queue (its DedupRecord)
    };
    static_assert(sizeof(Bucket) == 64, "one bucket per cache line");

    DedupTable() = default;
    // `buckets`: zeroed memory, a power of two of them, 64-byte aligned.
    explicit DedupTable(std::span<Bucket> buckets) : buckets_(buckets.data()), bucket_mask_(buckets.size() - 1) {}

    Bucket& bucket(uint64_t hash) const { return buckets_[hash & bucket_mask_]; }
    void prefetch(uint64_t hash) const { rte_prefetch0(&bucket(hash)); }

    // The way of `b` a new packet takes: the oldest (free entries have sequence number 0),
    // the first of equals. A tournament of two pairs in arithmetic, because which way is
    // oldest is data and the compiler turned selects into branches. Sequence numbers are
    // below 2^63, so the sign of a difference says which is older: all ones when y is.
    static unsigned oldest(const Bucket& b) {
        static_assert(kWays == 4);
        const auto older = [](uint64_t x, uint64_t y) { return static_cast<uint64_t>(static_cast<int64_t>(y - x) >> 63); };
        const uint64_t s0 = b.seq[0], s1 = b.seq[1], s2 = b.seq[2], s3 = b.seq[3];
        const uint64_t pick01 = older(s0, s1), pick23 = older(s2, s3);
        const uint64_t pick = older(s0 + ((s1 - s0) & pick01), s2 + ((s3 - s2) & pick23));
        const uint64_t first = pick01 & 1, second = 2 + (pick23 & 1);
        return static_cast<unsigned>(first ^ ((first ^ second) & pick));
    }

private:
    Bucket* buckets_ = nullptr;
    uint64_t bucket_mask_ = 0;
};

// Where a remembered packet's bytes can be compared with a candidate copy's: its record's
// packet data in the queue's write block, and when it was written. 16 bytes, because the
// worker writes one per packet it writes: the address (below 2^47 in user space) and the
// length (up to 65535; longer packets are not remembered) share one word.
struct DedupRecord {
    static constexpr unsigned kLenShift = 48;
    uint64_t where = 0;  // bytes | len << kLenShift; 0: nothing to compare with
    uint64_t ts_ns = 0;

    static uint64_t pack(const uint8_t* bytes, uint32_t len) {
        const auto address = reinterpret_cast<uintptr_t>(bytes);
        return len <= UINT16_MAX && address >> kLenShift == 0 ? address | uint64_t{len} << kLenShift : 0;
    }
    const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(where & ((uint64_t{1} << kLenShift) - 1)); }
    uint32_t len() const { return static_cast<uint32_t>(where >> kLenShift); }
};
static_assert(sizeof(DedupRecord) == 16);

// The leading bytes dedup hashes and masks: the fields it ignores lie within them
// (Ethernet, up to 4 VLAN tags, the IPv4 header up to its checksum: at most 42 bytes;
// the IPv6 hop limit: 38).
inline constexpr uint32_t kDedupHeadBytes = 64;

namespace dedup_detail {

// One byte mask of the head per place the ignored fields can be: nothing (not IP), the
// IPv4 TTL and header checksum, or the IPv6 hop limit, each after 0..kMaxVlanTags tags;
// all ones elsewhere. The head is copied through its mask in 16-byte pieces: no byte
// store into memory the hash then reads in 8-byte words (each such read would wait for
// the stores to reach the cache, a store-forwarding stall).
struct HeadMasks {
    static constexpr unsigned kPlaces = kMaxVlanTags + 1;
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

// The head's bytes a mask can clear lie in [kMaskedFrom, kMaskedTo), its middle 16-byte
// pieces: the IPv6 hop limit without tags is byte 21, the IPv4 checksum behind four tags
// ends at byte 41. The first and last pieces are hashed with no mask to load.
inline constexpr uint32_t kMaskedFrom = 16, kMaskedTo = 48;
consteval bool masks_only_the_middle() {
    for (const auto& kind : kHeadMasks.bytes)
        for (const auto& place : kind)
            for (unsigned k = 0; k < kDedupHeadBytes; ++k)
                if ((k < kMaskedFrom || k >= kMaskedTo) && place[k] != 0xff) return false;
    return true;
}
static_assert(masks_only_the_middle());

// The mask of the head of a packet whose first segment is `data`, `len` bytes.
inline const uint8_t* head_mask(const uint8_t* data, uint32_t len) {
    uint16_t type = 0;
    uint32_t l3 = 14;
    unsigned kind = 0;  // what the head masks: nothing, IPv4 fields, IPv6 hop limit
    if (link_layer(data, len, type, l3))
        kind = type == wire::kEtherIPv4 ? 1 : type == wire::kEtherIPv6 ? 2 : 0;
    return kHeadMasks.bytes[kind][(l3 - 14) / 4];  // link_layer: <= kMaxVlanTags tags
}

// Whether the first n bytes (at most the head) of a and b are the same but for those the
// mask clears: in 8-byte words, the last one overlapping the one before it when n is not a
// multiple of 8 (a byte compared twice changes nothing).
inline bool same_head(const uint8_t* a, const uint8_t* b, const uint8_t* mask, uint32_t n) {
    using wire::load64;
    if (n < 8) {
        uint8_t differs = 0;
        for (uint32_t k = 0; k < n; ++k) differs |= (a[k] ^ b[k]) & mask[k];
        return differs == 0;
    }
    const auto differs = [&](uint32_t at) { return (load64(a + at) ^ load64(b + at)) & load64(mask + at); };
    uint64_t any = differs(n - 8);
    for (uint32_t at = 0; at + 8 <= n; at += 8) any |= differs(at);
    return any == 0;
}

// 16 bytes read from kFirstBytes + 16 - j keep the first j bytes of a piece and clear the
// rest.
alignas(16) inline constexpr uint8_t kFirstBytes[32] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                                        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

}  // namespace dedup_detail

// The hash dedup files a packet under: its first kDedupHeadBytes (of the first segment)
// with TTL / hop limit and the IPv4 header checksum zeroed, and its length; the masked
// head goes straight into the keyed hash (capture/keyed_hash.hpp: NH) in four 16-byte
// pieces, no copy of it. Only finds candidates: same_packet decides.
//
// Bytes past the first segment's end count as 0. The smallest frames (60 bytes: 64 on the
// wire less the FCS) end inside the last piece: it is read from the mbuf's buffer, whose
// room goes on, and what lies past the frame masked off. Shorter frames, and a head at the
// very end of its buffer, are copied out first (a copy in variable-length pieces that the
// wide reads then wait for, about 20 cycles per packet: too dear for the commonest frame).
inline uint64_t dedup_head_hash(const rte_mbuf* m, const KeyedHash& hash) {
    static_assert(kDedupHeadBytes == 64 && dedup_detail::kMaskedFrom == 16 && dedup_detail::kMaskedTo == 48);
    constexpr uint32_t kLastPiece = kDedupHeadBytes - 16;
    const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
    const uint32_t first = m->data_len;
    const uint8_t* mask = dedup_detail::head_mask(data, first);
    alignas(16) uint8_t runt[kDedupHeadBytes];
    if (unlikely(first < kLastPiece || m->data_off + kDedupHeadBytes > m->buf_len)) {
        std::memset(runt, 0, sizeof runt);
        std::memcpy(runt, data, std::min(first, kDedupHeadBytes));
        data = runt;
    }
    const auto piece = [](const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
    const auto masked = [&](uint32_t at) { return _mm_and_si128(piece(data + at), piece(mask + at)); };
    // Of the last piece, its bytes before the frame's end.
    const __m128i in_frame = piece(dedup_detail::kFirstBytes + 16 - (std::clamp(first, kLastPiece, kDedupHeadBytes) - kLastPiece));
    return hash.finish(hash.nh(piece(data), masked(16), masked(32), _mm_and_si128(piece(data + kLastPiece), in_frame)), m->pkt_len);
}

// Whether `m` is the same packet as the original, `len` bytes at `bytes` (its record) or
// the mbuf `original` (earlier in the same burst): the same length and every byte the same
// but those the head's mask ignores. Contiguous packets (nearly all) are compared in one
// pass; chained mbufs in pieces of up to 256 bytes (rte_pktmbuf_read copies a piece only
// when it spans segments).
inline bool same_packet(const rte_mbuf* m, const uint8_t* bytes, const rte_mbuf* original, uint32_t len) {
    if (m->pkt_len != len || len == 0) return false;
    const uint8_t* mask = dedup_detail::head_mask(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len);
    const auto same_head_and_rest = [mask](const uint8_t* a, const uint8_t* b, uint32_t n) {
        const uint32_t head = std::min(n, kDedupHeadBytes);
        return dedup_detail::same_head(a, b, mask, head) && (n == head || std::memcmp(a + head, b + head, n - head) == 0);
    };
    if (bytes == nullptr && original->data_len == len) bytes = rte_pktmbuf_mtod(original, const uint8_t*);
    if (likely(m->data_len == len && bytes != nullptr)) return same_head_and_rest(rte_pktmbuf_mtod(m, const uint8_t*), bytes, len);

    constexpr uint32_t kPiece = 256;
    alignas(16) uint8_t ours[kPiece], theirs[kPiece];
    for (uint32_t off = 0; off < len; off += kPiece) {
        const uint32_t piece = std::min(kPiece, len - off);
        const auto* a = static_cast<const uint8_t*>(rte_pktmbuf_read(m, off, piece, ours));
        const auto* b = bytes != nullptr ? bytes + off : static_cast<const uint8_t*>(rte_pktmbuf_read(original, off, piece, theirs));
        if (off == 0 ? !same_head_and_rest(a, b, piece) : std::memcmp(a, b, piece) != 0) return false;
    }
    return true;
}

struct DedupQueue;

// What append_burst (or the worker, packet by packet) calls with dedup on for each packet
// of the burst (DedupQueue::recorder): the record of a remembered packet, where it was
// written whole (`bytes`, in `block`), else none; packet i was stamped times[i].
template <class Times>
struct DedupRecorder {
    DedupQueue& dedup;
    Times times;
    WriteBlock* block;
    void operator()(uint16_t i, const uint8_t* bytes, uint32_t caplen, const rte_mbuf* m) const;
};

// One rx queue's dedup: its table, the ring of records the table's entries name, and the
// current burst's sequence numbers until its records are written.
//
// When a record's bytes are gone: the worker fills its blocks one after another and the
// writer hands them back in that order, so when the worker takes a block again every
// record up to the last one written into that block is gone (WriteBlock::dedup_last_seq;
// valid_after only grows, so a block handed back early only forgets more).
struct DedupQueue {
    // Bytes of hugepage memory for `entries` remembered packets: the table's share of a
    // bucket and a record each.
    static constexpr size_t kEntryBytes = sizeof(DedupTable::Bucket) / DedupTable::kWays + sizeof(DedupRecord);
    static constexpr size_t memory_bytes(uint32_t entries) { return size_t{entries} * kEntryBytes; }

    DedupQueue() = default;
    // `memory`: memory_bytes(entries) zeroed bytes, 64-byte aligned; `entries` a power of
    // two of at least kMaxBurst.
    DedupQueue(void* memory, uint32_t entries, uint64_t window)
        : table({static_cast<DedupTable::Bucket*>(memory), entries / DedupTable::kWays}),
          records(reinterpret_cast<DedupRecord*>(static_cast<uint8_t*>(memory) + size_t{entries} / DedupTable::kWays *
                                                                               sizeof(DedupTable::Bucket))),
          record_mask(entries - 1),
          window_ns(window) {}

    // Whether the record of the packet with sequence number `seq` is still there: neither
    // given to a later packet by the ring nor in a block taken again since. (During
    // apply_dedup next_seq is still the burst's first: its records are not written yet.)
    bool holds(uint64_t seq) const { return seq > valid_after && next_seq - seq <= record_mask + 1; }
    // The recorder of records stamped `times` (a uint64_t ns, BurstTime or PacketTimes)
    // written into `block`.
    template <class Times>
    auto recorder(Times times, WriteBlock* block) {
        return DedupRecorder<decltype(burst_times(times))>{*this, burst_times(times), block};
    }
    // The worker took `block` from the writer again: what it held is gone.
    void block_taken(WriteBlock& block) {
        valid_after = std::max(valid_after, block.dedup_last_seq);
        block.dedup_last_seq = 0;
    }

    DedupTable table;
    KeyedHash hash = KeyedHash::random();
    DedupRecord* records = nullptr;
    uint64_t record_mask = 0;
    uint64_t window_ns = 1000000;
    uint64_t next_seq = 1;
    uint64_t valid_after = 0;
    // The burst being captured: its packets' sequence numbers (0: none), the first of them,
    // and which packet has each (a copy in the same burst is compared with that mbuf).
    uint64_t burst_first_seq = 1;
    uint64_t burst_seq[kMaxBurst]{};
    uint16_t packet_of[kMaxBurst]{};
};

struct DedupOutcome {
    uint32_t suppressed = 0;
    uint64_t saved_bytes = 0;  // packet bytes not written (record headers not included)
};

template <class Times>
inline void DedupRecorder<Times>::operator()(uint16_t i, const uint8_t* bytes, uint32_t caplen, const rte_mbuf* m) const {
    const uint64_t seq = dedup.burst_seq[i];
    if (seq == 0) return;
    const bool whole = bytes != nullptr && caplen == m->pkt_len;
    dedup.records[seq & dedup.record_mask] = DedupRecord{whole ? DedupRecord::pack(bytes, caplen) : 0, times[i]};
    if (whole) block->dedup_last_seq = seq;  // the burst's sequence numbers only grow
}

// Ends the burst's dedup. `recorded`: the recorder saw every packet of the burst (else
// none of its packets is remembered: the burst kept nothing, or was never written). Before
// the burst's mbufs are freed: until then the table names them.
inline void end_dedup_burst(DedupQueue& dedup, bool recorded) {
    if (!recorded)
        for (uint64_t seq = dedup.burst_first_seq; seq < dedup.next_seq; ++seq) dedup.records[seq & dedup.record_mask].where = 0;
    dedup.burst_first_seq = dedup.next_seq;
}

// Dedup over one burst: keep[i] as in apply_flow_cap (0 = not written); a copy's keep[i]
// becomes 0. Hashes first with each bucket prefetched, then the table, in packet order
// (a copy in the same burst as its original is found, compared with the original's mbuf).
// end_dedup_burst must follow, before the mbufs are freed. `times`: the packets' stamps (a
// uint64_t ns for all, BurstTime or PacketTimes; never going back within the queue).
template <class Times>
inline DedupOutcome apply_dedup(DedupQueue& dedup, rte_mbuf* const* pkts, uint16_t n, uint64_t* keep,
                                Times times, uint64_t* hashes) {
    const auto ts = burst_times(times);
    if (unlikely(dedup.burst_first_seq != dedup.next_seq)) end_dedup_burst(dedup, false);  // a burst never ended
    DedupOutcome out;
    for (uint16_t i = 0; i < n; ++i) {
        // The first reader of the packet's bytes after rx: fetch ahead as append_burst does.
        if (i + kAppendPrefetch < n) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + kAppendPrefetch], void*));
        hashes[i] = keep[i] == 0 ? 0 : dedup_head_hash(pkts[i], dedup.hash);
        if (hashes[i] != 0) dedup.table.prefetch(hashes[i]);
    }
    const uint64_t first = dedup.burst_first_seq;
    // In a register for the loop: through memory, each packet's number would wait for the
    // store of the one before (the table's stores might alias it).
    uint64_t next_seq = dedup.next_seq;
    for (uint16_t i = 0; i < n; ++i) {
        dedup.burst_seq[i] = 0;
        if (hashes[i] == 0) continue;
        DedupTable::Bucket& b = dedup.table.bucket(hashes[i]);
        unsigned w = find_way(b.hash, hashes[i]);
        if (w != DedupTable::kWays) {
            // A candidate: a copy when its original was written within the window and its
            // bytes are still there (or it is earlier in this burst).
            const uint64_t seq = b.seq[w];
            bool copy = false;
            if (seq >= first) {
                const rte_mbuf* original = pkts[dedup.packet_of[seq - first]];
                copy = same_packet(pkts[i], nullptr, original, original->pkt_len);
            } else if (dedup.holds(seq)) {
                const DedupRecord& r = dedup.records[seq & dedup.record_mask];
                copy = r.where != 0 && ts[i] - r.ts_ns <= dedup.window_ns && same_packet(pkts[i], r.bytes(), nullptr, r.len());
            }
            if (copy) {
                out.suppressed += 1;
                out.saved_bytes += std::min<uint64_t>(pkts[i]->pkt_len, keep[i]);
                keep[i] = 0;
                continue;
            }
            // Not a copy (or its original is gone): this packet takes the entry.
        } else {
            w = DedupTable::oldest(b);
        }
        const uint64_t seq = next_seq++;
        b.hash[w] = hashes[i];
        b.seq[w] = seq;
        dedup.burst_seq[i] = seq;
        dedup.packet_of[seq - first] = i;
    }
    dedup.next_seq = next_seq;
    return out;
}

}  // namespace linecap
