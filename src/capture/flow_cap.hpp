// Per-flow caps (capture.flow_cap): once a flow has carried its allowance (bytes or
// packets, both directions), each further packet keeps only its first snaplen_after bytes
// (headers, for timing and sizes) or is not written at all.
//
// Symmetric RSS puts both directions of a flow on one rx queue, so every queue has its
// own table, filled only by the worker that polls it: no locks, no atomics. The memory is
// allocated once at start (hugepages, on the queue's NUMA socket; the capture plan sizes
// it and --print-plan shows it) and never grows: the worker allocates nothing.
//
// The table: `flows` entries in buckets of kWays (one 64-byte cache line each), indexed by
// a 64-bit hash of the direction-independent FlowKey, keyed at random per queue
// (capture/keyed_hash.hpp). An entry holds the hash itself, the flow's count so far
// (saturating at 2^32 - 1) and when it was last seen. Flows are told apart by the hash
// (63 bits vary): two flows whose keys hash alike (about one pair in 2^63 / flows) share
// one count. A flow not seen for idle_timeout starts over (aged out lazily, by the burst
// timestamp the worker already has, when it or a new flow meets its entry). A new flow
// takes its bucket's free or longest-idle entry; when all kWays are live, the least
// recently seen one is evicted (counted: flow_cap_evicted_flows) and starts over if it
// comes back — a full table keeps more than the cap, never less.
#pragma once

#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <cstdint>
#include <span>

#include "capture/counters.hpp"
#include "capture/keyed_hash.hpp"
#include "capture/record_copy.hpp"
#include "capture/table_bucket.hpp"
#include "filter/bpf_filter.hpp"
#include "packet/packet_keys.hpp"

namespace linecap {

// The snap length the cap's filter is compiled at: its verdict only selects packets, it
// never cuts one (that is the port's snaplen, then the cap's).
inline constexpr uint32_t kFlowCapFilterSnaplen = 262144;

struct FlowCapRule {
    uint32_t limit = 0;            // what a flow keeps in full, in bytes or packets
    bool count_bytes = true;       // false: limit counts packets
    uint32_t snaplen_after = 128;  // 0: packets past the limit are not written
    uint32_t idle_ticks = 0;       // idle timeout in FlowTable ticks
};

class FlowTable {
public:
    static constexpr unsigned kWays = kBucketWays;
    // Timestamps are kept in ticks of 2^20 ns (about 1.05 ms) in 32 bits; ages are compared
    // as signed differences, so the wrap (every 52 days) is harmless and a clock step back
    // never ages a flow out.
    static constexpr unsigned kTickShift = 20;

    // Laid out by field (capture/table_bucket.hpp): the lookup compares the four hashes at
    // once and, for a flow already there (almost every packet), updates one count and time.
    struct alignas(64) Bucket {
        uint64_t hash[kWays];       // 0: free (hashes are made non-zero)
        uint32_t count[kWays];      // bytes or packets so far, saturating
        uint32_t last_seen[kWays];  // ticks
    };
    static_assert(sizeof(Bucket) == 64, "one bucket per cache line");
    static constexpr size_t kEntryBytes = sizeof(Bucket) / kWays;  // the memory of one flow

    FlowTable() = default;
    // `buckets`: zeroed memory, a power of two of them, 64-byte aligned.
    explicit FlowTable(std::span<Bucket> buckets) : buckets_(buckets.data()), bucket_mask_(buckets.size() - 1) {}

    static uint32_t ticks(uint64_t ns) { return static_cast<uint32_t>(ns >> kTickShift); }
    // The key's words as they are (capture/keyed_hash.hpp); the IPv6 key's fifth pairs with 0.
    static uint64_t hash_key(const FlowKey& key, const KeyedHash& hash) {
        const auto& w = key.words;
        if (likely(key.size == FlowKey::kIpv4Size)) return hash.finish(hash.pair(0, w[0], w[1]), FlowKey::kIpv4Size);
        return hash.finish(hash.pair(0, w[0], w[1]) + hash.pair(2, w[2], w[3]) + hash.pair(4, w[4], 0), FlowKey::kIpv6Size);
    }

    Bucket& bucket(uint64_t hash) const { return buckets_[hash & bucket_mask_]; }
    void prefetch(uint64_t hash) const { rte_prefetch0(&bucket(hash)); }

    // Adds `amount` to the flow's count and returns the count it had before this packet.
    // `evicted` is set when a live flow had to make room.
    // A flow is in its bucket at most once (it is only added when not there). The branch on
    // "found" is taken by nearly every packet of steady traffic; only a new flow's packet
    // pays for the victim search.
    uint32_t account(uint64_t hash, uint32_t amount, uint32_t now, uint32_t idle_ticks, bool& evicted) {
        Bucket& b = bucket(hash);
        const unsigned w = find_way(b.hash, hash);
        if (likely(w != kWays)) {
            const bool idle = static_cast<int32_t>(now - b.last_seen[w]) > static_cast<int32_t>(idle_ticks);
            const uint32_t before = idle ? 0 : b.count[w];
            b.count[w] = before + std::min(amount, UINT32_MAX - before);
            b.last_seen[w] = now;
            return before;
        }
        return add(b, hash, amount, now, idle_ticks, evicted);
    }

private:
    // A flow not in its bucket takes the free entry or else the longest idle (the first of
    // equals).
    static uint32_t add(Bucket& b, uint64_t hash, uint32_t amount, uint32_t now, uint32_t idle_ticks, bool& evicted) {
        unsigned victim = 0;
        int32_t victim_rank = -1;
        for (unsigned w = 0; w < kWays; ++w) {
            const int32_t rank = b.hash[w] == 0 ? INT32_MAX : static_cast<int32_t>(now - b.last_seen[w]);
            victim = rank > victim_rank ? w : victim;
            victim_rank = rank > victim_rank ? rank : victim_rank;
        }
        evicted = b.hash[victim] != 0 && victim_rank <= static_cast<int32_t>(idle_ticks);
        b.hash[victim] = hash;
        b.count[victim] = amount;
        b.last_seen[victim] = now;
        return 0;
    }

    Bucket* buckets_ = nullptr;
    uint64_t bucket_mask_ = 0;
};

// One rx queue's cap: its table and the port's rule and filter.
struct FlowCapQueue {
    FlowTable table;
    KeyedHash hash = KeyedHash::random();
    FlowCapRule rule;
    const BpfFilter* filter = nullptr;  // null: every packet is subject to the cap
};

struct FlowCapOutcome {
    uint32_t cut = 0;
    uint32_t dropped = 0;
    uint64_t saved_bytes = 0;  // packet bytes not written (record headers not included)
    uint32_t evicted = 0;
};

// The cap over one burst. keep[i] is what the earlier stages left of packet i: 0 = not
// written, else the most bytes its record may hold (with the port's snaplen already in
// it); the cap lowers it to snaplen_after, or to 0 (drop). Two passes: keys and hashes
// first with each bucket prefetched, then the table, so the burst's cache misses overlap.
// `hashes`: room for n values (the filter's verdicts, then each packet's flow hash or 0).
// `times`: the packets' stamps (a uint64_t ns for all, BurstTime or PacketTimes).
template <class Times>
inline FlowCapOutcome apply_flow_cap(FlowCapQueue& cap, rte_mbuf* const* pkts, uint16_t n, uint64_t* keep,
                                     Times times, uint64_t* hashes) {
    const auto ts = burst_times(times);
    FlowCapOutcome out;
    if (cap.filter != nullptr) cap.filter->run(pkts, n, hashes);
    for (uint16_t i = 0; i < n; ++i) {
        if (i + kAppendPrefetch < n) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + kAppendPrefetch], void*));
        const bool subject = keep[i] != 0 && (cap.filter == nullptr || hashes[i] != 0);
        hashes[i] = 0;
        if (!subject) continue;
        const rte_mbuf* m = pkts[i];
        FlowKey key;
        if (!flow_key(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len, key)) continue;
        hashes[i] = FlowTable::hash_key(key, cap.hash);
        cap.table.prefetch(hashes[i]);
    }
    const FlowCapRule& rule = cap.rule;
    for (uint16_t i = 0; i < n; ++i) {
        if (hashes[i] == 0) continue;
        const uint32_t now = FlowTable::ticks(ts[i]);
        const uint32_t len = pkts[i]->pkt_len;
        bool evicted = false;
        const uint32_t before = cap.table.account(hashes[i], rule.count_bytes ? len : 1, now, rule.idle_ticks, evicted);
        out.evicted += evicted;
        if (before < rule.limit) continue;
        const uint64_t would_write = std::min<uint64_t>(len, keep[i]);
        if (rule.snaplen_after == 0) {
            keep[i] = 0;
            out.dropped += 1;
            out.saved_bytes += would_write;
        } else if (would_write > rule.snaplen_after) {
            keep[i] = rule.snaplen_after;
            out.cut += 1;
            out.saved_bytes += would_write - rule.snaplen_after;
        }
    }
    return out;
}

}  // namespace linecap
